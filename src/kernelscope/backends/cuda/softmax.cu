// softmax over the last dimension of a 2-D tensor. Plain CUDA C++ for sm_90
// (thread-block clusters), compile-checked alone by nvcc.
//
// Bytes moved: each row read from DRAM once and written once, 2 x rows x cols x
// element size, the least a softmax can move. A row's max, its sum of exps and
// the normalization are three passes over the row; the row stays in registers
// between them, so the three passes cost one pass over memory. Math in float32
// for float32 and bfloat16 alike; exps of x - max, so +1000 offsets and x100
// logits do not overflow, and -inf (masked) entries give 0. ex2.approx errs by
// about 1e-6 relative or less on the exps that matter (x - max in [-20, 0]), far
// inside the float32 tolerance of 1e-5 of the largest probability. Each exp is
// a subtract, a multiply and MUFU.EX2 with subnormal results flushed to 0
// (softmax_exp). __expf(x - max), ex2.approx without .ftz, puts three more
// instructions around the MUFU: with it the bfloat16 block kernel issued 41%
// more instructions than Triton's row kernel for the same work and read well
// under Triton's share of the copy bandwidth (ncu on the H200, 16384x16384
// bfloat16, the same launch shape). A flushed exp is below 2^-126 of the row's largest, exp(0) = 1.
//
// The host (kernels.softmax_plan in Python) picks one of four launch shapes from
// the row count and width:
//   warp per row     narrow rows (<= ~1024): 32 lanes hold a row, reductions are
//                    warp shuffles, no shared memory, a few rows a block.
//   block per row    many wide rows: reductions through shuffles and 32 floats
//                    of shared memory, two blocks or more resident an SM. Rows of
//                    exactly EPT x threads aligned elements (the square shapes in
//                    the suite's plans) run softmax_exact_kernel: no bounds, no ends.
//   cluster per row  few rows, or rows too wide for one block's registers: the
//                    row is split across the C blocks of a thread-block cluster,
//                    so rows x C blocks fill the 132 SMs. Each block reduces its
//                    slice to (max, sum of exp), pushes that pair into the shared
//                    memory of every block of its cluster (distributed shared
//                    memory), one cluster barrier, then each block rescales its
//                    own exps and writes its slice.
//   loop             rows wider than a 16-block cluster holds in registers
//                    (> 512K elements), and float32 rows split over 8 blocks or more:
//                    the same split, each block loops over its slice twice (online max
//                    and sum, then write): 3 passes over memory, the second read from
//                    L2. Launched a cluster a row, or ("loopp", bfloat16's 64x262144)
//                    persistent: as many clusters as fit, taking rows in turn.
//   pipe             the cluster split, but persistent: a cluster takes a row,
//                    then the row a grid's worth of clusters further on, and its
//                    blocks copy their slice of that next row into shared memory
//                    (cp.async) while the current row is reduced and written.
//   ring             persistent clusters too, but each block keeps its slices in
//                    a ring of 1, 2 or 3 stages of shared memory (no row in
//                    registers): up to 3 rows in flight a block, and blocks small
//                    enough in registers that several share an SM. One stage holds
//                    a slice up to 226 KiB: a 50257-wide float32 row in one block.
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <stdint.h>

#include "pack16.cuh"

namespace cg = cooperative_groups;

constexpr int SOFTMAX_MAX_CLUSTER = 16;  // 8 is portable; 16 needs the non-portable attribute (H100 allows it)
constexpr int SOFTMAX_RING_MAX_BYTES = 226 * 1024;  // sm_90 gives a block 227 KiB of shared memory; 1 KiB static

// Thread-block clusters exist from sm_90 on. Built for an older GPU too (one
// extension holds every kernel, and the others run there), a block is its own
// cluster of one; the host never asks for more there (softmax-cuda needs sm_90).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define SOFTMAX_CLUSTERS 1
#else
#define SOFTMAX_CLUSTERS 0
#endif

__device__ __forceinline__ int softmax_cluster_blocks() {
#if SOFTMAX_CLUSTERS
    return (int)cg::this_cluster().num_blocks();
#else
    return 1;
#endif
}

__device__ __forceinline__ int softmax_cluster_rank() {
#if SOFTMAX_CLUSTERS
    return (int)cg::this_cluster().block_rank();
#else
    return 0;
#endif
}

