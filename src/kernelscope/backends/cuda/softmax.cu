// softmax over the last dimension of a 2-D tensor, float32 or bfloat16: the entry points bindings.cpp calls.
// Plain CUDA C++ for sm_90 (thread-block clusters), compile-checked alone by nvcc.
//
// Each row is read from DRAM once and written once, 2 x rows x cols x element size, the least a softmax can
// move. A row's max, its sum of exps and the normalization are three passes over the row; between them the row
// stays in registers, in shared memory, or (rows too wide for either) in L2, so the passes cost one pass over
// DRAM.
//
// The host (kernels.softmax_plan in Python) picks a strategy (softmax_strategies.def), threads and a cluster
// size; the launcher runs them. One idea a file:
//   softmax_common.cuh    a row cut into 16-byte vectors, their loads and stores, reductions, the exp
//   softmax_cluster.cuh   a row split across a thread-block cluster: the blocks' (max, sum) exchange
//   softmax_warp.cuh      narrow rows: a warp a row
//   softmax_block.cuh     a block (or a cluster) a row, the row in registers; rows of exactly a block's size
//   softmax_loop.cuh      rows too wide for registers: each block loops over its slice twice
//   softmax_cp_async.cuh  copies into shared memory without registers, for the persistent kernels
//   softmax_pipe.cuh      persistent clusters, a row in registers and the next one on its way to shared memory
//   softmax_ring.cuh      persistent clusters, a block's next rows in a ring of shared memory
//   softmax_launch.cuh    the launcher: strategy, threads and cluster to a kernel, its grid and attributes
#include "softmax_launch.cuh"

// strategy: a code of softmax_strategies.def; threads: a block's threads (warp: rows a block = threads / 32);
// cluster: blocks a row. All three come from kernels.softmax_plan, or a tuning script.
cudaError_t launch_softmax(const void* x, void* y, int rows, int cols, bool bf16, int strategy, int threads,
                           int cluster, cudaStream_t stream) {
    return launch_softmax_as<SoftmaxShipped>(x, y, rows, cols, bf16, strategy, threads, cluster, stream);
}

// The loop kernel's clusters that fit on this GPU at once (kernels.loop_resident_clusters).
cudaError_t softmax_loop_resident_clusters(bool bf16, int threads, int cluster, int* clusters) {
    return softmax_loop_resident_clusters_as<SoftmaxShipped>(bf16, threads, cluster, clusters);
}
