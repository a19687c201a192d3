// Copies of 16 bytes from global into shared memory that need no registers (cp.async, sm_80 on; a plain copy
// before it), in commit groups a thread waits on: how the persistent pipe and ring kernels get their next rows'
// slices on their way while they work on a row. A thread reads back exactly the vectors it copied, so its own
// waits are all a stage needs: no block barrier.
#pragma once
#include <cuda_runtime.h>

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

template <int N>
__device__ __forceinline__ void softmax_cp_async_wait_pending() {
#if SOFTMAX_CP_ASYNC
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