// What the blocks of a cluster exchange for a row: each block's (max, sum of exp)
// pair, pushed into every block's `pair` by st.async, which counts its bytes
// on the receiver's mbarrier `bar`. Two of each, by the parity of the block's
// row count, for the kernels whose blocks take many rows.
struct ClusterPartials {
    float2 pair[2][SOFTMAX_MAX_CLUSTER];
    unsigned long long bar[2];  // mbarrier objects
};

__device__ __forceinline__ unsigned softmax_smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// "This block has started": the cluster barrier arrived on early (ASYNC: after
// the block's mbarriers are initialized and fenced for the cluster);
// cluster_combine<ASYNC> waits on it before the first push into the other
// blocks' shared memory.
template <bool ASYNC>
__device__ __forceinline__ void softmax_cluster_start(ClusterPartials* partials) {
#if SOFTMAX_CLUSTERS
    if constexpr (ASYNC) {
        if (threadIdx.x == 0) {
            for (int i = 0; i < 2; ++i)
                asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(softmax_smem_addr(&partials->bar[i]))
                             : "memory");
            asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        }
        // Relaxed: the fence above publishes the mbarriers, and nothing else this block wrote must be seen by
        // the others. cluster.barrier_arrive() releases: a MEMBAR.ALL.GPU at every block's start (sm_90a SASS),
        // which ncu shows as membar stall in the loop kernel (64x262144 float32 on the H100). CUTLASS's pipelines
        // start the same way. Relaxed, the loop kernel there in clusters of 16 reads about 3 points more of the
        // copy bandwidth (tune_wide_rows.py --sweep) and ncu shows no membar stall.
        asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    } else {
        cg::this_cluster().barrier_arrive();
    }
#endif
}

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

#ifndef KERNELSCOPE_FREE_EXPS
constexpr float SOFTMAX_LOG2E = 1.4426950408889634f;

// exp(x - m) as 2^((x - m) log2(e)). x = -inf gives 0; m must be finite (the kernels shift by 0 for a row or
// slice whose max is -inf). Not one FFMA, x log2(e) - m log2(e): m log2(e) rounds to float, an error of up to
// 6e-5 in the exponent at m = 1000 that differs between the blocks of a cluster, each with its own max (the
// offset stress input reads 1.5e-5 to 4e-5 relative error that way, over the 1e-5 tolerance).
__device__ __forceinline__ float softmax_exp(float x, float m) {
    return softmax_exp2((x - m) * SOFTMAX_LOG2E);
}
#else
// scripts/gpu/floors.py's build only (build.extension(("KERNELSCOPE_FREE_EXPS",))): every exp a subtract,
// so each kernel moves its bytes, reduces and exchanges its pairs as it does, with no exp math. Its output is
// not a softmax; the time says how far the kernel's memory, reductions and barriers alone go.
__device__ __forceinline__ float softmax_exp(float x, float m) { return x - m; }
#endif

// What a row's or slice's exps subtract: its max, or 0 where the max is -inf (empty or fully masked), so the exps
// are 0, not NaN (-inf - -inf).
__device__ __forceinline__ float softmax_shift(float max) { return max == -INFINITY ? 0.0f : max; }

// exp(v - max) in place; returns their sum (0 for a max of -inf: softmax_shift).
template <int E>
__device__ __forceinline__ float exp_in_place(float* v, float max) {
    const float shift = softmax_shift(max);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < E; ++i) {
        v[i] = softmax_exp(v[i], shift);
        sum += v[i];
    }
    return sum;
}

