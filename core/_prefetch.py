"""A software prefetch for numba kernels (``llvm.prefetch``).

The block step reads a few scattered regions of one random block (its atoms, its token features,
its Gram matrix). Their cache misses are independent, but the code reaches them one after the
other. Prefetching all of them when the block is drawn lets the misses overlap. It does not change
any result: a prefetch is only a hint, and it never faults.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, offset):
    """Hint the CPU to fetch the cache line of ``arr.flat[offset]`` (``arr`` C-contiguous), for
    reading, with high temporal locality. Use inside ``@njit`` code only; returns nothing."""
    if not isinstance(arr, types.Array) or not isinstance(offset, types.Integer):
        return None
    sig = types.void(arr, offset)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # rw = 0 (read), locality = 3 (keep in all cache levels), cache type = 1 (data)
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
