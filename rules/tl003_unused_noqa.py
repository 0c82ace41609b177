"""TL003 unused-noqa

A `tolk: noqa` comment that suppresses nothing, or names codes that did not fire.

## What it does
Checks every line-level `# tolk: noqa` / `// tolk: noqa` directive of a file
after all rules have run, and reports one that suppressed no diagnostic, or
that names codes that are unused (the rule ran and found nothing on that
line), non-enabled (the rule is not selected, or is ignored for this file),
unknown (no rule has that code) or duplicated. Modelled on ruff's `RUF100`.

It only looks at files that were checked completely: after a parse error
(TL001) or an internal error (TL004) some rules did not run, so a quiet line
proves nothing. A directive that itself names `TL003` is left alone, and so
are file-level `tolk: noqa-file` exemptions and the noqa comments in the CUDA
C file a PTX file came from (that file is not the one being linted).

## Why is this bad?
A stale suppression hides the next real bug on its line: once the code is
fixed, the comment should go, or it will silence a regression without anyone
noticing.

## Example
```python
@cuda.jit
def k(a):
    a[cuda.grid(1)] = 1.0  # tolk: noqa: TL101
```

Use instead:
```python
@cuda.jit
def k(a):
    a[cuda.grid(1)] = 1.0
```

## How to fix
Delete the directive, or the codes it lists that are stale. `tolk-lint fix`
and the editor's quick fix do this.

## Fix safety
Safe: removing a comment, or codes from it, never changes what the kernel
computes; at worst a diagnostic that the comment used to hide becomes visible.

## See also
docs/suppression.md#tl003-unused-noqa: every `noqa` form, and when TL003 is
checked.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, Valid


class UnusedNoqa(Rule):
    code = "TL003"
    name = "unused-noqa"
    severity = Severity.WARNING
    fixable = True
    # reported by the suppression pass (tolk_lint/suppress.py), after every other rule
    engine_rule = True

    VALID = [
        Valid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry k() // expect-clean
            {
                ret;
            }
        """),
    ]
    INVALID = [
        Invalid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry k()
            {
                ret; // tolk: noqa: TL101 // expect: TL003
            }
        """),
        Invalid("python", """
            from numba import cuda


            @cuda.jit
            def k(a):
                a[cuda.grid(1)] = 1.0  # tolk: noqa  # expect: TL003
        """),
    ]
