"""What the Numba names mean, as tables: qualified name -> IR.

Every name here is a *qualified* name (``numba.cuda.syncthreads``), whatever
alias the user imported it under (``from numba import cuda as nc``): the
finder resolves aliases before the lowering looks anything up. The lowering
(`lower.py`) dispatches on these tables; nothing else in the front end spells
a Numba, NumPy or ``math`` name.
"""

from __future__ import annotations

from tolk_lint.ir.opcodes import Opcode

CUDA = "numba.cuda."

# -- decorators ---------------------------------------------------------------

CUDA_JIT = frozenset({"numba.cuda.jit", "numba.cuda.decorators.jit"})
HOST_JIT = frozenset(
    {"numba.njit", "numba.jit", "numba.core.decorators.njit", "numba.core.decorators.jit", "numba.decorators.njit",
     "numba.decorators.jit"}
)  # fmt: skip
DECLARE_DEVICE = frozenset({"numba.cuda.declare_device"})
# ``functools.partial(cuda.jit, device=True)``: a jit decorator with options bound
PARTIAL = frozenset({"functools.partial"})
# a factory's parameter of these names, never given another value, is the module it names
# (``def make(cuda): @cuda.jit ...``: the caller hands in numba's)
MODULE_PARAMETERS = {"cuda": "numba.cuda", "numba": "numba"}

# -- values read as attributes ------------------------------------------------------

# cuda.threadIdx.x -> SPECIAL tid.x, ...
SPECIAL_GROUPS = {"threadIdx": "tid", "blockIdx": "ctaid", "blockDim": "ntid", "gridDim": "nctaid"}
AXES = ("x", "y", "z")

# numba.cuda.<name> read as a value
CUDA_VALUES = {
    "laneid": ("special", "laneid"),
    "warpsize": ("const", 32),
}

# constants of math / numpy, and Numba's configuration as a kernel compiled for a GPU sees it
# (`if config.ENABLE_CUDASIM: tpb = 4 else: tpb = 16`: the simulator runs no GPU kernels)
KNOWN_CONSTANTS = {
    "numba.config.ENABLE_CUDASIM": False,
    "numba.core.config.ENABLE_CUDASIM": False,
    "numba.cuda.core.config.ENABLE_CUDASIM": False,  # numba-cuda's own copy of the configuration
    "math.pi": 3.141592653589793,
    "math.e": 2.718281828459045,
    "math.tau": 6.283185307179586,
    "math.inf": float("inf"),
    "math.nan": float("nan"),
    "numpy.pi": 3.141592653589793,
    "numpy.e": 2.718281828459045,
    "numpy.inf": float("inf"),
    "numpy.nan": float("nan"),
    "numpy.NaN": float("nan"),
    "numpy.Inf": float("inf"),
    "numpy.newaxis": None,
}

# -- dtypes ------------------------------------------------------------------------

DTYPE_NAMES = {
    "float16": "f16", "half": "f16", "f2": "f16", "float32": "f32", "single": "f32", "f4": "f32",
    "float64": "f64", "double": "f64", "float_": "f64", "f8": "f64", "bfloat16": "bf16",
    "int8": "s8", "i1": "s8", "byte": "s8", "int16": "s16", "i2": "s16", "short": "s16",
    "int32": "s32", "i4": "s32", "intc": "s32", "int64": "s64", "i8": "s64", "intp": "s64", "int_": "s64",
    "longlong": "s64", "uint8": "u8", "u1": "u8", "ubyte": "u8", "uint16": "u16", "u2": "u16",
    "ushort": "u16", "uint32": "u32", "u4": "u32", "uintc": "u32", "uint64": "u64", "u8": "u64",
    "uintp": "u64", "ulonglong": "u64", "size_t": "u64", "ssize_t": "s64", "bool_": "u8", "boolean": "u8",
    "b1": "u8",
    "complex64": "c64", "c8": "c64", "complex128": "c128", "c16": "c128",
}  # fmt: skip
# builtins used as dtypes (np.empty(n, dtype=float))
BUILTIN_DTYPES = {"float": "f64", "int": "s64", "bool": "u8", "complex": "c128"}
DTYPE_MODULES = ("numba.", "numpy.")


def dtype_of_qual(qual: str | None) -> str | None:
    """``numba.float32`` / ``numpy.float32`` / ``numba.core.types.int32`` -> IR type."""
    if not qual:
        return None
    if qual.startswith("builtins."):
        return BUILTIN_DTYPES.get(qual[9:])
    if not qual.startswith(DTYPE_MODULES):
        return None
    return DTYPE_NAMES.get(qual.rsplit(".", 1)[-1])


def dtype_of_string(s: str) -> str | None:
    """``"float32"``, ``"f4"``, ``"<f4"`` -> IR type."""
    s = s.strip().lstrip("<>=|")
    return DTYPE_NAMES.get(s) or BUILTIN_DTYPES.get(s)


