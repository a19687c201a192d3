// mean: one launch. Plain CUDA C++, compile-checked alone by nvcc.
//
// Bytes: the input once (4n); the partials (a few KB) stay in L2. Each block
// walks the array with 16-byte loads in a grid-stride loop, four of them in
// flight per thread, and writes one partial sum; the last block to finish
// (an atomic ticket, after a fence that publishes its partial) sums the
// partials and writes the mean. No block ever waits for another, so it cannot
// deadlock, and the second launch of a two-pass reduction (a few microseconds
// at 2^24 elements, where the whole call takes about 25) is gone.
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int MEAN_THREADS = 512;

// Blocks of the current launch that have written their partial. The last one
// resets it, so consecutive launches (and CUDA-graph replays) on one stream
// each start from 0. Launches of this kernel on two streams at once would
// share it: the suite never does that.
__device__ unsigned int mean_blocks_done = 0;

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

// Sum of this block's threads' values, valid in thread 0. Callable twice:
// the barrier first keeps a second call from overwriting sums still read.
__device__ float block_sum(float v) {
    __shared__ float warp_sums[MEAN_THREADS / 32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    return warp == 0 ? warp_sum(v) : 0.0f;
}

__device__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// STREAM: x is read with streaming loads (ld.global.cs, __ldcs): read once, so L2 need not keep it. On the
// H100 Triton's mean read 2^24 elements in 25.8 us with the same hint (evict_first) against 26.7 without.
template <bool STREAM>
__device__ __forceinline__ float4 mean_load(const float4* p) {
    return STREAM ? __ldcs(p) : __ldg(p);
}

// U: 16-byte loads a thread issues before it adds any of them (a lap of the grid-stride loop). Launch
// bounds: 32 registers a thread, so 4 blocks of 512 stay resident an SM at U = 8 too (34 would leave room for 3).
template <bool STREAM, int U>
__launch_bounds__(MEAN_THREADS, 4) __global__ void mean_kernel(const float* __restrict__ x, float* __restrict__ partials,
                                                                float* out, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    int64_t done = 0;  // elements covered by the vector loop
    if (((uintptr_t)x & 15) == 0) {  // torch's allocations are; a sliced view may not be
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int64_t n4 = n / 4;
        int64_t i = first;
        for (; i + (U - 1) * stride < n4; i += U * stride) {  // U independent 16-byte loads in flight
            float4 r[U];
#pragma unroll
            for (int u = 0; u < U; ++u) r[u] = mean_load<STREAM>(x4 + i + u * stride);
            float lap = 0.0f;
#pragma unroll
            for (int u = 0; u < U; ++u) lap += sum4(r[u]);
            acc += lap;
        }
        for (; i < n4; i += stride) acc += sum4(mean_load<STREAM>(x4 + i));
        done = n4 * 4;
    }
    for (int64_t i = done + first; i < n; i += stride) acc += x[i];
    acc = block_sum(acc);
    if (gridDim.x == 1) {  // a small input, one block: its sum is the total, no ticket, no partials read back
        if (threadIdx.x == 0) *out = (float)((double)acc / (double)n);
        return;
    }

    __shared__ bool last;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = acc;
        __threadfence();  // the partial is visible to every block before the ticket is taken
        last = atomicAdd(&mean_blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    float total = 0.0f;
    for (int i = threadIdx.x; i < gridDim.x; i += blockDim.x) total += ((volatile float*)partials)[i];
    total = block_sum(total);
    if (threadIdx.x == 0) {
        *out = (float)((double)total / (double)n);
        mean_blocks_done = 0;
    }
}

// partials must hold mean_partial_count(n, sm_count, blocks_per_sm) floats (for one block none: it may be null):
// enough blocks to keep every SM's memory pipes busy (blocks_per_sm x 512
// threads each; kernels.MEAN_BLOCKS_PER_SM), no more, so the last block's sum of
// partials stays short. Up to MEAN_ONE_BLOCK elements (32
// KiB, four 16-byte loads a thread) one block does it all: the partial's fence,
// the ticket's atomic and the partials' read-back are three trips to L2 in a
// row, longer than one block's loads at that size (graph mode at 4096 elements
// read 3.68 us with several blocks against mean-compile's one-block 1.30).
constexpr int64_t MEAN_ONE_BLOCK = 16 * MEAN_THREADS;
int mean_partial_count(int64_t n, int sm_count, int blocks_per_sm) {
    if (n <= MEAN_ONE_BLOCK) return 1;
    int64_t needed = (n + 4 * MEAN_THREADS - 1) / (4 * MEAN_THREADS);
    int64_t cap = (int64_t)sm_count * blocks_per_sm;
    return (int)(needed < 1 ? 1 : (needed < cap ? needed : cap));
}

template <bool STREAM>
static cudaError_t launch_mean_t(const float* x, float* partials, float* out, int64_t n, int blocks, int unroll,
                                 cudaStream_t stream) {
    if (unroll == 4) {
        mean_kernel<STREAM, 4><<<blocks, MEAN_THREADS, 0, stream>>>(x, partials, out, n);
    } else if (unroll == 8) {
        mean_kernel<STREAM, 8><<<blocks, MEAN_THREADS, 0, stream>>>(x, partials, out, n);
    } else {
        return cudaErrorInvalidValue;  // the loads a lap the kernel is built for: 4 or 8
    }
    return cudaGetLastError();
}

// streaming, blocks_per_sm, unroll: kernels.MEAN_STREAMING, MEAN_BLOCKS_PER_SM, MEAN_UNROLL, or a tuning script's.
cudaError_t launch_mean(const float* x, float* partials, float* out, int64_t n, int sm_count, bool streaming,
                        int blocks_per_sm, int unroll, cudaStream_t stream) {
    if (blocks_per_sm < 1) return cudaErrorInvalidValue;
    const int blocks = mean_partial_count(n, sm_count, blocks_per_sm);
    return streaming ? launch_mean_t<true>(x, partials, out, n, blocks, unroll, stream)
                     : launch_mean_t<false>(x, partials, out, n, blocks, unroll, stream);
}
