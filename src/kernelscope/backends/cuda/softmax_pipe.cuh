#pragma once
#include "softmax_cluster.cuh"
#include "softmax_common.cuh"
#include "softmax_cp_async.cuh"

// Pipe: the block kernel's cluster split and register-held slice, in a persistent grid: cluster c takes rows c,
// c + clusters, c + 2 clusters, ... While a row is reduced, combined across the cluster and written, each block's
// slice of the cluster's next row is already on its way into shared memory (softmax_cp_async.cuh), so DRAM keeps
// reading through the barriers and the stores, where a row a block leaves it idle there, every block of a wave in
// the same phase (results-proofs/softmax-wide-rows). A thread copies exactly the vectors it will read back, so
// its own cp.async wait is all the stage needs: no block barrier.
template <typename T, int EPT, typename Exp = SoftmaxExp>
__launch_bounds__(EPT <= 32 ? 512 : 256) __global__ void softmax_pipe_kernel(
    const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
    using P = Pack16<T>;
    constexpr int NV = EPT / P::N;
    extern __shared__ uint4 stage[];  // NV x blockDim.x vectors: this block's slice of its next row
    __shared__ float scratch_max[32], scratch_sum[32];
    __shared__ ClusterPartials partials;
    const int csize = softmax_cluster_blocks(), rank = softmax_cluster_rank();
    if (csize > 1) softmax_cluster_start<true>(&partials);  // waited on before the first row's combine
    const int64_t clusters = gridDim.x / csize, first_row = blockIdx.x / csize;
    const int t = threadIdx.x, step = blockDim.x;

    float v[EPT];
    float hv = -INFINITY, tv = -INFINITY;  // rank 0: the row's unaligned ends (fewer than N each), a thread one
    int nth = 0;  // the block's rows so far
    for (int64_t row = first_row; row < rows; row += clusters, ++nth) {
        const T* xr = x + row * cols;
        T* yr = y + row * cols;
        const RowSlice c = slice_row(xr, cols, rank, csize);
        if (row == first_row) {
            load_vectors<T, NV>(xr + c.s.head, c.first + t, step, c.end, v);
            hv = rank == 0 && t < c.s.head ? P::to_float(xr[t]) : -INFINITY;
            tv = rank == 0 && t < c.s.tail ? P::to_float(xr[cols - c.s.tail + t]) : -INFINITY;
        } else {  // the slice the previous lap copied into the stage (its ends came with it, into hv and tv)
            softmax_cp_async_wait();
#pragma unroll
            for (int i = 0; i < NV; ++i) {
                if (c.first + t + i * step < c.end) {
                    P::unpack(stage[i * step + t], v + i * P::N);
                } else {
#pragma unroll
                    for (int j = 0; j < P::N; ++j) v[i * P::N + j] = -INFINITY;
                }
            }
        }

        float m = fmaxf(hv, tv);
#pragma unroll
        for (int i = 0; i < EPT; ++i) m = fmaxf(m, v[i]);
        m = softmax_block_reduce<true>(m, scratch_max);  // its barrier: this thread's stage reads are done

        float next_hv = -INFINITY, next_tv = -INFINITY;
        if (row + clusters < rows) {  // the next row's slice on its way while this one is reduced and written
            const T* xn = x + (row + clusters) * cols;
            const RowSlice n = slice_row(xn, cols, rank, csize);
            const T* vecs = xn + n.s.head;
#pragma unroll
            for (int i = 0; i < NV; ++i)
                if (n.first + t + i * step < n.end)
                    softmax_cp_async16(&stage[i * step + t], vecs + (int64_t)(n.first + t + i * step) * P::N);
            softmax_cp_async_commit();
            if (rank == 0 && t < n.s.head) next_hv = P::to_float(xn[t]);
            if (rank == 0 && t < n.s.tail) next_tv = P::to_float(xn[cols - n.s.tail + t]);
        }

        float sum = exp_in_place<Exp, EPT>(v, m);
        const float shift = softmax_shift(m);
        hv = Exp::exp(hv, shift);
        tv = Exp::exp(tv, shift);
        sum = softmax_block_reduce<false>(sum + hv + tv, scratch_sum);

        const float scale = row_scale<true>(m, sum, csize, &partials, nth);
        const bool out_aligned = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;
        store_vectors<T, NV>(yr + c.s.head, c.first + t, step, c.end, v, scale, out_aligned);
        if (rank == 0 && t < c.s.head) yr[t] = P::from_float(hv * scale);
        if (rank == 0 && t < c.s.tail) yr[cols - c.s.tail + t] = P::from_float(tv * scale);
        hv = next_hv;
        tv = next_tv;
    }
}
