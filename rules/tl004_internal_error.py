"""TL004 internal-error

A rule or front end failed on this file: a bug in tolk-lint, not in the kernel.

## What it does
When a rule raises while checking a kernel, the other rules go on and this
diagnostic names the rule, the kernel and the exception, instead of a
traceback ending the run.

## Why is this bad?
The failing rule checked nothing on that kernel: its bugs may be missed.

## How to fix
Report it with the file that triggers it (`tolk-lint check -v` logs the
traceback). Meanwhile, ignore the failing rule for that file.

## Fix safety
No fix.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Rule


class InternalError(Rule):
    code = "TL004"
    name = "internal-error"
    severity = Severity.ERROR
    engine_rule = True
