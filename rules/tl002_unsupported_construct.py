"""TL002 unsupported-construct

Something the IR does not model, so the analyses are conservative there.

## What it does
Reports, once per kernel and construct, an instruction or a Python construct
that tolk-lint reads as an opaque operation: its results are taken to differ
between threads and it may write any memory. The message names the construct,
why it is not modelled and what is assumed in its place (`zip` over a
generator: "its trip count and its elements are treated as varying and
unknown"). Much of Numba is modelled and is not reported: `math`, `cmath`,
`cuda.fp16` and `cuda.libdevice` calls, loops over arrays, `enumerate` and
`zip`, stepped slices, tuple unpacking, record fields (docs/ir.md).

## Why is this bad?
It is not a bug in the kernel. It says where the analysis stopped being
precise: a diagnostic further on may be a false positive caused by it, and a
real bug behind it may be out of reach.

## Example
```python
@cuda.jit
def k(a):
    exec("a[0] = 1")  # not understood
```

## How to fix
Nothing to fix in the kernel. Silence it with `tolk: noqa: TL002` on the line,
or ignore TL002 in the configuration.

## Fix safety
No fix.

## See also
docs/ir.md#what-the-ir-does-not-model: what an opaque operation is and how the
analyses treat it.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, Valid


class UnsupportedConstruct(Rule):
    code = "TL002"
    name = "unsupported-construct"
    severity = Severity.WARNING
    engine_rule = True

    VALID = [
        Valid("python", """
            from numba import cuda

            @cuda.jit
            def k(a):  # expect-clean
                a[cuda.grid(1)] = 1.0
        """),
    ]
    INVALID = [
        Invalid("ptx", """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry k()
            {
                .reg .b32 %r<2>;
                frobnicate.b32 %r1, %r0; // expect: TL002
                ret;
            }
        """),
    ]
