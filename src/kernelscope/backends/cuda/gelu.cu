// GELU (tanh approximation). Plain CUDA C++, compile-checked alone by nvcc.
#include <cuda_runtime.h>
#include <stdint.h>

#include "pack16.cuh"

// The lecture kernel: a 1-D grid of 1024-thread blocks, one element per thread.
__global__ void gelu_lecture_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
}

cudaError_t launch_gelu_lecture(const float* x, float* y, int n, cudaStream_t stream) {
    const int threads = 1024;
    gelu_lecture_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, n);
    return cudaGetLastError();
}

// gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written as
// x * sigmoid(2u) = x / (1 + exp(-2u)), the same function with one exp and one
// divide in place of tanhf's longer sequence. __expf and __fdividef are within a
// few ulp where the result matters (|2u| < ~20); far out, exp(-2u) is 0 or inf
// and the quotient x or 0, as it should be. (tanh.approx.f32, the hardware tanh,
// is off by up to ~5e-4: too coarse for the float32 tolerance of 1e-5.)
__device__ __forceinline__ float gelu_tanh(float x) {
    const float k = 0.7978845608028654f;  // sqrt(2/pi)
    float u = k * x * fmaf(0.044715f, x * x, 1.0f);
    return __fdividef(x, 1.0f + __expf(-2.0f * u));
}

// Tuned: square_vec4's two launch shapes (square.cu) with gelu_tanh in place of
// the square, computed in float32 for both dtypes. Bytes moved: n elements read
// once and written once; about 12 instructions an element leave it memory-bound,
// at 16 B per 4 (float32) or 8 (bfloat16) elements.
//   tiled (blocks_per_sm 0, the default): gelu_tiled_kernel, a block a tile of
//     threads x UNROLL vectors, one lap of n_vec / tile blocks (map_tiles, pack16.cuh).
//   grid-stride (blocks_per_sm k > 0): gelu_vec4_kernel, one resident wave of
//     sm_count x k blocks, UNROLL loads in flight a thread before its first store.
// On an H100 the grid-stride wave read 87-94% of copy bandwidth at 2^26 and
// 2^28 elements in every configuration swept, torch's F.gelu (one lap of tiles) 98-100%.
struct GeluTanh {
    __device__ __forceinline__ float operator()(float v) const { return gelu_tanh(v); }
};

template <typename T, int UNROLL> __launch_bounds__(1024, UNROLL <= 4 ? 2 : 1) __global__ void gelu_tiled_kernel(
    const T* __restrict__ x, T* __restrict__ y, int64_t n) {
    map_tiles<T, UNROLL>(x, y, n, GeluTanh());
}

template <typename T, int UNROLL> __launch_bounds__(1024, UNROLL <= 4 ? 2 : 1) __global__ void gelu_vec4_kernel(
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
            for (int k = 0; k < P::N; ++k) v[k] = gelu_tanh(v[k]);
            store16(ys + u * step, P::pack(v));
        }
    }
    for (; left > 0; --left, xs += step, ys += step) {  // fewer than UNROLL vectors left
        float v[P::N];
        P::unpack(load16(xs), v);
#pragma unroll
        for (int k = 0; k < P::N; ++k) v[k] = gelu_tanh(v[k]);
        store16(ys, P::pack(v));
    }
    for (int64_t i = n_vec * P::N + tid; i < n; i += stride) y[i] = P::from_float(gelu_tanh(P::to_float(x[i])));
}

template <typename T, int UNROLL>
static cudaError_t launch_gelu_vec4_t(const void* xv, void* yv, int64_t n, int threads, int blocks_per_sm,
                                      int sm_count, cudaStream_t stream) {
    const T* x = static_cast<const T*>(xv);
    T* y = static_cast<T*>(yv);
    constexpr int N = Pack16<T>::N;
    if (blocks_per_sm > 0) {
        int blocks = resident_grid((n + N - 1) / N, threads, blocks_per_sm, sm_count);
        gelu_vec4_kernel<T, UNROLL><<<blocks, threads, 0, stream>>>(x, y, n);
    } else {
        int blocks = tiled_grid(n, N, threads, UNROLL, -blocks_per_sm, sm_count);
        gelu_tiled_kernel<T, UNROLL><<<blocks, threads, 0, stream>>>(x, y, n);
    }
    return cudaGetLastError();
}

// threads, blocks_per_sm (0: tiled, one lap; -k: tiled, k blocks an SM; k > 0:
// grid-stride, k blocks an SM) and unroll (1, 2, 4 or 8) come from kernels.py.
cudaError_t launch_gelu_vec4(const void* x, void* y, int64_t n, bool bf16, int threads, int blocks_per_sm,
                             int unroll, int sm_count, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    switch (unroll * (bf16 ? -1 : 1)) {
        case 1: return launch_gelu_vec4_t<float, 1>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case 2: return launch_gelu_vec4_t<float, 2>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case 4: return launch_gelu_vec4_t<float, 4>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case 8: return launch_gelu_vec4_t<float, 8>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case -1: return launch_gelu_vec4_t<__nv_bfloat16, 1>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case -2: return launch_gelu_vec4_t<__nv_bfloat16, 2>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case -4: return launch_gelu_vec4_t<__nv_bfloat16, 4>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        case -8: return launch_gelu_vec4_t<__nv_bfloat16, 8>(x, y, n, threads, blocks_per_sm, sm_count, stream);
        default: return cudaErrorInvalidValue;
    }
}
