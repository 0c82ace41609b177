"""Regrouping a tile copied in elements smaller than cp.async's 4 bytes
into 16-byte chunks.

A thread that copies one ``f16`` cannot issue a 2-byte cp.async (there is
none); but where the tile's rows are contiguous in both memories, the
eight threads that copy one 16-byte run can leave it to one of them. The
*leader* of a run is the copy whose shared address is a multiple of 16; it
issues ``cp.async.cg [s], [g], 16`` from its own addresses, and the others
issue nothing. That copies the same bytes as the original exactly when, at
one trip, over the whole block (`regroup` checks it by evaluating every
copy's addresses for every thread of the launch, with the staging
analysis's polynomials):

- each copy writes its own shared bytes (no two copies the same element);
- for every copy at shared offset ``s``, the copy at ``s - s mod 16`` exists
  and reads ``s mod 16`` bytes before it in global memory, with the same
  terms otherwise (same row: same coefficients of ``K``, of ``ctaid``...);
- every run is complete (all 16 bytes are copied);
- the trip's stride is a multiple of 16 bytes (a run aligned at trip 0 stays
  aligned).

Whether the leaders' global addresses are 16-byte aligned depends on the
arguments (the row pitch ``2 * K`` of an ``f16`` matrix is a multiple of 16
only when ``K`` is a multiple of 8), so the rewrite tests it at run time,
once before the loop for the whole block (``bar.red.and.pred``), and falls
back to the original element copies, synchronous, when it does not hold.
"""

from __future__ import annotations

from tolk_lint.fix.outcome import NotFixableError

CHUNK = 16


def regroup(kernel, pairs: list[tuple], elem_bytes: int, buffer: str) -> None:
    """Check that the element copies ``pairs`` (IR load, IR store) of
    ``buffer`` regroup into 16-byte runs (see the module docstring)."""
    from tolk_lint.analysis.stage.index import IndexEval, launch_block, thread_env
    from tolk_lint.analysis.stage.polynomials import Unstageable, lazy_numpy, tf_eval

    np = lazy_numpy()
    block, _ = launch_block(kernel)
    if block is None:
        raise NotFixableError("the launch's block shape is not known, so the copies cannot be regrouped "
                              "into 16-byte chunks (pass --block)")  # fmt: skip
    ev = IndexEval(kernel, block)
    env = thread_env(block)
    n = block[0] * block[1] * block[2]
    where: dict[int, tuple] = {}  # shared offset -> (global terms, global constant)
    try:
        for ld, st in pairs:
            s_poly = ev.poly(st.args[0])
            g_poly = ev.poly(ld.args[0])
            base = ("addr:" + buffer,)
            if set(s_poly) - {base, ()} or s_poly.get(base) != ("c", 1):
                raise NotFixableError(f"the shared address of the copy at line {st.span.line} is not the array "
                                      "plus a function of the thread")  # fmt: skip
            s = np.broadcast_to(np.asarray(tf_eval(s_poly.get((), ("c", 0)), env), dtype="int64"), (n,))
            terms = {}
            for m, coef in g_poly.items():
                vals = np.broadcast_to(np.asarray(tf_eval(coef, env), dtype="int64"), (n,))
                if any(a.startswith("trip:") for a in m):
                    if len(set(vals.tolist())) != 1 or int(vals[0]) % CHUNK:
                        raise NotFixableError(f"the copy at line {st.span.line} moves by a stride that is not a "
                                              "multiple of 16 bytes from one trip to the next")  # fmt: skip
                    continue
                terms[m] = vals
            const = terms.pop((), np.zeros(n, dtype="int64"))
            keys = sorted(terms)
            for t in range(n):
                off = int(s[t])
                if off in where:
                    raise NotFixableError(f"two copies write byte {off} of `{buffer}`")
                where[off] = (tuple(int(terms[k][t]) for k in keys), int(const[t]), tuple(keys))
    except Unstageable as e:
        raise NotFixableError(f"the copies' addresses cannot be read as functions of the thread: {e}") from None
    for off, (row, const, keys) in where.items():
        lead = off - off % CHUNK
        got = where.get(lead)
        if got is None or got[0] != row or got[2] != keys or got[1] != const - off % CHUNK:
            raise NotFixableError(f"the tile's rows are not contiguous 16-byte runs in both memories (byte {off} "
                                  f"of `{buffer}`), so its {elem_bytes}-byte elements cannot be copied in chunks")  # fmt: skip
        if off % CHUNK == 0:
            for j in range(elem_bytes, CHUNK, elem_bytes):
                if off + j not in where:
                    raise NotFixableError(f"the 16 bytes from byte {off} of `{buffer}` are not all copied")
