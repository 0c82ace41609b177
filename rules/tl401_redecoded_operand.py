"""TL401 redecoded-operand

On the host, an operand decoded from integer codes is decoded again at every trip of an output loop that does not read it: decode its panel once.

## What it does
Looks at host kernels (`@njit`, target `cpu`) for a sum of products with
exactly one operand decoded from integer codes (`float(q)`, `np.float32(q)`,
a cast or bitcast of a loaded integer outside any address), inside output
loops of constant bounds of which one, of two trips or more, does not read
the operand. Every trip of that loop decodes each value again. The
operand's other ranges must be its sum's, and its values
over them, the *panel*, must fit in 64 KiB, the stack of the thread that
runs the kernel. The diagnostic points at the line of the decode and says
how many times each value is decoded and how large the panel is
(`data.redecodes`, `data.panel_bytes`, `data.panel_shape`).

## Why is this bad?
Decoding costs a conversion (and often a scale) per value; a product of an
`M x K` matrix with a decoded `K x N` one decodes each of the `K x N` values
`M` times instead of once. Packed panels are how BLIS reuses one operand
across the rows of the other (Low et al., "Analytical Modeling is Enough for
High Performance BLIS", ACM TOMS, section 4.3.2).

## Example
```python
for i in range(M):
    for j in range(N):
        acc = 0.0
        for k in range(K):
            acc += A[i, k] * (float(Bq[k, j]) * scale[j])
        C[i, j] = acc
```

## How to fix
Put the loops the operand reads outside (here `j`), decode its values over
the sum's range into a buffer once per trip of them, and read the buffer in
the other loops:
```python
panel = np.empty(K, dtype=np.float32)
for j in range(N):
    for k in range(K):
        panel[k] = np.float32(Bq[k, j]) * scale[j]
    for i in range(M):
        acc = np.float32(0.0)
        for k in range(K):
            acc += A[i, k] * panel[k]
        C[i, j] = acc
```
Moving values never rounds them and the output trips are independent, so the
staged kernel computes the same bits.

## Fix safety
No automatic fix yet.

## See also
docs/analyses.md#decoded-panels-on-the-host: decoded operands and panels.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Invalid, Rule, Valid


def _bytes(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def _loop_name(lp) -> str:
    from tolk_lint.analysis.stage import loop_line

    line = loop_line(lp)
    return f"the loop at line {line}" if line else f"loop {lp.header.name}"


class RedecodedOperand(Rule):
    code = "TL401"
    name = "redecoded-operand"
    analyses = ("tolk_lint.analysis.stage",)
    severity = Severity.INFO

    def check(self, ctx):
        from tolk_lint.analysis.stage import loop_trips

        if not ctx.target.is_host:
            return
        for v in ctx.staging().decodes:
            if not v.stageable:
                continue
            others = ", ".join(f"{_loop_name(lp)} ({loop_trips(lp)} trips)" for lp in v.others)
            reading = ", ".join(_loop_name(lp) for lp in v.reading) or "the kernel"
            msg = (
                f"`{v.operand}` is decoded from integer codes at every trip of {others}, which does not read it: "
                f"each value is decoded {v.redecodes} times; decode its panel "
                f"({'×'.join(map(str, v.panel_shape))} values, {_bytes(v.panel_bytes)}) once per trip of "
                f"{reading} and read it back"
            )
            data = {
                "redecodes": v.redecodes,
                "panel_shape": list(v.panel_shape),
                "panel_bytes": v.panel_bytes,
                "operand": v.operand,
            }
            yield self.diagnostic(v.decode, msg, kernel=ctx.kernel, data=data)

    VALID = [
        Valid(
            "python",
            """
            import numpy as np
            from numba import njit

            M = 64
            N = 128
            K = 256


            @njit
            def matmul_int8_panel(A, Bq, scale, C):  # expect-clean
                panel = np.empty(K, dtype=np.float32)
                for j in range(N):
                    for k in range(K):
                        panel[k] = np.float32(Bq[k, j]) * scale[j]
                    for i in range(M):
                        acc = np.float32(0.0)
                        for k in range(K):
                            acc += A[i, k] * panel[k]
                        C[i, j] = acc
            """,
            title="the panel is decoded once per column",
        ),
        Valid(
            "python",
            """
            from numba import njit


            @njit
            def matmul_int8_rows(A, Bq, scale, C, M, N, K):  # expect-clean
                for i in range(M):
                    for j in range(N):
                        acc = 0.0
                        for k in range(K):
                            acc += A[i, k] * (float(Bq[k, j]) * scale[j])
                        C[i, j] = acc
            """,
            title="output loops without constant bounds: the panel's reuse is unknown",
        ),
    ]
    INVALID = [
        Invalid(
            "python",
            """
            from numba import njit

            M = 64
            N = 128
            K = 256


            @njit
            def matmul_int8(A, Bq, scale, C):
                for i in range(M):
                    for j in range(N):
                        acc = 0.0
                        for k in range(K):
                            acc += A[i, k] * (float(Bq[k, j]) * scale[j])  # expect: TL401
                        C[i, j] = acc
            """,
        ),
    ]
