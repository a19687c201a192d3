"""16-byte loads in Numba CUDA: what CUDA C++ gets from float4.

Numba indexes an array one element at a time, so a float32 kernel issues one
4-byte load an element, with its own address arithmetic; CUDA C++'s mean reads
16 bytes a load (float4) and Triton's kernels do through their layouts. Where a
GPU's memory asks each SM for many bytes a cycle (the H200 more than the H100),
those extra instructions can be what a memory-bound kernel runs out of (with
4-byte loads mean-numba at 2^24 elements trailed mean-compile by 7% on the H100
and 11% on the H200 in the suite's runs).

``load_f32x4_streaming(x, i)`` is the same load marked evict-first, as CUDA
C++'s ``__ldcs``: ``ld.global.cs.v4.f32`` by inline PTX (a read that no kernel
reads again need not keep L2 lines; mean-cuda reads through it).

``load_f32x4(x, i)`` returns x[4i], ..., x[4i + 3] from one load: an
``@intrinsic`` (numba.cuda.extending) that emits LLVM's ``load <4 x float>``
with 16-byte alignment from the array's data, which NVVM compiles to
``ld.global.v4.f32`` (numba-cuda 0.30.4, sm_90). ``store_f32x4(y, i, a, b, c,
d)`` writes y[4i], ..., y[4i + 3] with one ``store <4 x float>``
(``st.global.v4.f32``). The caller guarantees that the array's data is 16-byte
aligned and that 4i + 3 < its size: nothing is checked, and a misaligned vector
access is a CUDA error. Under the simulator each is four plain accesses.
"""

from numba import cuda, types

from kernelscope.backends.numba.common import SIMULATED

if SIMULATED:
    @cuda.jit(device=True)
    def load_f32x4(x, i):
        j = 4 * i
        return x[j], x[j + 1], x[j + 2], x[j + 3]

    load_f32x4_streaming = load_f32x4

    @cuda.jit(device=True)
    def store_f32x4(y, i, a, b, c, d):
        j = 4 * i
        y[j], y[j + 1], y[j + 2], y[j + 3] = a, b, c, d
else:
    from llvmlite import ir
    from numba.cuda.extending import intrinsic

    def _vector_address(context, builder, array_type, array, index_type, index):
        """The address of vector ``index`` (elements 4 index .. 4 index + 3) of a float32 array, as <4 x float>*."""
        data = context.make_array(array_type)(context, builder, array).data
        index = context.cast(builder, index, index_type, types.uint64)
        first = builder.gep(data, [builder.mul(index, ir.Constant(index.type, 4))])
        return builder.bitcast(first, ir.PointerType(ir.VectorType(ir.FloatType(), 4)))

    def _load_signature(x, i):
        """UniTuple(float32, 4)(x, i) for a float32 array and an integer index; None (no match) otherwise."""
        if not (isinstance(x, types.Array) and x.dtype == types.float32 and isinstance(i, types.Integer)):
            return None
        return types.UniTuple(types.float32, 4)(x, i)

    def _load_intrinsic(sig, lanes):
        """(sig, codegen) of a 16-byte load: lanes(builder, address) loads vector i of x, returns its 4 floats."""
        if sig is None:
            return None

        def codegen(context, builder, signature, args):
            address = _vector_address(context, builder, signature.args[0], args[0], signature.args[1], args[1])
            return context.make_tuple(builder, signature.return_type, lanes(builder, address))

        return sig, codegen

    @intrinsic
    def load_f32x4(typingctx, x, i):
        def lanes(builder, address):  # LLVM's vector load: NVVM emits ld.global.v4.f32
            vector = builder.load(address, align=16)
            return [builder.extract_element(vector, ir.Constant(ir.IntType(32), k)) for k in range(4)]

        return _load_intrinsic(_load_signature(x, i), lanes)

    @intrinsic
    def load_f32x4_streaming(typingctx, x, i):
        def lanes(builder, address):  # the PTX instruction itself, evict-first
            loaded = builder.asm(ir.FunctionType(ir.LiteralStructType([ir.FloatType()] * 4), [ir.IntType(64)]),
                                 "ld.global.cs.v4.f32 {$0, $1, $2, $3}, [$4];", "=f,=f,=f,=f,l",
                                 [builder.ptrtoint(address, ir.IntType(64))], False)
            return [builder.extract_value(loaded, k) for k in range(4)]

        return _load_intrinsic(_load_signature(x, i), lanes)

    @intrinsic
    def store_f32x4(typingctx, y, i, a, b, c, d):
        if not (isinstance(y, types.Array) and y.dtype == types.float32 and isinstance(i, types.Integer)
                and all(isinstance(v, (types.Float, types.Integer)) for v in (a, b, c, d))):
            return None
        sig = types.void(y, i, a, b, c, d)

        def codegen(context, builder, signature, args):
            vector = ir.Constant(ir.VectorType(ir.FloatType(), 4), ir.Undefined)
            for k in range(4):
                lane = context.cast(builder, args[2 + k], signature.args[2 + k], types.float32)
                vector = builder.insert_element(vector, lane, ir.Constant(ir.IntType(32), k))
            address = _vector_address(context, builder, signature.args[0], args[0], signature.args[1], args[1])
            builder.store(vector, address, align=16)
            return context.get_dummy_value()

        return sig, codegen
