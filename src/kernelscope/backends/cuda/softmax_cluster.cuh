// A row split across the C blocks of a thread-block cluster: each block reduces its slice to (max, sum of exp),
// pushes that pair into the shared memory of every block of its cluster (distributed shared memory), and
// rescales its own exps by the row's (max, sum) combined from the C pairs. The block, loop, pipe and ring
// kernels take their clusters' rows this way.
#pragma once
#include <cooperative_groups.h>

#include "softmax_common.cuh"

namespace cg = cooperative_groups;

constexpr int SOFTMAX_MAX_CLUSTER = 16;  // 8 is portable; 16 needs the non-portable attribute (H100 allows it)

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
        // the others. cluster.barrier_arrive() releases, a MEMBAR.ALL.GPU at every block's start (sm_90a SASS)
        // that stalls the loop kernel (results-proofs/softmax-wide-rows). CUTLASS's pipelines start the same way.
        asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    } else {
        cg::this_cluster().barrier_arrive();
    }
#endif
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
// ASYNC true (the persistent pipe and ring kernels, and the loop kernel): a
// block's previous row's output is in flight at its next combine, and
// cluster.sync()'s arrive, a MEMBAR.ALL.GPU, would wait for it. So no cluster
// barrier a row: st.async pushes the pair and counts its bytes on the
// receiver's mbarrier `bar[k % 2]`, and each block waits for its own
// mbarrier's phase of C pairs (the membar stall gone:
// results-proofs/softmax-wide-rows). A block two rows ahead cannot overwrite a
// half still being read: to finish the row between, it needs the reader's
// pair of that row, pushed after the reader combined (and its threads met at a
// block barrier since).
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
