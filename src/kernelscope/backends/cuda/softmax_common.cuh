// What every softmax kernel shares: a row cut into 16-byte vectors, the loads and stores of those vectors,
// warp and block reductions, and the exp.
//
// Math in float32 for float32 and bfloat16 alike. Exps of x - max, so +1000 offsets and x100 logits do not
// overflow, and -inf (masked) entries give 0. ex2.approx errs by about 1e-6 relative or less on the exps that
// matter (x - max in [-20, 0]), far inside the float32 tolerance of 1e-5 of the largest probability. Each exp is
// a subtract, a multiply and MUFU.EX2 with subnormal results flushed to 0 (softmax_exp): __expf's ex2.approx
// without .ftz puts three more instructions around each MUFU, issue slots a memory-bound kernel lacks on a GPU
// whose DRAM asks more of each SM (results-proofs/softmax-cuda-h200). A flushed exp is below 2^-126 of the row's
// largest, exp(0) = 1, so a softmax never needs it.
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>

#include "pack16.cuh"

__device__ __forceinline__ float softmax_warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
    return v;
}

__device__ __forceinline__ float softmax_warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
    return v;
}

// Block-wide max or sum, returned to every thread. `scratch` holds 32 floats
// and is used by one reduction only (no barrier needed before the next one).
template <bool MAX>
__device__ __forceinline__ float softmax_block_reduce(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = MAX ? softmax_warp_max(v) : softmax_warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < (int)blockDim.x / 32 ? scratch[lane] : (MAX ? -INFINITY : 0.0f);
    return MAX ? softmax_warp_max(v) : softmax_warp_sum(v);
}

// A row cut for 16-byte access: `head` scalars until the row's address in x is
// 16-byte aligned, `nvec` vectors of Pack16<T>::N elements, `tail` scalars.
struct RowSplit {
    int head, nvec, tail;
};

template <typename T>
__device__ __forceinline__ RowSplit split_row(const T* row, int cols) {
    constexpr int N = Pack16<T>::N;
    int head = (int)(((16 - (reinterpret_cast<uintptr_t>(row) & 15)) & 15) / sizeof(T));
    head = head < cols ? head : cols;
    int nvec = (cols - head) / N;
    return {head, nvec, cols - head - nvec * N};
}

// Block rank r's slice of a row: vectors [first, end) of its aligned part (the persistent kernels';
// softmax_block_kernel cuts the same).
struct RowSlice {
    RowSplit s;
    int first, end;
};

template <typename T>
__device__ __forceinline__ RowSlice slice_row(const T* row, int cols, int rank, int csize) {
    const RowSplit s = split_row(row, cols);
    return {s, (int)((int64_t)s.nvec * rank / csize), (int)((int64_t)s.nvec * (rank + 1) / csize)};
}

// v[i * N .. i * N + N) = vector (first + i * step) of the row, for i < NV and
// that vector < end; -inf elsewhere (it adds nothing to the max or the sum).
// All NV loads are issued before any is used. CHECK false: the caller knows
// every vector is < end (no compares, no -inf fills).
template <typename T, int NV, bool CHECK = true>
__device__ __forceinline__ void load_vectors(const T* vecs, int first, int step, int end, float* v) {
    constexpr int N = Pack16<T>::N;
    uint4 r[NV];
#pragma unroll
    for (int i = 0; i < NV; ++i)
        if (!CHECK || first + i * step < end) r[i] = load16(vecs + (int64_t)(first + i * step) * N);
#pragma unroll
    for (int i = 0; i < NV; ++i) {
        if (!CHECK || first + i * step < end) {
            Pack16<T>::unpack(r[i], v + i * N);
        } else {
#pragma unroll
            for (int j = 0; j < N; ++j) v[i * N + j] = -INFINITY;
        }
    }
}

// Writes v * scale back to the vectors load_vectors read. out_aligned: y's row
// has x's alignment, so the vectors are 16-byte aligned in y too (else scalar stores).
template <typename T, int NV, bool CHECK = true>
__device__ __forceinline__ void store_vectors(T* vecs, int first, int step, int end, const float* v, float scale,
                                              bool out_aligned) {
    constexpr int N = Pack16<T>::N;
#pragma unroll
    for (int i = 0; i < NV; ++i) {
        if (!CHECK || first + i * step < end) {
            float o[N];
#pragma unroll
            for (int j = 0; j < N; ++j) o[j] = v[i * N + j] * scale;
            T* p = vecs + (int64_t)(first + i * step) * N;
            if (out_aligned) {
                store16(p, Pack16<T>::pack(o));
            } else {
#pragma unroll
                for (int j = 0; j < N; ++j) p[j] = Pack16<T>::from_float(o[j]);
            }
        }
    }
}

// 2^v, a subnormal result flushed to 0: one MUFU.EX2.
__device__ __forceinline__ float softmax_exp2(float v) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

constexpr float SOFTMAX_LOG2E = 1.4426950408889634f;

// exp(x - m) as 2^((x - m) log2(e)). x = -inf gives 0; m must be finite (the kernels shift by 0 for a row or
// slice whose max is -inf). Not one FFMA, x log2(e) - m log2(e): m log2(e) rounds to float, an error of up to
// 6e-5 in the exponent at m = 1000 that differs between the blocks of a cluster, each with its own max, and the
// offset stress input fails the 1e-5 tolerance that way (results-proofs/softmax-cuda-h200).
__device__ __forceinline__ float softmax_exp(float x, float m) {
    return softmax_exp2((x - m) * SOFTMAX_LOG2E);
}

// The kernels' exp, a template argument of each kernel (Exp::exp(x, m)): softmax_exp. A measurement build names
// another (scripts/gpu/softmax_free_exps.cu: every exp a subtract) with no switch in the kernels themselves.
struct SoftmaxExp {
    __device__ __forceinline__ static float exp(float x, float m) { return softmax_exp(x, m); }
};

// What a row's or slice's exps subtract: its max, or 0 where the max is -inf (empty or fully masked), so the exps
// are 0, not NaN (-inf - -inf).
__device__ __forceinline__ float softmax_shift(float max) { return max == -INFINITY ? 0.0f : max; }

// exp(v - max) in place; returns their sum (0 for a max of -inf: softmax_shift).
template <typename Exp, int E>
__device__ __forceinline__ float exp_in_place(float* v, float max) {
    const float shift = softmax_shift(max);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < E; ++i) {
        v[i] = Exp::exp(v[i], shift);
        sum += v[i];
    }
    return sum;
}
