// GELU (tanh approximation). Plain CUDA C++, compile-checked alone by nvcc.
#include <cuda_runtime.h>

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