# -- calls ---------------------------------------------------------------------------

# numba.cuda.<suffix>(...) -> handler name in the lowering (``_cuda_<handler>``) and an argument
CUDA_CALLS: dict[str, tuple[str, object]] = {
    "grid": ("grid", None),
    "gridsize": ("gridsize", None),
    "shared.array": ("array", "shared"),
    "local.array": ("array", "local"),
    "const.array_like": ("const_array", None),
    "syncthreads": ("syncthreads", None),
    "syncthreads_count": ("sync_red", "popc"),
    "syncthreads_and": ("sync_red", "and"),
    "syncthreads_or": ("sync_red", "or"),
    "syncwarp": ("syncwarp", None),
    "threadfence": ("fence", "gl"),
    "threadfence_block": ("fence", "cta"),
    "threadfence_system": ("fence", "sys"),
    "cg.this_grid": ("this_grid", None),
    "shfl_sync": ("shfl", "idx"),
    "shfl_up_sync": ("shfl", "up"),
    "shfl_down_sync": ("shfl", "down"),
    "shfl_xor_sync": ("shfl", "bfly"),
    "all_sync": ("vote", "all"),
    "any_sync": ("vote", "any"),
    "eq_sync": ("vote", "uni"),
    "ballot_sync": ("vote", "ballot"),
    "match_any_sync": ("match", "any"),
    "match_all_sync": ("match", "all"),
    "activemask": ("activemask", None),
    "lanemask_lt": ("lanemask", "lanemask_lt"),
    "selp": ("selp", None),
    "fma": ("fma", None),
    "popc": ("pure", "popc"),
    "brev": ("pure", "brev"),
    "clz": ("pure", "clz"),
    "ffs": ("pure", "ffs"),
    "cbrt": ("pure", "cbrt"),
    "nanosleep": ("nothing", None),
    "is_float16_supported": ("true", None),
    "is_bfloat16_supported": ("true", None),
    "ldca": ("cache_load", "ca"),
    "ldcg": ("cache_load", "cg"),
    "ldcs": ("cache_load", "cs"),
    "ldlu": ("cache_load", "lu"),
    "ldcv": ("cache_load", "cv"),
    "stcg": ("cache_store", "cg"),
    "stcs": ("cache_store", "cs"),
    "stwb": ("cache_store", "wb"),
    "stwt": ("cache_store", "wt"),
}

# tolk_lint.runtime, the cp.async module of the TL302 fixer's kernels: its calls, under their
# qualified names as exported by the package and as defined in its GPU path's module
RUNTIME = "tolk_lint.runtime."
RUNTIME_MODULES = ("tolk_lint.runtime.", "tolk_lint.runtime.intrinsics.", "tolk_lint.runtime.simulator.")
RUNTIME_CALLS = frozenset({"cp_async", "cp_async_zfill", "commit_group", "wait_group"})


def runtime_call(qual: str) -> str | None:
    """``tolk_lint.runtime.cp_async`` (or the same from one of its modules) -> ``cp_async``."""
    for prefix in RUNTIME_MODULES:
        if qual.startswith(prefix) and qual[len(prefix) :] in RUNTIME_CALLS:
            return qual[len(prefix) :]
    return None


ATOMIC_OPS = {
    "add": "add", "sub": "sub", "max": "max", "min": "min", "nanmax": "max", "nanmin": "min",
    "and_": "and", "or_": "or", "xor": "xor", "exch": "exch", "inc": "inc", "dec": "dec",
    "cas": "cas", "compare_and_swap": "cas",
}  # fmt: skip

# cuda.fp16.h* / cuda.bf16.h*: exact ops where there is one, PURE otherwise
HALF_OPS = {
    "hadd": Opcode.ADD, "hsub": Opcode.SUB, "hmul": Opcode.MUL, "hdiv": Opcode.DIV, "hfma": Opcode.MAD,
    "hneg": Opcode.NEG, "habs": Opcode.ABS, "hmax": Opcode.MAX, "hmin": Opcode.MIN,
}  # fmt: skip
HALF_CMPS = {"heq": "eq", "hne": "ne", "hgt": "gt", "hge": "ge", "hlt": "lt", "hle": "le"}

