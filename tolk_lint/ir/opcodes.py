"""The closed set of IR opcodes and what each one means, as tables.

Analyses never switch on opcode names scattered through their code: they ask
these tables ("is this a barrier?", "can this op's result differ between
threads by itself?", "which memory does it touch?"), the way tinygrad keeps
PTX knowledge in `asm_for_op`-style tables and LLVM asks the target's
`isSourceOfDivergence`/`isAlwaysUniform` hooks.

Operand conventions (the front ends follow them; `ir/nodes.py` documents the
attributes):

- CONST: no operands; ``attrs["value"]`` (int, float or bool).
- PARAM: no operands; ``attrs["name"]``: a kernel parameter's value.
- SPECIAL: no operands; ``attrs["name"]`` in ``SPECIAL_REGISTERS``.
- ADDR: no operands; ``attrs["buffer"]``: the address of a named buffer.
- arithmetic: operands in source order (``SUB a b`` is ``a - b``).
  ``MAD a b c`` is ``a * b + c``; ``attrs["hi"]``/``attrs["wide"]`` as in PTX.
- CMP a b: ``attrs["cmp"]`` in ``eq ne lt le gt ge`` (+ float ``lo ls hi hs
  equ neu ltu leu gtu geu num nan``), ``attrs["signed"]``, result ``pred``.
- SELECT c a b: ``c ? a : b``.
- CVT a: convert to the result type (``attrs["from_type"]`` is ``a``'s type).
- PURE a...: a pure function the IR does not model exactly (``attrs["fn"]``:
  ``popc``, ``bfe``, ``sqrt``, ...). Same operands give the same result.
- PACK a...: a vector/wide register built from parts, lowest part first.
- EXTRACT v: part ``attrs["index"]`` of a packed value.
- LOAD addr [gate]: ``attrs``: ``space``, ``dtype``, ``volatile``,
  ``buffer`` (name, when the address is known to point into one),
  ``index`` (Python: the tuple of index values). One result per vector lane.
- STORE addr value...: same attributes; no result.
- ATOMIC addr value...: ``attrs["op"]``, ``space``; returns the old value
  (``RED`` is an ATOMIC with no result).
- CP_ASYNC dst src [src_size]: ``attrs["bytes"]``, ``attrs["cache"]``.
- CP_ASYNC_COMMIT; CP_ASYNC_WAIT: ``attrs["n"]`` (``wait_all`` is ``n=0``,
  ``attrs["all"]=True``).
- BARRIER [id] [count] [pred]: ``attrs["kind"]`` (``sync``, ``arrive``,
  ``red``), ``attrs["aligned"]``; ``syncthreads_count`` style reductions
  return a value.
- WARP_SYNC mask; FENCE (``attrs["scope"]``).
- MBARRIER addr [operand]: an arrive-wait barrier object in shared memory
  (``mbarrier.*``, ``cp.async.mbarrier.arrive``); ``attrs["kind"]`` in
  ``init inval arrive arrive_drop expect_tx complete_tx test_wait try_wait
  pending_count cp_async_arrive``; ``init``'s operand is the expected count,
  ``test_wait``/``try_wait``'s the state an ``arrive`` returned (or, with
  ``attrs["parity"]``, a phase parity); ``attrs`` flag ``noinc``,
  ``has_count``, ``no_complete``, ``tx``. `tolk_lint.analysis.mbarriers`
  says which arrives order memory like a barrier.
- SHUFFLE value lane clamp mask: ``attrs["mode"]`` (``idx up down bfly``).
- VOTE pred mask: ``attrs["mode"]`` (``all any uni ballot``).
- MATCH value mask; REDUX value mask; ACTIVEMASK.
- MMA a... b... c...: ``attrs``: ``shape``, ``layouts``, ``dtypes``,
  ``kind`` (``mma`` or ``wmma``), ``counts`` (fragment lengths of a, b, c).
- WGMMA: Hopper's warpgroup MMA, run by the four warps of a warpgroup
  together; ``attrs["kind"]`` ``fence``, ``commit``, ``wait`` (``n``) or
  ``mma`` (operands: accumulators, A registers or descriptor, B descriptor,
  scale-d and immediates; ``counts`` = (accumulators, A parts); results:
  the accumulators once its group is retired).
- WMMA_LOAD addr [stride]; WMMA_STORE addr values... [stride];
  LDMATRIX addr; STMATRIX addr values...; MOVMATRIX value.
- CALL args...: ``attrs["callee"]``; results as declared.
- PHI v...: one operand per predecessor of its block, in ``block.preds`` order.
- BRANCH c: ``attrs["targets"]`` = (if_true, if_false) blocks; JUMP: one
  target; RET; EXIT (also ``trap``); UNDEF (a register read before any write).
- OPAQUE operands...: anything not modelled; ``attrs["text"]``, results
  varying, may write any memory.
"""

