"""The GPU path: cp.async, commit_group and wait_group as numba-cuda
intrinsics that emit PTX inline assembly.

numba-cuda has no cp.async of its own, and libNVVM does not know the
`llvm.nvvm.cp.async.*` intrinsics (they come out as unresolved extern calls),
so each call becomes one `ir.InlineAsm` with `side_effect=True` and a
`~{memory}` clobber.  The clobber is what keeps LLVM from moving the shared
loads of a tile above the `wait_group` that completes it: without it LLVM
assumes the asm touches no memory.

Addresses: the element pointer is computed by Numba's own `basic_indexing`,
the routine behind `arr[idx]` (negative indices wrap, NUMBA_BOUNDSCHECK
applies), so a copy's address is exactly the one the synchronous kernel's
`arr[idx]` used.  The destination is cast to the shared address space and
passed as its 32-bit window offset; the source is cast to the global space
and passed as a 64-bit address.  NVVM folds the casts into `mov` of the array
symbol plus the offset, the shape nvcc emits for `__cvta_generic_to_shared`.

Typing-time checks raise a NumbaTypeError naming the problem: the copy size,
the dtypes, the element size against the copy size, the index, contiguity
along the last axis, and a literal wait count.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.cuda import cgutils
from numba.cuda.core.errors import NumbaTypeError
from numba.cuda.extending import intrinsic
from numba.cuda.np.arrayobj import basic_indexing, make_array

from tolk_lint.runtime import contract

SHARED_ADDRSPACE = 3
GLOBAL_ADDRSPACE = 1
_ELEMENT_TYPES = (types.Integer, types.Float, types.Complex)


# -- typing-time checks -------------------------------------------------------------------


def _literal_value(fn: str, what: str, ty) -> int:
    if not isinstance(ty, types.IntegerLiteral):
        raise NumbaTypeError(contract.not_literal(fn, what, ty))
    return ty.literal_value


def _check_index(fn: str, role: str, array, index) -> None:
    if isinstance(index, types.Integer):
        count = 1
    elif isinstance(index, types.BaseTuple) and all(isinstance(t, types.Integer) for t in index.types):
        count = len(index.types)
    else:
        raise NumbaTypeError(f"{fn}: the {role} index must be an integer or a tuple of integers, got {index}")
    if count != array.ndim:
        raise NumbaTypeError(f"{fn}: the {role} array has {array.ndim} dimensions but its index has {count}")


def _contiguous_last_axis(array) -> bool:
    return array.layout == "C" or (array.ndim == 1 and array.layout == "F")


def _check_copy(fn: str, dst, dst_index, src, src_index, nbytes_type) -> int:
    """The copy size of a valid cp_async / cp_async_zfill call; a
    NumbaTypeError saying what is wrong otherwise."""
    for role, array in (("dst", dst), ("src", src)):
        if not isinstance(array, types.Array):
            raise NumbaTypeError(f"{fn}: {role} must be an array, got {array}")
    if not isinstance(nbytes_type, types.Integer):
        raise NumbaTypeError(contract.bad_copy_size(fn, nbytes_type))
    nbytes = _literal_value(fn, "nbytes", nbytes_type)
    if nbytes not in contract.COPY_SIZES:
        raise NumbaTypeError(contract.bad_copy_size(fn, nbytes))
    if dst.dtype != src.dtype:
        raise NumbaTypeError(contract.dtype_mismatch(fn, dst.dtype, src.dtype))
    if not isinstance(dst.dtype, _ELEMENT_TYPES):
        raise NumbaTypeError(f"{fn}: arrays of {dst.dtype} are not supported (integers, floats, complex)")
    itemsize = dst.dtype.bitwidth // 8
    if nbytes % itemsize:
        raise NumbaTypeError(contract.size_not_whole_elements(fn, nbytes, dst.dtype, itemsize))
    if not dst.mutable:
        raise NumbaTypeError(f"{fn}: dst is a read-only array")
    _check_index(fn, "dst", dst, dst_index)
    _check_index(fn, "src", src, src_index)
    if nbytes > itemsize:
        for role, array in (("dst", dst), ("src", src)):
            if not _contiguous_last_axis(array):
                raise NumbaTypeError(
                    f"{fn}: a {nbytes}-byte copy moves {nbytes // itemsize} consecutive elements along the "
                    f"last axis, so {role} must be C-contiguous (e.g. declared {dst.dtype}[:, ::1]); "
                    f"got {array}"
                )
    return nbytes


# -- code generation ----------------------------------------------------------------------


def _element_pointer(context, builder, array_type, array, index_type, index):
    """The generic address of `array[index]`, computed as Numba computes it
    for the expression `array[index]`."""
    ary = make_array(array_type)(context, builder, value=array)
    if isinstance(index_type, types.BaseTuple):
        index_types = index_type.types
        indices = cgutils.unpack_tuple(builder, index, count=len(index_types))
    else:
        index_types, indices = (index_type,), (index,)
    pointer, _, _ = basic_indexing(
        context, builder, array_type, ary, index_types, indices, boundscheck=context.enable_boundscheck
    )
    return pointer


def _address_in(builder, pointer, addrspace: int, bits: int):
    """`pointer` cast into `addrspace`, as an integer of `bits` bits (the
    operand cp.async takes for that space)."""
    if pointer.type.is_opaque:
        target = ir.PointerType(addrspace=addrspace)
    else:
        target = pointer.type.pointee.as_pointer(addrspace)
    return builder.ptrtoint(builder.addrspacecast(pointer, target), ir.IntType(bits))


def _emit_asm(builder, text: str, constraints: str, operands=()) -> None:
    fnty = ir.FunctionType(ir.VoidType(), [op.type for op in operands])
    builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), list(operands))


def _copy_operands(context, builder, sig, args):
    dst_type, dst_index_type, src_type, src_index_type = sig.args[:4]
    dst, dst_index, src, src_index = args[:4]
    dst_pointer = _element_pointer(context, builder, dst_type, dst, dst_index_type, dst_index)
    src_pointer = _element_pointer(context, builder, src_type, src, src_index_type, src_index)
    return [
        _address_in(builder, dst_pointer, SHARED_ADDRSPACE, 32),
        _address_in(builder, src_pointer, GLOBAL_ADDRSPACE, 64),
    ]


def _copy_text(nbytes: int, with_src_size: bool) -> str:
    src_size = ", $2" if with_src_size else ""
    return f"cp.async.{contract.cache_operator(nbytes)}.shared.global [$0], [$1], {nbytes}{src_size};"


# Numba types a call first with plain types, then, if that raised, with literal
# types: the checks below raise on a non-literal nbytes or wait count, so a
# literal one is seen on the second try and a variable one fails both with the
# same message.  The signatures keep the literal types of nbytes and of the
# wait count, so that calls with different literals are different signatures
# (lowering is looked up by signature); indices and src_bytes are unliteral.


@intrinsic
def cp_async(typingctx, dst, dst_index, src, src_index, nbytes):
    """Issue `cp.async.{ca,cg}.shared.global`: copy `nbytes` (a literal 4, 8
    or 16) from the global array `src` at `src_index` into the shared array
    `dst` at `dst_index`; the bytes are consecutive elements along the last
    axis.  The copy lands only at a `wait_group` that retires its group."""
    size = _check_copy("cp_async", dst, dst_index, src, src_index, nbytes)
    sig = types.void(dst, types.unliteral(dst_index), src, types.unliteral(src_index), nbytes)

    def codegen(context, builder, sig, args):
        operands = _copy_operands(context, builder, sig, args)
        _emit_asm(builder, _copy_text(size, False), "r,l,~{memory}", operands)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def cp_async_zfill(typingctx, dst, dst_index, src, src_index, nbytes, src_bytes):
    """`cp_async` with PTX's src-size operand: read `src_bytes` (a run-time
    value, 0 or `nbytes`) from `src` and fill the rest of the `nbytes` with
    zeros.  A guarded copy `dst[i] = src[j] if ok else 0` becomes
    `cp_async_zfill(dst, i, src, j_clamped, n, n if ok else 0)`, with the
    source index clamped in bounds."""
    size = _check_copy("cp_async_zfill", dst, dst_index, src, src_index, nbytes)
    if not isinstance(src_bytes, types.Integer):
        raise NumbaTypeError(f"cp_async_zfill: src_bytes must be an integer, got {src_bytes}")
    src_bytes = types.unliteral(src_bytes)
    sig = types.void(dst, types.unliteral(dst_index), src, types.unliteral(src_index), nbytes, src_bytes)

    def codegen(context, builder, sig, args):
        operands = _copy_operands(context, builder, sig, args)
        operands.append(context.cast(builder, args[5], sig.args[5], types.uint32))
        _emit_asm(builder, _copy_text(size, True), "r,l,r,~{memory}", operands)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def commit_group(typingctx):
    """`cp.async.commit_group`: close this thread's not yet committed copies
    into a new group (an empty group when there are none).  Commit
    unconditionally, outside any guard, so every thread counts the same
    groups."""

    def codegen(context, builder, sig, args):
        _emit_asm(builder, "cp.async.commit_group;", "~{memory}")
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def wait_group(typingctx, n):
    """`cp.async.wait_group n`: wait until at most the newest `n` groups of
    this thread are pending (`n` a literal 0..7).  The landed bytes are
    visible to this thread only; a `cuda.syncthreads()` after the wait
    publishes them to the block."""
    if not isinstance(n, types.IntegerLiteral):
        raise NumbaTypeError(contract.bad_wait_count(f"a value of type {n}, not a literal"))
    count = n.literal_value
    if not 0 <= count <= contract.MAX_WAIT_COUNT:
        raise NumbaTypeError(contract.bad_wait_count(count))

    def codegen(context, builder, sig, args):
        _emit_asm(builder, f"cp.async.wait_group {count};", "~{memory}")
        return context.get_dummy_value()

    return types.void(n), codegen