# math.<fn> and numpy.<fn>: pure scalar functions
MATH_PURE = frozenset(
    {"sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
     "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "pow",
     "fmod", "hypot", "copysign", "erf", "erfc", "gamma", "lgamma", "degrees", "radians", "ldexp", "frexp",
     "remainder", "modf", "cbrt", "rsqrt", "round", "power", "arcsin", "arccos", "arctan", "arctan2",
     "arcsinh", "arccosh", "arctanh", "sign", "square", "reciprocal", "rint", "deg2rad", "rad2deg",
     "float_power", "logaddexp", "exp10"}
)  # fmt: skip
MATH_PREDICATES = frozenset({"isnan", "isinf", "isfinite", "signbit"})
# numba-cuda's `cmath`: complex results, except the predicates (pred) and `phase` (a float);
# `polar` is the tuple (abs, phase)
CMATH_COMPLEX = frozenset(
    {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "log", "log10", "rect", "sin",
     "sinh", "sqrt", "tan", "tanh"}
)  # fmt: skip
CMATH_PREDICATES = frozenset({"isnan", "isinf", "isfinite"})
MATH_ABS = frozenset({"fabs", "abs", "absolute"})
NUMPY_MINMAX = {"minimum": Opcode.MIN, "fmin": Opcode.MIN, "maximum": Opcode.MAX, "fmax": Opcode.MAX}
NUMPY_ALLOC = frozenset(
    {"empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like"}
)

# numba.cuda.random's draws: (states, index), a read and a write of states[index]
# (``xoroshiro128p_next``: the raw 64 bits)
XOROSHIRO_DRAWS = frozenset(
    {"xoroshiro128p_uniform_float32", "xoroshiro128p_uniform_float64", "xoroshiro128p_normal_float32",
     "xoroshiro128p_normal_float64", "xoroshiro128p_next"}
)  # fmt: skip

# the iterables a `for` loop is lowered for: ranges (the canonical loop), enumerate and zip
RANGES = frozenset(
    {"builtins.range", "numba.prange", "numba.np.ufunc.parallel.prange", "numba.parfors.parfor.prange"}
)
ENUMERATE, ZIP = "builtins.enumerate", "builtins.zip"

# Python builtins the lowering models (anything else is TL002)
BUILTIN_CALLS = frozenset(
    {"min", "max", "abs", "int", "float", "bool", "round", "pow", "divmod", "len", "print", "range"}
)

# names whose calls are pure (safe to evaluate speculatively, e.g. in `a and b`)
PURE_QUAL_PREFIXES = (
    "math.",
    "cmath.",
    "numpy.",
    "numba.cuda.fp16.",
    "numba.cuda.bf16.",
    "numba.cuda.libdevice.",
)
PURE_CUDA = frozenset(
    {"grid", "gridsize", "selp", "fma", "popc", "brev", "clz", "ffs", "cbrt", "laneid", "warpsize"}
)
PURE_BUILTINS = frozenset({"min", "max", "abs", "int", "float", "bool", "round", "pow", "divmod", "len"})


def is_pure_call(qual: str | None) -> bool:
    if not qual:
        return False
    if qual.startswith("builtins."):
        return qual[9:] in PURE_BUILTINS
    if qual.startswith(CUDA):
        rest = qual[len(CUDA) :]
        return rest in PURE_CUDA or rest.startswith(("fp16.", "bf16.", "libdevice."))
    if qual.startswith("numpy."):
        return qual[6:] not in NUMPY_ALLOC
    if dtype_of_qual(qual) is not None:
        return True
    return qual.startswith(PURE_QUAL_PREFIXES)


# -- star imports --------------------------------------------------------------

# the names ``from numba.cuda import *`` binds that the front end gives a meaning to (and the
# host API around them), and those of ``from numba import *`` (its decorators and Numba's
# types; ``cuda`` too: numba does not list it, but a file that star-imports numba and then
# writes ``cuda.jit`` means numba's)
_NUMBA_TYPES = (
    "int8 int16 int32 int64 uint8 uint16 uint32 uint64 intp uintp intc uintc ssize_t size_t boolean "
    "float16 float32 float64 complex64 complex128 bool_ byte char uchar short ushort int_ uint long_ "
    "ulong longlong ulonglong float_ double void none b1 i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 c8 c16"
).split()

STAR_EXPORTS: dict[str, frozenset[str]] = {
    "numba.cuda": frozenset(
        {"jit", "declare_device", "atomic", "fp16", "bf16", "libdevice", "cg", "to_device", "device_array",
         "device_array_like", "pinned_array", "mapped_array", "managed_array", "stream", "synchronize",
         "event", "is_available", "detect", "get_current_device", "select_device", "defer_cleanup",
         "local", "shared", "const", "In", "Out", "InOut", "reduce", "Reduce"}
        | set(SPECIAL_GROUPS) | set(CUDA_VALUES) | {name.split(".", 1)[0] for name in CUDA_CALLS}
    ),
    "numba": frozenset(
        {"cuda", "jit", "njit", "cfunc", "vectorize", "guvectorize", "stencil", "prange", "typeof",
         "literal_unroll", "objmode", "from_dtype", "jit_module", "get_num_threads", "set_num_threads",
         "get_thread_id", "optional"}
        | set(_NUMBA_TYPES)
    ),
}  # fmt: skip
