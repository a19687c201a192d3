"""L2 eviction hints in Numba CUDA: what Triton's ``eviction_policy`` and CUDA C++'s cache policies give.

A kernel that reads its input twice (softmax's split plan: once for the row's statistics, once to write) gains
where the second read finds the data still in L2. ``load_keep(x, i)`` reads x[i] asking L2 to keep the line
(evict_last); ``load_last(x, i)`` reads x[i] as its last use (evict_first), and ``store_last(y, i, v)`` writes
y[i] without pushing kept lines out (evict_first), so that neither the re-read nor the output evicts what the
first pass asked L2 to keep. ``load4_keep(x, i)``, ``load4_last(x, i)`` and ``store4_last(y, i, a, b, c, d)`` are
the same on 16 bytes, elements 4i to 4i + 3, as vector.py's load_f32x4 and store_f32x4 (x and y 16-byte aligned:
the caller's to guarantee). Each is one PTX load or store with an L2 cache policy
(``createpolicy.fractional.L2::evict_last.b64``, then ``ld.global.L2::cache_hint``), which is how Triton emits
its policies on sm_80 and later.

The index is an element index of a float32 array, unchecked (as Numba's own indexing is in a kernel compiled
without bounds checks). Under the simulator each is the plain access. ``pass_accesses`` picks a pass's four, hinted
or plain, when a kernel is built.
"""

from numba import cuda, types

from kernelscope.backends.numba.common import SIMULATED
from kernelscope.backends.numba.vector import load_f32x4, store_f32x4



@cuda.jit(device=True)
def load_plain(x, i):
    """x[i], no policy: what the hinted loads are without hints."""
    return x[i]


@cuda.jit(device=True)
def store_plain(y, i, v):
    y[i] = v


if SIMULATED:
    load_keep = load_last = load_plain
    store_last = store_plain
    load4_keep = load4_last = load_f32x4
    store4_last = store_f32x4
else:
    from llvmlite import ir
    from numba.cuda.extending import intrinsic

    def _address(context, builder, array_type, array, index_type, index, lanes: int = 1):
        """The address of element ``lanes`` x ``index`` of a float32 array, as a 64-bit integer."""
        data = context.make_array(array_type)(context, builder, array).data
        index = context.cast(builder, index, index_type, types.uint64)
        if lanes > 1:
            index = builder.mul(index, ir.Constant(index.type, lanes))
        return builder.ptrtoint(builder.gep(data, [index]), ir.IntType(64))

    def _is_f32_array(x, i) -> bool:
        return isinstance(x, types.Array) and x.dtype == types.float32 and isinstance(i, types.Integer)

    def _load(policy: str, lanes: int = 1):
        """A float32 load of x[i] (``lanes`` 4: of x[4i] to x[4i + 3], as a tuple) under the L2 policy ``policy``
        ("evict_last" or "evict_first")."""
        vec, regs = ("", "$0") if lanes == 1 else (".v4", "{$0, $1, $2, $3}")
        asm = ("{ .reg .b64 policy; createpolicy.fractional.L2::%s.b64 policy, 1.0; "
               "ld.global.L2::cache_hint%s.f32 %s, [$%d], policy; }" % (policy, vec, regs, lanes))
        floats = [ir.FloatType()] * lanes

        def typer(typingctx, x, i):
            if not _is_f32_array(x, i):
                return None

            def codegen(context, builder, signature, args):
                address = _address(context, builder, signature.args[0], args[0], signature.args[1], args[1],
                                   lanes)
                if lanes == 1:
                    return builder.asm(ir.FunctionType(floats[0], [ir.IntType(64)]), asm, "=f,l", [address], False)
                loaded = builder.asm(ir.FunctionType(ir.LiteralStructType(floats), [ir.IntType(64)]), asm,
                                     "=f,=f,=f,=f,l", [address], False)
                return context.make_tuple(builder, signature.return_type,
                                          [builder.extract_value(loaded, k) for k in range(lanes)])

            result = types.float32 if lanes == 1 else types.UniTuple(types.float32, lanes)
            return result(x, i), codegen

        typer.__name__ = f"load{lanes if lanes > 1 else ''}_{policy}"  # the intrinsic's name
        return intrinsic(typer)

    load_keep = _load("evict_last")
    load_last = _load("evict_first")
    load4_keep = _load("evict_last", 4)
    load4_last = _load("evict_first", 4)

    @intrinsic
    def store_last(typingctx, y, i, v):
        if not (_is_f32_array(y, i) and isinstance(v, (types.Float, types.Integer))):
            return None
        asm = ("{ .reg .b64 policy; createpolicy.fractional.L2::evict_first.b64 policy, 1.0; "
               "st.global.L2::cache_hint.f32 [$0], $1, policy; }")

        def codegen(context, builder, signature, args):
            address = _address(context, builder, signature.args[0], args[0], signature.args[1], args[1])
            value = context.cast(builder, args[2], signature.args[2], types.float32)
            builder.asm(ir.FunctionType(ir.VoidType(), [ir.IntType(64), ir.FloatType()]), asm, "l,f",
                        [address, value], True)
            return context.get_dummy_value()

        return types.void(y, i, v), codegen

    @intrinsic
    def store4_last(typingctx, y, i, a, b, c, d):
        if not (_is_f32_array(y, i) and all(isinstance(v, (types.Float, types.Integer)) for v in (a, b, c, d))):
            return None
        asm = ("{ .reg .b64 policy; createpolicy.fractional.L2::evict_first.b64 policy, 1.0; "
               "st.global.L2::cache_hint.v4.f32 [$0], {$1, $2, $3, $4}, policy; }")

        def codegen(context, builder, signature, args):
            address = _address(context, builder, signature.args[0], args[0], signature.args[1], args[1], 4)
            values = [context.cast(builder, args[2 + k], signature.args[2 + k], types.float32) for k in range(4)]
            builder.asm(ir.FunctionType(ir.VoidType(), [ir.IntType(64)] + [ir.FloatType()] * 4), asm, "l,f,f,f,f",
                        [address, *values], True)
            return context.get_dummy_value()

        return types.void(y, i, a, b, c, d), codegen


def pass_accesses(hints: bool, keep: bool) -> tuple:
    """The (load, load4, store, store4) device functions of a pass over data read twice: with ``hints``, loads that
    ask L2 to keep their lines (``keep``: the first read) or that are their last use, and last-use stores; without,
    plain accesses. Chosen when a kernel is built, so its loops hold no branch on the policy."""
    if not hints:
        return load_plain, load_f32x4, store_plain, store_f32x4
    if keep:
        return load_keep, load4_keep, store_last, store4_last
    return load_last, load4_last, store_last, store4_last