from __future__ import annotations

import enum


class Opcode(enum.Enum):
    # Members are singletons compared by identity, so the identity hash is
    # exact -- and a C slot, where Enum's default hashes the name in Python
    # (the analyses look opcodes up in sets and dicts millions of times).
    __hash__ = object.__hash__

    # values without operands
    CONST = "const"
    PARAM = "param"
    SPECIAL = "special"
    ADDR = "addr"
    UNDEF = "undef"
    # integer and float arithmetic
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    MAD = "mad"
    DIV = "div"
    REM = "rem"
    NEG = "neg"
    ABS = "abs"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    NOT = "not"
    SHL = "shl"
    SHR = "shr"
    CMP = "cmp"
    SELECT = "select"
    CVT = "cvt"
    PURE = "pure"
    PACK = "pack"
    EXTRACT = "extract"
    # memory
    LOAD = "load"
    STORE = "store"
    ATOMIC = "atomic"
    CP_ASYNC = "cp.async"
    CP_ASYNC_COMMIT = "cp.async.commit"
    CP_ASYNC_WAIT = "cp.async.wait"
    FENCE = "fence"
    # synchronisation and warp collectives
    BARRIER = "barrier"
    WARP_SYNC = "warp.sync"
    SHUFFLE = "shuffle"
    VOTE = "vote"
    MATCH = "match"
    REDUX = "redux"
    ACTIVEMASK = "activemask"
    MBARRIER = "mbarrier"
    # tensor cores
    MMA = "mma"
    WMMA_LOAD = "wmma.load"
    WMMA_STORE = "wmma.store"
    LDMATRIX = "ldmatrix"
    STMATRIX = "stmatrix"
    MOVMATRIX = "movmatrix"
    WGMMA = "wgmma"
    # calls and control
    CALL = "call"
    PHI = "phi"
    BRANCH = "br"
    JUMP = "jump"
    RET = "ret"
    EXIT = "exit"
    OPAQUE = "opaque"

    def __repr__(self) -> str:  # short and stable in dumps and test failures
        return f"Opcode.{self.name}"


O = Opcode

TERMINATORS = frozenset({O.BRANCH, O.JUMP, O.RET, O.EXIT})

# Pure arithmetic: the result is a function of the operands alone.
PURE_ARITHMETIC = frozenset(
    {
        O.ADD, O.SUB, O.MUL, O.MAD, O.DIV, O.REM, O.NEG, O.ABS, O.MIN, O.MAX,
        O.AND, O.OR, O.XOR, O.NOT, O.SHL, O.SHR, O.CMP, O.SELECT, O.CVT,
        O.PURE, O.PACK, O.EXTRACT, O.ADDR, O.CONST, O.PARAM,
    }
)  # fmt: skip

# A barrier that every (non-exited) thread of the workgroup must reach.
WORKGROUP_BARRIERS = frozenset({O.BARRIER})

# Ops every lane of a warp must execute together (`.sync.aligned`, `mma`),
# or that name their lanes with a mask operand.
WARP_COLLECTIVES = frozenset(
    {O.WARP_SYNC, O.SHUFFLE, O.VOTE, O.MATCH, O.REDUX, O.MMA, O.WMMA_LOAD, O.WMMA_STORE,
     O.LDMATRIX, O.STMATRIX, O.MOVMATRIX, O.WGMMA}
)  # fmt: skip

