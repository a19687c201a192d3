// mean: a two-launch reduction. Plain CUDA C++, compile-checked alone by nvcc.
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int MEAN_THREADS = 512;

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

// Sum of this block's threads' values, valid in thread 0.
__device__ float block_sum(float v) {
    __shared__ float warp_sums[MEAN_THREADS / 32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    return warp == 0 ? warp_sum(v) : 0.0f;
}

// Launch 1: each block walks the array with a grid stride and writes one partial sum.
__global__ void mean_partial_kernel(const float* __restrict__ x, float* __restrict__ partials, int64_t n) {
    float acc = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        acc += x[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// Launch 2: one block sums the partials and divides.
__global__ void mean_finish_kernel(const float* __restrict__ partials, int n_partials, float* out, int64_t n) {
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n_partials; i += blockDim.x) acc += partials[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) *out = (float)((double)acc / (double)n);
}

// partials must hold mean_partial_count(n, sm_count) floats.
int mean_partial_count(int64_t n, int sm_count) {
    int64_t needed = (n + MEAN_THREADS - 1) / MEAN_THREADS;
    int64_t cap = (int64_t)sm_count * 4;
    return (int)(needed < cap ? needed : cap);
}

cudaError_t launch_mean(const float* x, float* partials, float* out, int64_t n, int sm_count, cudaStream_t stream) {
    int blocks = mean_partial_count(n, sm_count);
    mean_partial_kernel<<<blocks, MEAN_THREADS, 0, stream>>>(x, partials, n);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    mean_finish_kernel<<<1, MEAN_THREADS, 0, stream>>>(partials, blocks, out, n);
    return cudaGetLastError();
}
