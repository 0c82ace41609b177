"""TL001 parse-error

A file that cannot be read as PTX or Python.

## What it does
Reports a file the front end cannot parse: a syntax error in PTX or Python, a
file cut short, bytes that are not text, or a file too large to read. The
message gives the line and column and what was expected there.

## Why is this bad?
Nothing else can be checked in a file that does not parse, and `ptxas` or
Python would reject it too.

## Example
```ptx
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(
```

## How to fix
Fix the syntax at the reported position; for generated PTX, regenerate it.

## Fix safety
No fix.

## See also
docs/cli.md#exit-status: a file that does not parse makes `tolk-lint check`
exit 2.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, Valid


class ParseError(Rule):
    code = "TL001"
    name = "parse-error"
    severity = Severity.ERROR
    engine_rule = True

    VALID = [
        Valid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry ok() // expect-clean
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
            .visible .entry cut( // expect: TL001
        """),
        Invalid("python", """
            from numba import cuda

            def k(a:  # expect: TL001
        """),
    ]