# Tensor-core ops: held to the loop rule (TL102) like barriers.
TENSOR_CORE_OPS = frozenset({O.MMA, O.WMMA_LOAD, O.WMMA_STORE, O.LDMATRIX, O.STMATRIX, O.MOVMATRIX, O.WGMMA})

# Ops the four warps of a warpgroup (128 threads) run together.
WARPGROUP_OPS = frozenset({O.WGMMA})

# Whose results differ between threads by themselves (LLVM's
# isSourceOfDivergence). SPECIAL is decided per register below.
DIVERGENCE_SOURCES = frozenset(
    {O.ATOMIC, O.SHUFFLE, O.MATCH, O.OPAQUE, O.CALL, O.MMA, O.WMMA_LOAD, O.LDMATRIX, O.MOVMATRIX, O.MBARRIER,
     O.WGMMA}
)

# Whose results are the same in every lane of a warp that runs them together
# (vote.all/any/ballot, redux, activemask): warp-uniform, workgroup-varying.
WARP_UNIFORM_RESULTS = frozenset({O.VOTE, O.REDUX, O.ACTIVEMASK})

HAS_SIDE_EFFECTS = frozenset(
    {O.STORE, O.ATOMIC, O.CP_ASYNC, O.CP_ASYNC_COMMIT, O.CP_ASYNC_WAIT, O.FENCE, O.BARRIER,
     O.WARP_SYNC, O.WMMA_STORE, O.STMATRIX, O.CALL, O.OPAQUE, O.RET, O.EXIT, O.MBARRIER, O.WGMMA}
)  # fmt: skip

MEMORY_READS = frozenset({O.LOAD, O.ATOMIC, O.CP_ASYNC, O.WMMA_LOAD, O.LDMATRIX})
MEMORY_WRITES = frozenset({O.STORE, O.ATOMIC, O.CP_ASYNC, O.WMMA_STORE, O.STMATRIX})

# Special registers: which vary between the threads of one workgroup, and
# which vary only between warps (same for all lanes of a warp).
SPECIAL_REGISTERS = {
    # name: (varies in workgroup, varies in warp)
    "tid.x": (True, True), "tid.y": (True, True), "tid.z": (True, True),
    "laneid": (True, True), "lanemask_eq": (True, True), "lanemask_lt": (True, True),
    "lanemask_le": (True, True), "lanemask_gt": (True, True), "lanemask_ge": (True, True),
    "warpid": (True, False), "smid": (True, True), "nsmid": (False, False),
    "clock": (True, True), "clock64": (True, True), "globaltimer": (True, True),
    "ntid.x": (False, False), "ntid.y": (False, False), "ntid.z": (False, False),
    "ctaid.x": (False, False), "ctaid.y": (False, False), "ctaid.z": (False, False),
    "nctaid.x": (False, False), "nctaid.y": (False, False), "nctaid.z": (False, False),
    "nwarpid": (False, False), "gridid": (False, False), "warpsize": (False, False),
    "dynamic_smem_size": (False, False), "total_smem_size": (False, False),
    "clusterid.x": (False, False), "clusterid.y": (False, False), "clusterid.z": (False, False),
    "cluster_ctarank": (False, False), "cluster_nctarank": (False, False),
}  # fmt: skip
# %envreg0..31: set by the driver for the whole launch (cooperative groups'
# grid sync reads its workspace pointer from them): one value everywhere.
SPECIAL_REGISTERS.update({f"envreg{n}": (False, False) for n in range(32)})


def special_varies(name: str, level: str = "workgroup") -> bool:
    """Whether special register ``name`` can differ between two threads of a
    workgroup (``level="workgroup"``, and ``"warpgroup"``: a warpgroup is
    several warps) or of a warp (``level="warp"``).
    Unknown registers (``%pm0``, ``%clock_hi``) are assumed to vary."""
    wg, warp = SPECIAL_REGISTERS.get(name, (True, True))
    return warp if level == "warp" else wg


# Memory spaces as the IR names them.
SPACES = ("global", "shared", "local", "const", "param", "generic", "texture", "surface", "reg")
