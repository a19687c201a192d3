// Rows wider than a 16-block cluster holds in registers (> 512K elements), and float32 rows split over 8 blocks
// or more: the cluster split, each block looping over its slice twice (online max and sum, then write): three
// passes over memory, the second read from L2. Launched a cluster a row ("loop"), or persistent ("loopp"): as
// many clusters as fit at once, taking rows in turn.
#pragma once
#include "softmax_cluster.cuh"
#include "softmax_common.cuh"

// Any width: the cluster split of softmax_block_kernel, but each block loops
// over its slice twice: first a running (max, sum of exp) per thread, rescaled
// when the max grows; then, with the row's (max, sum), exp and write. Each lap
// of either pass issues softmax_loop_loads<T> 16-byte loads a thread before it
// uses any (a dependent chain of one load, one exp, one rescale a vector keeps
// too few bytes in flight to cover DRAM latency). Reads the row twice; the
// second read is the block's own slice, read a moment before, so it comes from
// L2 while the blocks in flight hold less than L2 (64x262144 in clusters of 16
// is 64 KiB a block, 8.4 MiB a wave of 132 blocks).
// Those loads a lap: 8 in float32, 4 in bfloat16 (8 of its 8-element loads spill: ptxas, 64 registers). At 4 a
// lap a float32 thread's loads still wait on global memory; at 8 it takes 64 registers, spill-free, still two
// blocks of 512 an SM under __launch_bounds__(1024)'s 64, and moves more bytes a second
// (results-proofs/softmax-wide-rows).
template <typename T>
constexpr int softmax_loop_loads = sizeof(T) == 4 ? 8 : 4;

// The row's pairs go by st.async and mbarriers (cluster_combine<true>), not a cluster barrier, whose membar stalls
// the loop kernel too (results-proofs/softmax-wide-rows). It costs 2 registers (float32 at 4 loads a lap: 50, not
// 48).
template <typename T, typename Exp = SoftmaxExp>
__launch_bounds__(1024) __global__ void softmax_loop_kernel(
    const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
    using P = Pack16<T>;
    constexpr int U = softmax_loop_loads<T>;
    __shared__ float scratch_max[32], scratch_sum[32];
    __shared__ ClusterPartials partials;
    const int csize = softmax_cluster_blocks(), rank = softmax_cluster_rank();
    if (csize > 1) softmax_cluster_start<true>(&partials);
    const int64_t clusters = gridDim.x / csize;
    const int t = threadIdx.x, step = blockDim.x;

    // A cluster a row (grid = rows x C) or, launched persistent ("loopp": as many clusters as fit at once), rows
    // c, c + clusters, ...: no cluster waits for 16 free blocks of a GPC between rows.
    int nth = 0;  // the block's rows so far: the parity of its pairs' half and mbarrier phase
    for (int64_t row = blockIdx.x / csize; row < rows; row += clusters, ++nth) {
        const T* xr = x + row * cols;
        T* yr = y + row * cols;
        const RowSplit s = split_row(xr, cols);
        const bool out_aligned = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;
        const int first = (int)((int64_t)s.nvec * rank / csize), end = (int)((int64_t)s.nvec * (rank + 1) / csize);
        const T* xv = xr + s.head;  // the slice's 16-byte vectors: vector k at xv + k * N
        T* yv = yr + s.head;

        float m = -INFINITY, sum = 0.0f;  // this thread's running max and sum of exp(x - m)
        auto add = [&](const float* v, int n) {
            float vm = m;
            for (int j = 0; j < n; ++j) vm = fmaxf(vm, v[j]);
            if (vm == -INFINITY) return;  // nothing finite yet
            sum *= Exp::exp(m, vm);  // m = -inf: 0 (sum is 0 too)
            for (int j = 0; j < n; ++j) sum += Exp::exp(v[j], vm);
            m = vm;
        };
        float v[U * P::N];
        // This thread's vectors are first + t + j * step for j < count; pass 1 takes them U a lap from j = 0,
        // the last lap short (its loads issued together too, not one after another: a DRAM latency each).
        const int count = first + t < end ? (end - first - t + step - 1) / step : 0, laps_end = count / U * U;
        constexpr unsigned NEG_INF = sizeof(T) == 4 ? 0xff800000u : 0xff80ff80u;  // -inf in each element
        for (int j = 0; j < count; j += U) {  // U vectors a thread a lap, all loaded first; the last lap may be short
            uint4 r[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                r[u] = j + u < count ? load16(xv + (int64_t)(first + t + (j + u) * step) * P::N)
                                     : make_uint4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);  // adds nothing
#pragma unroll
            for (int u = 0; u < U; ++u) P::unpack(r[u], v + u * P::N);
            add(v, U * P::N);
        }
        if (rank == 0 && t < s.head) { v[0] = P::to_float(xr[t]); add(v, 1); }
        if (rank == 0 && t < s.tail) { v[0] = P::to_float(xr[cols - s.tail + t]); add(v, 1); }

        const float block_m = softmax_block_reduce<true>(m, scratch_max);
        const float shift = softmax_shift(block_m);
        float block_sum = softmax_block_reduce<false>(sum * Exp::exp(m, shift), scratch_sum);  // m = -inf: 0
        float2 row_stats = make_float2(block_m, block_sum);
        if (csize > 1) row_stats = cluster_combine<true>(row_stats, &partials, nth);
        const float row_shift = softmax_shift(row_stats.x), inv = 1.0f / row_stats.y;

        auto write = [&](float* w, int j) {  // exp(w - max) / sum into this thread's j-th vector
#pragma unroll
            for (int i = 0; i < P::N; ++i) w[i] = Exp::exp(w[i], row_shift) * inv;
            T* p = yv + (int64_t)(first + t + j * step) * P::N;
            if (out_aligned) {
                store16(p, P::pack(w));
            } else {
#pragma unroll
                for (int i = 0; i < P::N; ++i) p[i] = P::from_float(w[i]);
            }
        };
        // Pass 2 re-reads the slice's laps backwards, the short one first: the vectors pass 1 read last are the
        // likeliest to be in L2 still where a block's slice is several laps.
        constexpr int H = U / 2;  // the short lap in halves: a whole lap's guarded loads and stores spill (ptxas)
        for (int j = laps_end; j < count; j += H) {
            uint4 r[H];
#pragma unroll
            for (int u = 0; u < H; ++u)
                if (j + u < count) r[u] = load16(xv + (int64_t)(first + t + (j + u) * step) * P::N);
#pragma unroll
            for (int u = 0; u < H; ++u) {
                if (j + u < count) {
                    P::unpack(r[u], v);
                    write(v, j + u);
                }
            }
        }
        for (int j = laps_end - U; j >= 0; j -= U) {
            uint4 r[U];
#pragma unroll
            for (int u = 0; u < U; ++u) r[u] = load16(xv + (int64_t)(first + t + (j + u) * step) * P::N);
#pragma unroll
            for (int u = 0; u < U; ++u) {
                P::unpack(r[u], v);
                write(v, j + u);
            }
        }
        if (rank == 0 && t < s.head) yr[t] = P::from_float(Exp::exp(P::to_float(xr[t]), row_shift) * inv);
        if (rank == 0 && t < s.tail) {
            const int64_t i = cols - s.tail + t;
            yr[i] = P::from_float(Exp::exp(P::to_float(xr[i]), row_shift) * inv);
        }
    }
}
