"""16-byte loads in Numba CUDA: what CUDA C++ gets from float4.

Numba indexes an array one element at a time, so a float32 kernel issues one
4-byte load an element, with its own address arithmetic; CUDA C++'s mean reads
16 bytes a load (float4) and Triton's kernels do through their layouts. Where a
GPU's memory asks each SM for many bytes a cycle (the H200 more than the H100),
those extra instructions can be what a memory-bound kernel runs out of (issue
#15: mean-numba at 2^24 elements trails mean-compile by 7% on the H100 and 11%
on the H200, in the suite runs of c6c2837 and d456f66).

``load_f32x4(x, i)`` returns x[4i], ..., x[4i + 3] from one load: an
``@intrinsic`` (numba.cuda.extending) that emits LLVM's ``load <4 x float>``
with 16-byte alignment from the array's data, which NVVM compiles to
``ld.global.v4.f32`` (numba-cuda 0.30.4, sm_90). The caller guarantees that x's
data is 16-byte aligned and that 4i + 3 < x.size: nothing is checked, and a
misaligned vector load is a CUDA error. Under the simulator it is four plain
loads.
"""

from numba import cuda, types

from kernelscope.backends.numba.common import SIMULATED

if SIMULATED:
    @cuda.jit(device=True)
    def load_f32x4(x, i):
        j = 4 * i
        return x[j], x[j + 1], x[j + 2], x[j + 3]
else:
    from llvmlite import ir
    from numba.cuda.extending import intrinsic

    @intrinsic
    def load_f32x4(typingctx, x, i):
        if not (isinstance(x, types.Array) and x.dtype == types.float32 and isinstance(i, types.Integer)):
            return None
        sig = types.UniTuple(types.float32, 4)(x, i)

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            index = context.cast(builder, args[1], signature.args[1], types.uint64)
            first = builder.gep(data, [builder.mul(index, ir.Constant(index.type, 4))])
            vector = builder.load(builder.bitcast(first, ir.PointerType(ir.VectorType(ir.FloatType(), 4))),
                                  align=16)
            lanes = [builder.extract_element(vector, ir.Constant(ir.IntType(32), k)) for k in range(4)]
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen
