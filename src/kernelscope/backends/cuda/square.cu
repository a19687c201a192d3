// square kernels. Plain CUDA C++: no torch headers, so `nvcc -c` checks it alone.
#include <cuda_runtime.h>
#include <stdint.h>

#include "pack16.cuh"

// The lecture kernel: a 2-D grid of 16x16 blocks, one element per thread.
// threadIdx.x runs along a row, so a warp reads contiguous memory.
__global__ void square_lecture_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}

cudaError_t launch_square_lecture(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    dim3 block(16, 16);
    dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    square_lecture_kernel<<<grid, block, 0, stream>>>(x, y, cols, rows);
    return cudaGetLastError();
}

// Tuned: 16-byte vector loads and stores (4 float32 or 8 bfloat16), squared in
// float32. Bytes moved: n elements read once and written once.
// Launch shape: one resident wave, sm_count x blocks_per_sm blocks (2048 threads
// an SM), striding over the array. Each thread issues UNROLL 16-byte loads before
// its first store, so an SM keeps 2048 x 4 x 16 B = 128 KiB of reads in flight
// to cover DRAM latency at full bandwidth (the previous version, one load an
// iteration, kept a quarter of that and read 93% of the H100's copy bandwidth).
// The stride is one vector per thread, so every thread, and every SM, moves the
// same bytes to within one vector: no block runs a last lap alone. The scalar
// tail covers n % N elements; misaligned pointers take the scalar path throughout.
template <typename T, int UNROLL> __launch_bounds__(1024, UNROLL <= 4 ? 2 : 1) __global__ void square_vec4_kernel(
    const T* __restrict__ x, T* __restrict__ y, int64_t n) {
    using P = Pack16<T>;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;  // in 16-byte vectors
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t n_vec = aligned16(x, y) ? n / P::N : 0;
    // This thread's vectors: tid, tid + stride, ... below n_vec.
    int left = tid < n_vec ? (int)((n_vec - tid + stride - 1) / stride) : 0;
    const T* xs = x + tid * P::N;
    T* ys = y + tid * P::N;
    const int64_t step = stride * P::N;  // in elements
    for (; left >= UNROLL; left -= UNROLL, xs += UNROLL * step, ys += UNROLL * step) {
        uint4 r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) r[u] = load16(xs + u * step);  // all loads first: UNROLL in flight
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float v[P::N];
            P::unpack(r[u], v);
#pragma unroll
            for (int k = 0; k < P::N; ++k) v[k] = v[k] * v[k];
            store16(ys + u * step, P::pack(v));
        }
    }
    for (; left > 0; --left, xs += step, ys += step) {  // fewer than UNROLL vectors left
        float v[P::N];
        P::unpack(load16(xs), v);
#pragma unroll
        for (int k = 0; k < P::N; ++k) v[k] = v[k] * v[k];
        store16(ys, P::pack(v));
    }
    for (int64_t i = n_vec * P::N + tid; i < n; i += stride) {
        float v = P::to_float(x[i]);
        y[i] = P::from_float(v * v);
    }
}

template <typename T, int UNROLL>
static cudaError_t launch_square_vec4_t(const void* x, void* y, int64_t n, int threads, int blocks, cudaStream_t stream) {
    square_vec4_kernel<T, UNROLL><<<blocks, threads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
    return cudaGetLastError();
}

// threads, blocks_per_sm and unroll (1, 2, 4 or 8) come from kernels.py, so a tuning script sweeps them.
cudaError_t launch_square_vec4(const void* x, void* y, int64_t n, bool bf16, int threads, int blocks_per_sm,
                               int unroll, int sm_count, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const int per_pack = bf16 ? 8 : 4;
    int blocks = resident_grid((n + per_pack - 1) / per_pack, threads, blocks_per_sm, sm_count);
    switch (unroll * (bf16 ? -1 : 1)) {
        case 1: return launch_square_vec4_t<float, 1>(x, y, n, threads, blocks, stream);
        case 2: return launch_square_vec4_t<float, 2>(x, y, n, threads, blocks, stream);
        case 4: return launch_square_vec4_t<float, 4>(x, y, n, threads, blocks, stream);
        case 8: return launch_square_vec4_t<float, 8>(x, y, n, threads, blocks, stream);
        case -1: return launch_square_vec4_t<__nv_bfloat16, 1>(x, y, n, threads, blocks, stream);
        case -2: return launch_square_vec4_t<__nv_bfloat16, 2>(x, y, n, threads, blocks, stream);
        case -4: return launch_square_vec4_t<__nv_bfloat16, 4>(x, y, n, threads, blocks, stream);
        case -8: return launch_square_vec4_t<__nv_bfloat16, 8>(x, y, n, threads, blocks, stream);
        default: return cudaErrorInvalidValue;
    }
}
