// 16-byte packs: the unit of the tuned kernels' loads and stores. Plain CUDA C++.
//
// One 16-byte load (ld.global.nc.v4) brings 4 float32 or 8 bfloat16; the kernels
// compute in float32 whatever the storage type, so a pack is unpacked into
// floats after the load and packed (rounded to nearest) before the store.
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

template <typename T> struct Pack16;

template <> struct Pack16<float> {
    static constexpr int N = 4;  // elements in 16 bytes
    __device__ __forceinline__ static void unpack(uint4 r, float* f) {
        f[0] = __uint_as_float(r.x); f[1] = __uint_as_float(r.y);
        f[2] = __uint_as_float(r.z); f[3] = __uint_as_float(r.w);
    }
    __device__ __forceinline__ static uint4 pack(const float* f) {
        return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
    }
    __device__ __forceinline__ static float to_float(float v) { return v; }
    __device__ __forceinline__ static float from_float(float v) { return v; }
};

template <> struct Pack16<__nv_bfloat16> {
    static constexpr int N = 8;
    // A bfloat16 is the top half of a float32: widening is a shift, exact.
    // Element 2j sits in the low half of 32-bit word j (little-endian).
    __device__ __forceinline__ static void unpack2(uint32_t w, float* f) {
        f[0] = __uint_as_float(w << 16);
        f[1] = __uint_as_float(w & 0xffff0000u);
    }
    __device__ __forceinline__ static uint32_t pack2(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
        return *reinterpret_cast<uint32_t*>(&h);
    }
    __device__ __forceinline__ static void unpack(uint4 r, float* f) {
        unpack2(r.x, f); unpack2(r.y, f + 2); unpack2(r.z, f + 4); unpack2(r.w, f + 6);
    }
    __device__ __forceinline__ static uint4 pack(const float* f) {
        return make_uint4(pack2(f[0], f[1]), pack2(f[2], f[3]), pack2(f[4], f[5]), pack2(f[6], f[7]));
    }
    __device__ __forceinline__ static float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
    __device__ __forceinline__ static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
};

// p must be 16-byte aligned. Loads go through the read-only path (the kernels never read what they write).
template <typename T> __device__ __forceinline__ uint4 load16(const T* p) {
    return __ldg(reinterpret_cast<const uint4*>(p));
}
// __stwb: a plain (write-back) store, but always one st.global.v4: a uint4
// assignment may be split into four 4-byte stores.
template <typename T> __device__ __forceinline__ void store16(T* p, uint4 v) {
    __stwb(reinterpret_cast<uint4*>(p), v);
}

// Both pointers 16-byte aligned: the vector path applies.
__host__ __device__ __forceinline__ bool aligned16(const void* a, const void* b) {
    return ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15) == 0;
}

// Blocks for a grid-stride loop over `items` (16-byte vectors): one item a thread
// when that is fewer, else one resident wave of sm_count x blocks_per_sm blocks.
inline int resident_grid(int64_t items, int threads, int blocks_per_sm, int sm_count) {
    int64_t needed = (items + threads - 1) / threads;
    int64_t wave = (int64_t)sm_count * blocks_per_sm;
    return (int)(needed < 1 ? 1 : (needed < wave ? needed : wave));
}