// The row's (max, sum of exp(x - max)) from each block's own (max, sum), for the
// block's k-th row (k = 0, 1, ...: `nth` in the persistent kernels). Thread
// r < C pushes the block's pair into block r's `pair[k % 2]`; then each block
// combines the C pairs it received. k = 0: first the cluster barrier every block
// arrived on at its start (softmax_cluster_start), as a block's shared memory may
// be written only once that block runs.
//
// ASYNC false (a row a block held in registers: the block and cluster kernels):
// the pushes are plain stores and one cluster.sync() follows. ASYNC true would
// cost the block kernel registers (float32 at 16 elements a thread: 38, not 32,
// so two blocks of 1024 no longer fit an SM).
//
// ASYNC true (the persistent pipe and ring kernels; the loop kernel too, see
// there): a block's previous row's output is in flight at its next combine,
// and cluster.sync()'s arrive, a MEMBAR.ALL.GPU, would wait for it (ncu shows
// it as membar and barrier stalls in the ring kernel at 512x50257 float32 on
// the H100). So no cluster barrier a row: st.async pushes the pair and counts
// its bytes on the receiver's mbarrier `bar[k % 2]`, and each block waits for
// its own mbarrier's phase of C pairs. The ring and pipe kernels read 3-8
// points more of the copy bandwidth this way on the H100 and H200, with no
// membar stall left. A block two rows ahead cannot overwrite a half still
// being read: to finish the row between, it needs the reader's pair of that
// row, pushed after the reader combined (and its threads met at a block
// barrier since).
template <bool ASYNC>
__device__ __forceinline__ float2 cluster_combine(float2 mine, ClusterPartials* partials, int k) {
#if SOFTMAX_CLUSTERS
    cg::cluster_group cluster = cg::this_cluster();
    const int csize = (int)cluster.num_blocks(), rank = (int)cluster.block_rank();
    const int half = k & 1;
    if (k == 0) cluster.barrier_wait();  // every block of the cluster has started
    if constexpr (ASYNC) {
        const unsigned bar = softmax_smem_addr(&partials->bar[half]);
        if (threadIdx.x == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(csize * 8)
                         : "memory");
        if ((int)threadIdx.x < csize) {
            unsigned remote_pair, remote_bar;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                         : "=r"(remote_pair) : "r"(softmax_smem_addr(&partials->pair[half][rank])), "r"(threadIdx.x));
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(bar), "r"(threadIdx.x));
            asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];"
                         ::"r"(remote_pair), "f"(mine.x), "f"(mine.y), "r"(remote_bar) : "memory");
        }
        asm volatile(  // this half's (k / 2)-th phase: every block's pair has landed here
            "{\n .reg .pred done;\n"
            "wait%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n @!done bra wait%=;\n}"
            ::"r"(bar), "r"((k >> 1) & 1) : "memory");
    } else {
        if ((int)threadIdx.x < csize) cluster.map_shared_rank(partials->pair[half], (int)threadIdx.x)[rank] = mine;
        cluster.sync();
    }
    const float2* pairs = partials->pair[half];
    float m = -INFINITY, s = 0.0f;
    for (int r = 0; r < csize; ++r) m = fmaxf(m, pairs[r].x);
    for (int r = 0; r < csize; ++r) s += pairs[r].y * __expf(pairs[r].x - m);  // exp(-inf) = 0
    return make_float2(m, s);
#else
    return mine;
#endif
}

// What a block's exps, taken against its own max m and summing to `sum`, are
// multiplied by: 1 / sum for a row of its own, else rescaled to the row's
// (max, sum) that cluster_combine gathers from every block of the cluster, for
// the block's k-th row.
template <bool ASYNC>
__device__ __forceinline__ float row_scale(float m, float sum, int csize, ClusterPartials* partials, int k) {
    if (csize == 1) return 1.0f / sum;
    const float2 row = cluster_combine<ASYNC>(make_float2(m, sum), partials, k);
    return __expf(m - row.x) / row.y;
}

// Warp per row: warp w of block b takes row b * (blockDim.x / 32) + w; lane l
// holds vectors l, l + 32, ... (EPT floats: EPT / N vectors). Shuffles only.
template <typename T, int EPT> __launch_bounds__(1024) __global__ void softmax_warp_kernel(
    const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
    using P = Pack16<T>;
    constexpr int NV = EPT / P::N;
    const int lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;  // whole warps leave: no block barrier below
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    const RowSplit s = split_row(xr, cols);
    const bool out_aligned = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;

    float v[EPT];
    load_vectors<T, NV>(xr + s.head, lane, 32, s.nvec, v);
    float hv = lane < s.head ? P::to_float(xr[lane]) : -INFINITY;  // unaligned ends, < N each
    float tv = lane < s.tail ? P::to_float(xr[cols - s.tail + lane]) : -INFINITY;

    float m = fmaxf(hv, tv);
#pragma unroll
    for (int i = 0; i < EPT; ++i) m = fmaxf(m, v[i]);
    m = softmax_warp_max(m);
    float sum = exp_in_place<EPT>(v, m);
    const float shift = softmax_shift(m);
    hv = softmax_exp(hv, shift);
    tv = softmax_exp(tv, shift);
    sum = softmax_warp_sum(sum + hv + tv);
    const float scale = 1.0f / sum;

    store_vectors<T, NV>(yr + s.head, lane, 32, s.nvec, v, scale, out_aligned);
    if (lane < s.head) yr[lane] = P::from_float(hv * scale);
    if (lane < s.tail) yr[cols - s.tail + lane] = P::from_float(tv * scale);
}

