"""L2 eviction hints in Numba CUDA: what Triton's ``eviction_policy`` and CUDA C++'s cache policies give.

A kernel that reads its input twice (softmax's split plan: once for the row's statistics, once to write) gains
where the second read finds the data still in L2. ``load_keep(x, i)`` reads x[i] asking L2 to keep the line
(evict_last); ``load_last(x, i)`` reads x[i] as its last use (evict_first), and ``store_last(y, i, v)`` writes
y[i] without pushing kept lines out (evict_first), so that neither the re-read nor the output evicts what the
first pass asked L2 to keep. Each is one PTX load or store with an L2 cache policy
(``createpolicy.fractional.L2::evict_last.b64``, then ``ld.global.L2::cache_hint``), which is how Triton emits
its policies on sm_80 and later.

The index is an element index of a float32 array, unchecked (as Numba's own indexing is in a kernel compiled
without bounds checks). Under the simulator each is the plain access.
"""

from numba import cuda, types

from kernelscope.backends.numba.common import SIMULATED

if SIMULATED:
    @cuda.jit(device=True)
    def load_keep(x, i):
        return x[i]

    load_last = load_keep

    @cuda.jit(device=True)
    def store_last(y, i, v):
        y[i] = v
else:
    from llvmlite import ir
    from numba.cuda.extending import intrinsic

    def _address(context, builder, array_type, array, index_type, index):
        """The address of element ``index`` of a float32 array, as a 64-bit integer."""
        data = context.make_array(array_type)(context, builder, array).data
        index = context.cast(builder, index, index_type, types.uint64)
        return builder.ptrtoint(builder.gep(data, [index]), ir.IntType(64))

    def _is_f32_array(x, i) -> bool:
        return isinstance(x, types.Array) and x.dtype == types.float32 and isinstance(i, types.Integer)

    def _load(policy: str):
        """A float32 load of x[i] under the L2 policy ``policy`` ("evict_last" or "evict_first")."""
        asm = ("{ .reg .b64 policy; createpolicy.fractional.L2::%s.b64 policy, 1.0; "
               "ld.global.L2::cache_hint.f32 $0, [$1], policy; }" % policy)

        def typer(typingctx, x, i):
            if not _is_f32_array(x, i):
                return None

            def codegen(context, builder, signature, args):
                address = _address(context, builder, signature.args[0], args[0], signature.args[1], args[1])
                return builder.asm(ir.FunctionType(ir.FloatType(), [ir.IntType(64)]), asm, "=f,l", [address],
                                   False)

            return types.float32(x, i), codegen

        typer.__name__ = f"load_{policy}"  # the intrinsic's name
        return intrinsic(typer)

    load_keep = _load("evict_last")
    load_last = _load("evict_first")

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
