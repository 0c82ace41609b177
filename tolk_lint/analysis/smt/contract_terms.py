"""A launch as solver terms: what TL205's contract says of the block
dimensions, what the launch says of the grid, and what the launch's arguments fix of the kernel's parameters
(`tolk_lint.launch.arguments`), for the encoders to assume when a kernel is
linted under it. What it may import: nothing of the analyses (it reads the
contract's and the facts' fields)."""

from __future__ import annotations


def grid_constraints(z3, nctaid: list, grid) -> list:
    """What the launch says of the grid (``grid``: each dimension's (lo, hi)
    blocks, `tolk_lint.launch.shapes.GridRange`; None: any) on ``nctaid``."""
    if grid is None:
        return []
    return [c for d in range(3) for c in (z3.UGE(nctaid[d], grid[d][0]), z3.ULE(nctaid[d], grid[d][1]))]


def contract_constraints(z3, ntid: list, contract) -> list:
    """A launch contract (`tolk_lint.launch.shapes.Contract`) on the block
    dimensions ``ntid``: each within its bound (a bound of 1 is exact), the
    threads within theirs, ``blockDim.x`` a power of two or a multiple of
    the warp size (32) when it says so, and each at least its ``least``
    (a host launch's box bounded from below)."""
    out = []
    for d in range(3):
        bound, least = contract.dims[d], contract.least[d]
        if least == bound:  # an equation the solver substitutes (FDTD3d's blockDim.x = 32)
            out.append(ntid[d] == bound)
            continue
        out.append(z3.ULE(ntid[d], bound))
        if least > 1:
            out.append(z3.UGE(ntid[d], least))
    if contract.threads < contract.dims[0] * contract.dims[1] * contract.dims[2]:
        wide = [z3.ZeroExt(32, n) for n in ntid]
        out.append(z3.ULE(wide[0] * wide[1] * wide[2], contract.threads))
    if contract.pow2:
        out.append(ntid[0] & (ntid[0] - 1) == 0)
    if contract.warp_multiple:  # (ntid.y and ntid.z are exactly 1: its dims say so)
        out.append(ntid[0] & 31 == 0)
    return out



def argument_constraints(z3, p, fact, param, ntid=None, param_symbol=None) -> list:
    """The parameter ``p`` (the solver's symbol for what the PARAM
    instruction ``param`` reads) in the range a launch's arguments keep it in
    (``fact``: an `arguments.ArgFact`, or None): none for a field of a
    by-value struct, or a read narrower or wider than the parameter's C++
    type; one of the values it lists, when it lists them; the block's
    dimension (``ntid``: the encoder's 32-bit ``ntid.x/y/z``) when the launch
    passes its own ``block.x``; its relation to the block and the other
    parameters (`relations.Relation`; ``param_symbol(j, bits)``: the symbol
    of parameter number j, None when it is not read at that width)."""
    # a Python int (an int64 fact) may be encoded wider: its values are the same numbers
    wider = fact is not None and fact.type.signed and p.size() > fact.type.bits and param.attrs.get("name") == fact.name
    if fact is None or "offset" in param.attrs or (p.size() != fact.type.bits and not wider):
        return []
    if fact.block_dim is not None:
        if ntid is None:
            return []
        n = ntid[fact.block_dim]
        return [p == (z3.ZeroExt(p.size() - n.size(), n) if p.size() > n.size() else z3.Extract(p.size() - 1, 0, n))]
    bits = p.size()
    lo, hi = (z3.BitVecVal(x % (1 << bits), bits) for x in (fact.lo, fact.hi))
    if fact.lo == fact.hi:
        return [p == lo]
    out = []
    if fact.relation is not None and not wider:
        out += _relation(z3, p, fact.relation, ntid, param_symbol)
    if (fact.lo, fact.hi) != (fact.type.lo, fact.type.hi):
        out.append(z3.And(p >= lo, p <= hi) if fact.type.signed else z3.And(z3.UGE(p, lo), z3.ULE(p, hi)))
    if fact.values is not None:  # what the host's checks let through (`arguments._values_of`)
        out.append(z3.Or([p == z3.BitVecVal(v % (1 << bits), bits) for v in fact.values]))
    return out


def _relation(z3, p, rel, ntid, param_symbol) -> list:
    """``p == const + sum(coeff * term)`` in ``p``'s width (C's wrapping
    arithmetic, as the bit-vectors'); nothing when a term has no symbol."""
    bits = p.size()
    total = z3.BitVecVal(rel.const % (1 << bits), bits)
    for coeff, kind, j in rel.terms:
        if kind == "ntid":
            if ntid is None:
                return []
            n = ntid[j]
            t = z3.ZeroExt(bits - n.size(), n) if bits > n.size() else z3.Extract(bits - 1, 0, n)
        else:
            t = param_symbol(j, bits) if param_symbol is not None else None
            if t is None:
                return []
        total = total + z3.BitVecVal(coeff % (1 << bits), bits) * t
    return [p == total]
