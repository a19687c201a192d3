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
//
// Two launch shapes, picked by blocks_per_sm (kernels.py; tune_cuda.py times both):
//   tiled (blocks_per_sm 0, the default): square_tiled_kernel, map_tiles in
//     pack16.cuh. A block a tile of threads x UNROLL 16-byte vectors, one lap of
//     n_vec / tile blocks, the launch torch.square and Triton's flat kernels use.
//     (blocks_per_sm -k: the same tiles, a grid of k blocks an SM striding over them.)
//   grid-stride (blocks_per_sm k > 0): square_vec4_kernel below, one resident
//     wave of sm_count x k blocks, each thread UNROLL vectors a lap (one vector
//     stride apart) with all its loads before its first store.
// Measured on an H100 at 2^26 and 2^28 elements: the grid-stride wave stayed at
// 92-94% of copy bandwidth whatever its threads (128-1024), blocks an SM (2-16)
// or loads in flight (1-8), while torch's and Triton's one-lap kernels read
// 99-100%: the resident wave, not the loads in flight, is what held it back.
struct Square {
    __device__ __forceinline__ float operator()(float v) const { return v * v; }
};

template <typename T, int UNROLL> __launch_bounds__(1024, UNROLL <= 4 ? 2 : 1) __global__ void square_tiled_kernel(
    const T* __restrict__ x, T* __restrict__ y, int64_t n) {
    map_tiles<T, UNROLL>(x, y, n, Square());
}

// The grid-stride version: every thread, and every SM, moves the same bytes to
// within one vector, so no block runs a last lap alone. The scalar tail covers
// n % N elements; misaligned pointers take the scalar path throughout.
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
static cudaError_t launch_square_vec4_t(const void* xv, void* yv, int64_t n, int threads, int blocks_per_sm,
                                        int sm_count, cudaStream_t stream) {
    const T* x = static_cast<const T*>(xv);
    T* y = static_cast<T*>(yv);
    constexpr int N = Pack16<T>::N;
    if (blocks_per_sm > 0) {
        int blocks = resident_grid((n + N - 1) / N, threads, blocks_per_sm, sm_count);
        square_vec4_kernel<T, UNROLL><<<blocks, threads, 0, stream>>>(x, y, n);
    } else {
        int blocks = tiled_grid(n, N, threads, UNROLL, -blocks_per_sm, sm_count);
        square_tiled_kernel<T, UNROLL><<<blocks, threads, 0, stream>>>(x, y, n);
    }
    return cudaGetLastError();
}

// threads, blocks_per_sm (0: tiled, one lap; -k: tiled, k blocks an SM; k > 0:
// grid-stride, k blocks an SM) and unroll (1, 2, 4 or 8) come from kernels.py,
// so a tuning script sweeps them.
cudaError_t launch_square_vec4(const void* x, void* y, int64_t n, bool bf16, int threads, int blocks_per_sm,
                               int unroll, int sm_count, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    switch (unroll * (bf16 ? -1 : 1)) {
        case 1: return launch_square_vec4_t<float, 1>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case 2: return launch_square_vec4_t<float, 2>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case 4: return launch_square_vec4_t<float, 4>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case 8: return launch_square_vec4_t<float, 8>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case -1: return launch_square_vec4_t<__nv_bfloat16, 1>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case -2: return launch_square_vec4_t<__nv_bfloat16, 2>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case -4: return launch_square_vec4_t<__nv_bfloat16, 4>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case -8: return launch_square_vec4_t<__nv_bfloat16, 8>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        default: return cudaErrorInvalidValue;
    }
}
