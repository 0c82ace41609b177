"""TL004 internal-error

A rule or front end failed on this file: a bug in tolk-lint, not in the kernel.

## What it does
When a rule raises while checking a kernel, the other rules go on and this
diagnostic names the rule, the kernel and the exception, instead of a
traceback ending the run.

## Why is this bad?
The failing rule checked nothing on that kernel: its bugs may be missed.

## How to fix
Report it with the file that triggers it. The traceback is logged at debug
level on the `tolk_lint` logger; to see it, lint the file from Python:

```sh
python -c 'import logging, sys, tolk_lint; logging.basicConfig(level=logging.DEBUG)
tolk_lint.lint_file(sys.argv[1])' FILE
```

(When the whole command fails instead, with `tolk-lint: error: internal
error`, set `TOLK_LINT_DEBUG=1` for the traceback.) Meanwhile, ignore the
failing rule for that file (`per-file-ignores`).

## Fix safety
No fix.

## See also
docs/cli.md#exit-status: internal errors and the exit status.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Rule


class InternalError(Rule):
    code = "TL004"
    name = "internal-error"
    severity = Severity.ERROR
    engine_rule = True
