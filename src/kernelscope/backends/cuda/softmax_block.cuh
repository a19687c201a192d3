// Many wide rows: a block a row, the row in its registers, reductions through shuffles and 32 floats of shared
// memory, two blocks or more resident an SM. Few rows, or rows too wide for one block's registers: the same
// kernel a cluster a row (softmax_cluster.cuh). Rows of exactly EPT x threads aligned elements (the square shapes
// of the suite's plans) take softmax_exact_kernel: no bounds, no unaligned ends.
#pragma once
#include "softmax_cluster.cuh"
#include "softmax_common.cuh"

// Block per row (cluster size 1) and cluster per row (C > 1, grid = rows x C,
// block rank r of a cluster takes vectors [nvec r / C, nvec (r + 1) / C) of the
// row, rank 0 also the unaligned ends). Thread t holds vectors t, t + blockDim.x,
// ... of the slice: EPT floats in registers, at most 32 with 1024 threads (64
// registers a thread) and 64 with 512. EXACT: softmax_exact_kernel's rows, with
// no bounds, unaligned ends or cluster.
template <typename T, int EPT, bool EXACT, typename Exp>
__device__ __forceinline__ void softmax_block_row(const T* __restrict__ xr, T* __restrict__ yr, int cols, RowSplit s,
                                                  int first, int end, int csize, int rank, bool out_aligned,
                                                  float* scratch_max, float* scratch_sum,
                                                  ClusterPartials* partials) {
    using P = Pack16<T>;
    constexpr int NV = EPT / P::N;
    const int t = threadIdx.x;
    float v[EPT];
    load_vectors<T, NV, !EXACT>(xr + s.head, first + t, blockDim.x, end, v);
    float hv = -INFINITY, tv = -INFINITY;  // the unaligned ends, < N elements each (none in an exact row)
    if constexpr (!EXACT) {
        hv = rank == 0 && t < s.head ? P::to_float(xr[t]) : -INFINITY;
        tv = rank == 0 && t < s.tail ? P::to_float(xr[cols - s.tail + t]) : -INFINITY;
    }

    float m = fmaxf(hv, tv);
#pragma unroll
    for (int i = 0; i < EPT; ++i) m = fmaxf(m, v[i]);
    m = softmax_block_reduce<true>(m, scratch_max);
    float sum = exp_in_place<Exp, EPT>(v, m);
    if constexpr (!EXACT) {
        const float shift = softmax_shift(m);
        hv = Exp::exp(hv, shift);
        tv = Exp::exp(tv, shift);
        sum = sum + hv + tv;
    }
    sum = softmax_block_reduce<false>(sum, scratch_sum);

    if constexpr (EXACT) {
        store_vectors<T, NV, false>(yr, t, blockDim.x, end, v, 1.0f / sum, true);
    } else {
        const float scale = row_scale<false>(m, sum, csize, partials, 0);
        store_vectors<T, NV>(yr + s.head, first + t, blockDim.x, end, v, scale, out_aligned);
        if (rank == 0 && t < s.head) yr[t] = P::from_float(hv * scale);
        if (rank == 0 && t < s.tail) yr[cols - s.tail + t] = P::from_float(tv * scale);
    }
}

template <typename T, int EPT, typename Exp = SoftmaxExp>
__launch_bounds__(EPT <= 32 ? 1024 : 512) __global__ void softmax_block_kernel(
    const T* __restrict__ x, T* __restrict__ y, int cols) {
    __shared__ float scratch_max[32], scratch_sum[32];
    __shared__ ClusterPartials partials;  // a row a block: one half used
    const int csize = softmax_cluster_blocks(), rank = softmax_cluster_rank();
    if (csize > 1) softmax_cluster_start<false>(&partials);  // waited on in cluster_combine: the row's loads in between

    const int64_t row = blockIdx.x / csize;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    const RowSplit s = split_row(xr, cols);
    const bool out_aligned = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;
    const int first = (int)((int64_t)s.nvec * rank / csize), end = (int)((int64_t)s.nvec * (rank + 1) / csize);
    softmax_block_row<T, EPT, false, Exp>(xr, yr, cols, s, first, end, csize, rank, out_aligned, scratch_max,
                                          scratch_sum, &partials);
}

// A block a row of exactly EPT x blockDim.x elements, x and y 16-byte aligned
// (launch_block_rows decides): the suite's square shapes from 4096x4096 to
// 16384x16384 in both dtypes, as the H100's and the H200's plans launch them.
// Loads, exps and stores alone: the general kernel's slice bounds (two 64-bit
// divisions), -inf fills and bounds checks nearly double a warp's instructions
// (scripts/sass_counts.py prints both), which a GPU whose DRAM asks more of
// each SM cannot hide (results-proofs/softmax-cuda-h200).
// A kernel of its own, not a branch in the general one: sharing one register
// allocation, the two paths took 36-40 registers at 16 floats a thread, so one
// block of 1024 an SM, not two (results-proofs/softmax-cuda-h200).
template <typename T, int EPT, typename Exp = SoftmaxExp>
__launch_bounds__(EPT <= 32 ? 1024 : 512) __global__ void softmax_exact_kernel(
    const T* __restrict__ x, T* __restrict__ y, int cols) {
    __shared__ float scratch_max[32], scratch_sum[32];
    const int64_t row = blockIdx.x;
    const int nvec = cols / Pack16<T>::N;
    softmax_block_row<T, EPT, true, Exp>(x + row * cols, y + row * cols, cols, RowSplit{0, nvec, 0}, 0, nvec, 1, 0,
                                         true, scratch_max, scratch_sum, nullptr);
}
