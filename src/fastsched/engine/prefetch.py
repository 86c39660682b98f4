"""A software prefetch for Numba kernels: start loading a cache line early.

The engine's per-node work (a hold, the run index's update) begins with a
dependent miss on the node's profile and index rows; when the next node is
already known (the other nodes of a multi-node job), asking for its lines
while the current one is processed overlaps those misses. A prefetch is only
a hint: it never faults and changes no value.
"""
from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _codegen(context, builder, signature, args):
    """A read prefetch of the element the (array, index...) arguments name."""
    aryty = signature.args[0]
    ary = context.make_array(aryty)(context, builder, args[0])
    idx = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], signature.args[1:])]
    ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch.p0")
    # read, high temporal locality, data cache
    builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


def _is_array(arr, ndim):
    return isinstance(arr, types.Array) and arr.ndim == ndim


@intrinsic
def prefetch(typingctx, arr, i, j):
    """Prefetch the line holding ``arr[i, j]`` (2-D array) for reading."""
    return (types.void(arr, i, j), _codegen) if _is_array(arr, 2) else None


@intrinsic
def prefetch1(typingctx, arr, i):
    """Prefetch the line holding ``arr[i]`` (1-D array) for reading."""
    return (types.void(arr, i), _codegen) if _is_array(arr, 1) else None
