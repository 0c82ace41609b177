"""TL005 budget-exceeded

The analysis of a kernel stopped because its time or memory budget ran out: the kernel is not known to be clean.

## What it does
Every file is linted under a budget (`time-budget`, 30 seconds, and
`memory-budget`, 2048 MiB, by default; each kernel at most
`kernel-time-budget` of it). When an analysis is still running when the
budget runs out, it stops, and this diagnostic names the kernel, what was
being done (the race search, a solver question, ...) and which rules did not
finish or did not run. What the rules found before that is still reported.

## Why is this bad?
A kernel whose analysis did not finish may hold bugs that were not looked
for. The tool never lets such a kernel pass as clean: TL005 is an error,
cannot be ignored or suppressed, and makes `tolk-lint check` exit 2.

## How to fix
Give the analysis more room: `--time-budget SECONDS` / `--memory-budget MIB`
on the command line, or `time-budget`, `kernel-time-budget` and
`memory-budget` in `[tool.tolk-lint]`. Giving the launch shape
(`--block`, `[tool.tolk-lint.launch]`, or a `tolk: launch block=(X,Y,Z)`
comment above a Numba kernel) often makes the analysis much cheaper. In the language server the budget is
smaller (an edit must not wait long): run `tolk-lint check` on the file for
the full analysis.

## Fix safety
No fix.

## See also
docs/cli.md#budgets: the budgets, and docs/launch-shapes.md for giving the
launch shape.
"""

from tolk_lint.diagnostics import Severity
from tolk_lint.registry import Rule


class BudgetExceeded(Rule):
    code = "TL005"
    name = "budget-exceeded"
    severity = Severity.ERROR
    engine_rule = True
