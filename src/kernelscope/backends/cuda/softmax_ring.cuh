#pragma once
#include "softmax_cluster.cuh"
#include "softmax_common.cuh"
#include "softmax_cp_async.cuh"

constexpr int SOFTMAX_RING_MAX_BYTES = 226 * 1024;  // sm_90 gives a block 227 KiB of shared memory; 1 KiB static

// Ring: the pipe kernel's persistent clusters, but a block's slices of its next S rows are all on their way at
// once, each into its stage of a ring in shared memory, and the current row is read from its stage three times
// (max, sum of exps, write) instead of being held in registers. The pipe kernel's row in registers (124 a thread
// at 512 threads: one block an SM) leaves too few bytes in flight while a row is reduced; here a block needs a few
// dozen registers, so several share an SM, each with S rows in flight (results-proofs/softmax-wide-rows). A thread
// copies exactly the vectors it reads back, so its own cp.async waits are all the ring needs.
//
// The exps are computed twice (sum, then write) rather than stored, except with ONE_EXP ("ring1e", one stage, the
// ring softmax_plan launches): the sum pass writes its exps back over the row's stage (float32 exactly, bfloat16
// rounded, within its 1e-2 tolerance) and the write pass only scales them, one MUFU an element, not two: the exps
// cost the one-stage ring time in bfloat16 (results-proofs/softmax-floors).
template <typename T, int S, bool ONE_EXP = false, typename Exp = SoftmaxExp>
__launch_bounds__(1024) __global__ void softmax_ring_kernel(
    const T* __restrict__ x, T* __restrict__ y, int rows, int cols, int stage_vectors) {
    using P = Pack16<T>;
    extern __shared__ uint4 ring[];  // S stages of stage_vectors vectors: the most any block's slice of a row holds
    __shared__ float scratch_max[32], scratch_sum[32];
    __shared__ ClusterPartials partials;
    const int csize = softmax_cluster_blocks(), rank = softmax_cluster_rank();
    if (csize > 1) softmax_cluster_start<true>(&partials);  // waited on before the first row's combine
    const int64_t clusters = gridDim.x / csize, first_row = blockIdx.x / csize;
    const int t = threadIdx.x, step = blockDim.x;

    // This thread's vectors of `row` into `stage`, as one commit group (empty past the last row: the waits
    // count groups).
    auto fetch = [&](int64_t row, int stage) {
        if (row < rows) {
            const T* xn = x + row * cols;
            const RowSlice n = slice_row(xn, cols, rank, csize);
            const T* vecs = xn + n.s.head;
            uint4* dst = ring + stage * stage_vectors + t;
            for (int k = n.first + t; k < n.end; k += step, dst += step)
                softmax_cp_async16(dst, vecs + (int64_t)k * P::N);
        }
        softmax_cp_async_commit();
    };
    for (int s = 0; s < S; ++s) fetch(first_row + s * clusters, s);

    int nth = 0, stage = 0;  // the block's rows so far, and its row's stage of the ring
    for (int64_t row = first_row; row < rows; row += clusters, ++nth, stage = stage + 1 == S ? 0 : stage + 1) {
        const T* xr = x + row * cols;
        T* yr = y + row * cols;
        const RowSlice c = slice_row(xr, cols, rank, csize);
        float hv = rank == 0 && t < c.s.head ? P::to_float(xr[t]) : -INFINITY;  // in flight during the wait
        float tv = rank == 0 && t < c.s.tail ? P::to_float(xr[cols - c.s.tail + t]) : -INFINITY;
        softmax_cp_async_wait_pending<S - 1>();  // this row's group, the oldest, has landed
        uint4* mine = ring + stage * stage_vectors + t;

        float m = fmaxf(hv, tv), f[P::N];
        for (int k = c.first + t, i = 0; k < c.end; k += step, i += step) {
            P::unpack(mine[i], f);
#pragma unroll
            for (int j = 0; j < P::N; ++j) m = fmaxf(m, f[j]);
        }
        m = softmax_block_reduce<true>(m, scratch_max);
        const float shift = softmax_shift(m);
        hv = Exp::exp(hv, shift);
        tv = Exp::exp(tv, shift);
        float sum = hv + tv;
        for (int k = c.first + t, i = 0; k < c.end; k += step, i += step) {
            P::unpack(mine[i], f);
#pragma unroll
            for (int j = 0; j < P::N; ++j) {
                f[j] = Exp::exp(f[j], shift);
                sum += f[j];
            }
            if (ONE_EXP) mine[i] = P::pack(f);  // the stage is refilled only after the write pass
        }
        sum = softmax_block_reduce<false>(sum, scratch_sum);

        const float scale = row_scale<true>(m, sum, csize, &partials, nth);
        const bool out_aligned = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;
        T* out = yr + c.s.head;
        for (int k = c.first + t, i = 0; k < c.end; k += step, i += step) {
            P::unpack(mine[i], f);
#pragma unroll
            for (int j = 0; j < P::N; ++j) f[j] = (ONE_EXP ? f[j] : Exp::exp(f[j], shift)) * scale;
            T* p = out + (int64_t)k * P::N;
            if (out_aligned) {
                store16(p, P::pack(f));
            } else {
#pragma unroll
                for (int j = 0; j < P::N; ++j) p[j] = P::from_float(f[j]);
            }
        }
        if (rank == 0 && t < c.s.head) yr[t] = P::from_float(hv * scale);
        if (rank == 0 && t < c.s.tail) yr[cols - c.s.tail + t] = P::from_float(tv * scale);
        fetch(row + S * clusters, stage);  // the stage just read, refilled S rows ahead
    }
}