// Block per row (cluster size 1) and cluster per row (C > 1, grid = rows x C,
// block rank r of a cluster takes vectors [nvec r / C, nvec (r + 1) / C) of the
// row, rank 0 also the unaligned ends). Thread t holds vectors t, t + blockDim.x,
// ... of the slice: EPT floats in registers, at most 32 with 1024 threads (64
// registers a thread) and 64 with 512. EXACT: softmax_exact_kernel's rows, with
// no bounds, unaligned ends or cluster.
template <typename T, int EPT, bool EXACT>
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
    float sum = exp_in_place<EPT>(v, m);
    if constexpr (!EXACT) {
        const float shift = softmax_shift(m);
        hv = softmax_exp(hv, shift);
        tv = softmax_exp(tv, shift);
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

template <typename T, int EPT> __launch_bounds__(EPT <= 32 ? 1024 : 512) __global__ void softmax_block_kernel(
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
    softmax_block_row<T, EPT, false>(xr, yr, cols, s, first, end, csize, rank, out_aligned, scratch_max, scratch_sum,
                                     &partials);
}

// A block a row of exactly EPT x blockDim.x elements, x and y 16-byte aligned
// (launch_block_rows decides): the suite's square shapes from 4096x4096 to
// 16384x16384 in both dtypes, as the H100's and the H200's plans launch them.
// Loads, exps and stores alone: the general kernel's slice bounds (two 64-bit
// divisions), -inf fills and bounds checks made a warp's path about 660
// instructions at 16384 bfloat16 columns against about 370 here and 480 in
// Triton's kernel of the same shape (sm_90a SASS, scripts/sass_counts.py), and
// on the H200, where DRAM asks more of each SM, the general kernel reads well
// under Triton's share of the copy bandwidth there.
// A kernel of its own, not a branch in the general one: sharing one register
// allocation, the two paths took 36-40 registers at 16 floats a thread, so one
// block of 1024 an SM, and the exact rows gained little. As its own kernel it
// reads 96-98% of copy on the H200 in both dtypes (the suite's runs).
template <typename T, int EPT> __launch_bounds__(EPT <= 32 ? 1024 : 512) __global__ void softmax_exact_kernel(
    const T* __restrict__ x, T* __restrict__ y, int cols) {
    __shared__ float scratch_max[32], scratch_sum[32];
    const int64_t row = blockIdx.x;
    const int nvec = cols / Pack16<T>::N;
    softmax_block_row<T, EPT, true>(x + row * cols, y + row * cols, cols, RowSplit{0, nvec, 0}, 0, nvec, 1, 0, true,
                                    scratch_max, scratch_sum, nullptr);
}

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
// lap in float32, ncu (64x262144 on the H100) shows the loads waiting on global memory; at 8 a thread takes 64
// registers, spill-free, still two blocks of 512 an SM under __launch_bounds__(1024)'s 64, and 64x262144 float32
// reads 2-6 points more of the copy bandwidth on the H100 and the H200 (tune_wide_rows.py --sweep).
template <typename T>
constexpr int softmax_loop_loads = sizeof(T) == 4 ? 8 : 4;

// The row's pairs go by st.async and mbarriers (cluster_combine<true>), not a cluster barrier: ncu shows the
// barrier form's membar stall (64x262144 float32, H100) with no store in flight, and the mbarrier form reads 2-3
// points more of the copy bandwidth at 64x262144 in both dtypes on the H100 (tune_wide_rows.py --sweep). It
// costs 2 registers (float32 at 4 loads a lap: 50, not 48).
template <typename T> __launch_bounds__(1024) __global__ void softmax_loop_kernel(
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
            sum *= softmax_exp(m, vm);  // m = -inf: 0 (sum is 0 too)
            for (int j = 0; j < n; ++j) sum += softmax_exp(v[j], vm);
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
        float block_sum = softmax_block_reduce<false>(sum * softmax_exp(m, shift), scratch_sum);  // m = -inf: 0
        float2 row_stats = make_float2(block_m, block_sum);
        if (csize > 1) row_stats = cluster_combine<true>(row_stats, &partials, nth);
        const float row_shift = softmax_shift(row_stats.x), inv = 1.0f / row_stats.y;

        auto write = [&](float* w, int j) {  // exp(w - max) / sum into this thread's j-th vector
#pragma unroll
            for (int i = 0; i < P::N; ++i) w[i] = softmax_exp(w[i], row_shift) * inv;
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
        if (rank == 0 && t < s.head) yr[t] = P::from_float(softmax_exp(P::to_float(xr[t]), row_shift) * inv);
        if (rank == 0 && t < s.tail) {
            const int64_t i = cols - s.tail + t;
            yr[i] = P::from_float(softmax_exp(P::to_float(xr[i]), row_shift) * inv);
        }
    }
}

// Pipe: the block kernel's cluster split and register-held slice, in a
// persistent grid: cluster c takes rows c, c + clusters, c + 2 clusters, ...
// While a row is reduced, combined across the cluster and written, each block's
// slice of the cluster's next row is already on its way into shared memory
// (cp.async: 16 bytes a copy, global to shared without registers), so DRAM keeps
// reading through the barriers and the stores. One row a block leaves it idle
// there, every block of a wave in the same phase (a row a block, the cluster
// plan reads 78% of the copy bandwidth at 512x50257 and 65% at 64x262144 on the
// H100). A thread copies exactly the vectors it will read back,
// so its own cp.async wait is all the stage needs: no block barrier.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define SOFTMAX_CP_ASYNC 1
#else
#define SOFTMAX_CP_ASYNC 0
#endif

__device__ __forceinline__ void softmax_cp_async16(uint4* smem, const void* gmem) {
#if SOFTMAX_CP_ASYNC
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
#else
    *smem = *reinterpret_cast<const uint4*>(gmem);
#endif
}

__device__ __forceinline__ void softmax_cp_async_commit() {
#if SOFTMAX_CP_ASYNC
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void softmax_cp_async_wait() {
#if SOFTMAX_CP_ASYNC
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

// Block rank r's slice of a row: vectors [first, end) of its aligned part (as softmax_block_kernel).
struct RowSlice {
    RowSplit s;
    int first, end;
};

template <typename T>
__device__ __forceinline__ RowSlice slice_row(const T* row, int cols, int rank, int csize) {
    const RowSplit s = split_row(row, cols);
    return {s, (int)((int64_t)s.nvec * rank / csize), (int)((int64_t)s.nvec * (rank + 1) / csize)};
}

template <typename T, int EPT> __launch_bounds__(EPT <= 32 ? 512 : 256) __global__ void softmax_pipe_kernel(
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

        float sum = exp_in_place<EPT>(v, m);
        const float shift = softmax_shift(m);
        hv = softmax_exp(hv, shift);
        tv = softmax_exp(tv, shift);
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

// Ring: the pipe kernel's persistent clusters, but a block's slices of its next
// S rows are all on their way at once, each into its stage of a ring in shared
// memory, and the current row is read from its stage three times (max, sum of
// exps, write) instead of being held in registers. The pipe kernel holds a row in
// registers (124 a thread at 512 threads: one block an SM) with one row in
// flight behind it, and at 512x50257 float32 on the H100 it reads less of the
// copy bandwidth than the one-row-a-block cluster plan: too few bytes in
// flight while a row is reduced. Here a block needs a few dozen registers, so
// several share an SM, each with S rows in flight. A thread copies exactly the
// vectors it reads back, so its own cp.async waits are all the ring needs; the
// exps are computed twice (sum, then write) rather than stored. ONE_EXP ("ring1e",
// one stage, the ring softmax_plan launches): the sum pass writes its exps
// back over the row's stage (float32 exactly, bfloat16 rounded, within its 1e-2
// tolerance), and the write pass only scales them: one MUFU an element, not two.
// The exps cost the one-stage ring about 2.5 points of the copy bandwidth at
// 512x50257 bfloat16 on the H100 (floors.py --kernels, with and without
// exps); ring1e takes back more than half of that.
template <int N>
__device__ __forceinline__ void softmax_cp_async_wait_pending() {
#if SOFTMAX_CP_ASYNC
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

template <typename T, int S, bool ONE_EXP = false> __launch_bounds__(1024) __global__ void softmax_ring_kernel(
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
        hv = softmax_exp(hv, shift);
        tv = softmax_exp(tv, shift);
        float sum = hv + tv;
        for (int k = c.first + t, i = 0; k < c.end; k += step, i += step) {
            P::unpack(mine[i], f);
#pragma unroll
            for (int j = 0; j < P::N; ++j) {
                f[j] = softmax_exp(f[j], shift);
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
            for (int j = 0; j < P::N; ++j) f[j] = (ONE_EXP ? f[j] : softmax_exp(f[j], shift)) * scale;
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

// ---- host side -------------------------------------------------------------

// The strategies: launch_softmax's `strategy` codes, as kernels.py's SOFTMAX_STRATEGIES reads them from the same file.
enum SoftmaxStrategy {
#define SOFTMAX_STRATEGY(ENUM, name, code) SOFTMAX_##ENUM = code,
#define SOFTMAX_ALIAS(name, target)
#include "softmax_strategies.def"
#undef SOFTMAX_STRATEGY
#undef SOFTMAX_ALIAS
};

// Clusters of 9 to 16 blocks are non-portable: each kernel allows them once.
template <auto Kernel>
static cudaError_t allow_cluster(int cluster) {
    if (cluster <= 8) return cudaSuccess;
    static const cudaError_t allowed = cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    return allowed;
}

// A launch of blocks of `threads` in clusters of `cluster`; `attribute` holds the cluster size and must outlive it.
static cudaLaunchConfig_t cluster_config(int threads, int cluster, int smem_bytes, cudaStream_t stream,
                                         cudaLaunchAttribute& attribute) {
    cudaLaunchConfig_t config = {};
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem_bytes;
    config.stream = stream;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return config;
}

// Launches `grid` blocks of Kernel as clusters of `cluster` (1: a plain launch).
template <auto Kernel, typename... Args>
static cudaError_t launch_clustered(int grid, int threads, int cluster, cudaStream_t stream, Args... args) {
    if (cluster == 1) {
        Kernel<<<grid, threads, 0, stream>>>(args...);
        return cudaGetLastError();
    }
    const cudaError_t allowed = allow_cluster<Kernel>(cluster);
    if (allowed != cudaSuccess) return allowed;
    cudaLaunchAttribute attribute;
    cudaLaunchConfig_t config = cluster_config(threads, cluster, 0, stream, attribute);
    config.gridDim = dim3(grid);
    return cudaLaunchKernelEx(&config, Kernel, args...);
}

// Clusters of `cluster` blocks of Kernel, `threads` each with `stage_bytes` of dynamic shared memory, that fit on
// the GPU at once (the driver's occupancy query): the persistent launch's grid.
template <auto Kernel>
static cudaError_t resident_clusters(int threads, int cluster, int stage_bytes, int* clusters) {
    const cudaError_t allowed = allow_cluster<Kernel>(cluster);
    if (allowed != cudaSuccess) return allowed;
    cudaLaunchAttribute attribute;
    cudaLaunchConfig_t config = cluster_config(threads, cluster, stage_bytes, 0, attribute);
    config.gridDim = dim3(cluster);
    return cudaOccupancyMaxActiveClusters(clusters, Kernel, &config);
}

// The pipe, ring and persistent loop kernels' grid: as many clusters as fit on the GPU at once with this block
// size and shared memory (resident_clusters, once per shape), at most one a row. Every cluster then has a row, and
// none waits for an SM.
template <auto Kernel, typename... Args>
static cudaError_t launch_persistent(int rows, int threads, int cluster, int stage_bytes, cudaStream_t stream,
                                     Args... args) {
    static int raised_to = 0;  // the dynamic shared memory the kernel may take, raised as stages grow
    if (stage_bytes > raised_to) {
        cudaError_t err = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, stage_bytes);
        if (err != cudaSuccess) return err;
        raised_to = stage_bytes;
    }
    struct Fit { int stage_bytes, clusters; };
    static Fit fits[11][SOFTMAX_MAX_CLUSTER + 1] = {};  // by log2(threads) and cluster size: the last query's
    int log_threads = 0;
    while ((1 << log_threads) < threads) ++log_threads;
    Fit& fit = fits[log_threads][cluster];
    if (fit.clusters == 0 || fit.stage_bytes != stage_bytes) {
        int resident = 0;
        const cudaError_t err = resident_clusters<Kernel>(threads, cluster, stage_bytes, &resident);
        if (err != cudaSuccess) return err;
        if (resident == 0) return cudaErrorInvalidConfiguration;  // not one cluster of this shape fits
        fit = {stage_bytes, resident};
    }
    cudaLaunchAttribute attribute;  // clusters over 8 were allowed by resident_clusters, before the fit was kept
    cudaLaunchConfig_t config = cluster_config(threads, cluster, stage_bytes, stream, attribute);
    config.gridDim = dim3((fit.clusters < rows ? fit.clusters : rows) * cluster);
    return cudaLaunchKernelEx(&config, Kernel, args...);
}

// softmax_exact_kernel where every row is exactly EPT x threads aligned elements (cols = EPT x threads and both
// tensors 16-byte aligned: then so is every row), else softmax_block_kernel.
template <typename T, int EPT>
static cudaError_t launch_block_rows(int grid, int threads, int cluster, cudaStream_t stream, const T* x, T* y,
                                     int cols) {
    if (cluster == 1 && cols == EPT * threads && aligned16(x, y))
        return launch_clustered<softmax_exact_kernel<T, EPT>>(grid, threads, 1, stream, x, y, cols);
    return launch_clustered<softmax_block_kernel<T, EPT>>(grid, threads, cluster, stream, x, y, cols);
}

// The register-held kernels come in a few sizes: the smallest EPT (floats a
// thread holds) that covers the slice is launched.
template <typename T>
static cudaError_t launch_softmax_t(const void* xv, void* yv, int rows, int cols, int strategy, int threads,
                                    int cluster, cudaStream_t stream) {
    const T* x = static_cast<const T*>(xv);
    T* y = static_cast<T*>(yv);
    constexpr int N = Pack16<T>::N;
    if (threads < 32 || threads > 1024 || threads % 32 != 0) return cudaErrorInvalidValue;
    if (cluster < 1 || cluster > SOFTMAX_MAX_CLUSTER) return cudaErrorInvalidValue;
    const int64_t grid = (int64_t)rows * cluster;
    const int lanes = strategy == SOFTMAX_WARP ? 32 : threads;
    const int64_t slice = ((int64_t)(cols / N) + cluster - 1) / cluster;      // vectors a block (or warp) holds
    const int64_t need = ((slice + lanes - 1) / lanes) * N;                    // floats a thread holds
    if (strategy == SOFTMAX_WARP) {
        if (cluster != 1) return cudaErrorInvalidValue;
        const int warps = threads / 32, blocks = (rows + warps - 1) / warps;
        if (need <= 8) return launch_clustered<softmax_warp_kernel<T, 8>>(blocks, threads, 1, stream, x, y, rows, cols);
        if (need <= 16) return launch_clustered<softmax_warp_kernel<T, 16>>(blocks, threads, 1, stream, x, y, rows, cols);
        if (need <= 32) return launch_clustered<softmax_warp_kernel<T, 32>>(blocks, threads, 1, stream, x, y, rows, cols);
        return cudaErrorInvalidValue;  // row too wide for a warp
    }
    if (grid > 0x7fffffff) return cudaErrorInvalidValue;
    if (strategy == SOFTMAX_BLOCK) {
        if (need <= 8) return launch_block_rows<T, 8>((int)grid, threads, cluster, stream, x, y, cols);
        if (need <= 16) return launch_block_rows<T, 16>((int)grid, threads, cluster, stream, x, y, cols);
        if (need <= 32) return launch_block_rows<T, 32>((int)grid, threads, cluster, stream, x, y, cols);
        if (need <= 64 && threads <= 512)
            return launch_block_rows<T, 64>((int)grid, threads, cluster, stream, x, y, cols);
        return cudaErrorInvalidValue;  // slice too wide for the block's registers: more threads, a larger cluster, or LOOP
    }
    if (strategy == SOFTMAX_LOOP)
        return launch_clustered<softmax_loop_kernel<T>>((int)grid, threads, cluster, stream, x, y, rows, cols);
    if (strategy == SOFTMAX_LOOP_PERSISTENT)
        return launch_persistent<softmax_loop_kernel<T>>(rows, threads, cluster, 0, stream, x, y, rows, cols);
    if (strategy == SOFTMAX_PIPE) {
        const int stage = (int)(need / N) * threads * 16;  // a thread's vectors of the next row, 16 bytes each
        if (need <= 16) return launch_persistent<softmax_pipe_kernel<T, 16>>(rows, threads, cluster, stage, stream, x, y, rows, cols);
        if (need <= 32 && threads <= 512)
            return launch_persistent<softmax_pipe_kernel<T, 32>>(rows, threads, cluster, stage, stream, x, y, rows, cols);
        if (need <= 64 && threads <= 256)
            return launch_persistent<softmax_pipe_kernel<T, 64>>(rows, threads, cluster, stage, stream, x, y, rows, cols);
        return cudaErrorInvalidValue;  // slice too wide: more threads or a larger cluster
    }
    if (strategy == SOFTMAX_RING1 || strategy == SOFTMAX_RING1E || strategy == SOFTMAX_RING2 ||
        strategy == SOFTMAX_RING3) {
        // A stage holds a block's slice and no more: its vectors are read back at the offsets they were copied to
        // (a thread's every step-th one), so nothing rounds it up to whole vectors a thread. At 512x50257 that is
        // 49.1 KiB, not 56, and four blocks of 512 share an SM, not three. Against the stage rounded up
        // (ring_stage_probe.py, one process each, in turn) float32 ring1e 512 x 4 reads about 1% less of copy on
        // the H100 and the H200 (the fourth block costs it) and bfloat16 512 x 2 a few tenths more. Kept, as the
        // plainer layout: softmax-cuda's own callable reads over the wide rows' targets there (85% of copy in
        // float32, 80% in bfloat16). Three blocks an SM for float32 (a cap on the persistent grid) would take back
        // that 1%; not built. KERNELSCOPE_RING_STAGE_ROUNDED is the build of
        // results-proofs/softmax-ring-stage/ring_stage_probe.py: the stage rounded up to whole vectors a thread.
#ifdef KERNELSCOPE_RING_STAGE_ROUNDED
        const int stage_vectors = (int)(need / N) * threads;
#else
        const int stage_vectors = (int)slice;
#endif
        const int stages = strategy == SOFTMAX_RING2 ? 2 : strategy == SOFTMAX_RING3 ? 3 : 1;
        const int64_t ring = (int64_t)stages * stage_vectors * 16;
        if (ring > SOFTMAX_RING_MAX_BYTES) return cudaErrorInvalidValue;  // a larger cluster: smaller slices
        if (strategy == SOFTMAX_RING1E)
            return launch_persistent<softmax_ring_kernel<T, 1, true>>(rows, threads, cluster, (int)ring, stream, x, y, rows, cols, stage_vectors);
        switch (stages) {
            case 1: return launch_persistent<softmax_ring_kernel<T, 1>>(rows, threads, cluster, (int)ring, stream, x, y, rows, cols, stage_vectors);
            case 2: return launch_persistent<softmax_ring_kernel<T, 2>>(rows, threads, cluster, (int)ring, stream, x, y, rows, cols, stage_vectors);
            default: return launch_persistent<softmax_ring_kernel<T, 3>>(rows, threads, cluster, (int)ring, stream, x, y, rows, cols, stage_vectors);
        }
    }
    return cudaErrorInvalidValue;
}

// strategy: 0 warp per row, 1 block (cluster == 1) or cluster per row, 2 loop, 3 pipe, 4 and 5 ring of 2 and 3 stages,
// 6 ring of one stage (a block's slice of one row in shared memory), 7 loop in a persistent grid (a cluster takes
// rows in turn), 8 ring of one stage with one exp an element (its exps stored over the stage).
// threads: a block's threads (warp: rows a block = threads / 32). All three come
// from kernels.softmax_plan, or a tuning script.
cudaError_t launch_softmax(const void* x, void* y, int rows, int cols, bool bf16, int strategy, int threads,
                           int cluster, cudaStream_t stream) {
    if (rows == 0 || cols == 0) return cudaSuccess;
    return bf16 ? launch_softmax_t<__nv_bfloat16>(x, y, rows, cols, strategy, threads, cluster, stream)
                : launch_softmax_t<float>(x, y, rows, cols, strategy, threads, cluster, stream);
}

// The loop kernel's clusters that fit on this GPU at once (threads a block, blocks a cluster): how many rows a
// round of them takes. Clusters must sit in one GPC, so this is not SMs x blocks an SM / cluster.
cudaError_t softmax_loop_resident_clusters(bool bf16, int threads, int cluster, int* clusters) {
    if (threads < 32 || threads > 1024 || threads % 32 != 0) return cudaErrorInvalidValue;
    if (cluster < 1 || cluster > SOFTMAX_MAX_CLUSTER) return cudaErrorInvalidValue;
    return bf16 ? resident_clusters<softmax_loop_kernel<__nv_bfloat16>>(threads, cluster, 0, clusters)
                : resident_clusters<softmax_loop_kernel<float>>(threads, cluster, 0, clusters);
}
