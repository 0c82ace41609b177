"""The bounds on the work lowering one kernel may do: inlining depth and
size, unrolling, folded tuples. Past a bound the lowering stops copying
(a CALL, a range loop over a table, a tuple left unfolded) rather than
grow without end.

Imports: nothing.
"""

from __future__ import annotations

MAX_INLINE_DEPTH = 8
MAX_UNROLL = 16  # items of a constant-tuple loop that is unrolled
MAX_UNROLL_NEST = 64  # product of the unroll factors of nested unrolled loops
MAX_UNROLL_NODES = 4000  # syntax nodes an unrolling may copy
MAX_FOLDED_TUPLE = 1024
MAX_INLINED_NODES = 20_000  # syntax nodes one kernel may inline in all (bounds 3-way recursion)
MAX_DERIVED_DEPTH = 8  # closure variables computed from closure variables, followed (`derived_value`)
