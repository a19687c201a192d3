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

// Blocks for map_tiles over n elements, tiles of threads x unroll vectors of
// per_pack elements: one block a tile (blocks_per_sm 0: one lap, as torch's
// elementwise kernels launch), or at most sm_count x blocks_per_sm blocks that
// stride over the tiles. At least one block (the scalar path needs one).
inline int tiled_grid(int64_t n, int per_pack, int threads, int unroll, int blocks_per_sm, int sm_count) {
    const int64_t tile = (int64_t)threads * unroll;
    int64_t tiles = ((n + per_pack - 1) / per_pack + tile - 1) / tile;
    if (blocks_per_sm > 0 && tiles > (int64_t)sm_count * blocks_per_sm) tiles = (int64_t)sm_count * blocks_per_sm;
    return (int)(tiles < 1 ? 1 : tiles);
}

// y = f(x) elementwise, computed in float32, a block a tile: tile t is the
// blockDim.x x UNROLL 16-byte vectors from vector t x tile on, and thread i of
// the block loads vectors i, i + blockDim.x, ... (each of the UNROLL loads is one
// coalesced 4 KiB sweep of a 256-thread block), all UNROLL loads before its first
// store. Blocks take tiles blockIdx.x, blockIdx.x + gridDim.x, ...: with
// tiled_grid's one-lap grid, exactly one tile each. The last, partial tile goes
// one vector a thread at a time to the block whose turn it is; the n % N
// elements past the last vector, or all n when x or y is not 16-byte aligned,
// are scalar loads over the whole grid.
template <typename T, int UNROLL, typename F>
__device__ __forceinline__ void map_tiles(const T* __restrict__ x, T* __restrict__ y, int64_t n, F f) {
    using P = Pack16<T>;
    const int64_t n_vec = aligned16(x, y) ? n / P::N : 0;
    const int64_t tile = (int64_t)blockDim.x * UNROLL;  // in vectors
    const int64_t full = n_vec / tile;  // tiles with all their vectors
    const int64_t lane_step = (int64_t)blockDim.x * P::N;  // elements between one thread's vectors
    for (int64_t t = blockIdx.x; t < full; t += gridDim.x) {
        const int64_t first = (t * tile + threadIdx.x) * P::N;
        uint4 r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) r[u] = load16(x + first + u * lane_step);  // all loads first
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float v[P::N];
            P::unpack(r[u], v);
#pragma unroll
            for (int k = 0; k < P::N; ++k) v[k] = f(v[k]);
            store16(y + first + u * lane_step, P::pack(v));
        }
    }
    if (blockIdx.x == full % gridDim.x) {  // the partial tile, fewer than `tile` vectors
        for (int64_t i = full * tile + threadIdx.x; i < n_vec; i += blockDim.x) {
            float v[P::N];
            P::unpack(load16(x + i * P::N), v);
#pragma unroll
            for (int k = 0; k < P::N; ++k) v[k] = f(v[k]);
            store16(y + i * P::N, P::pack(v));
        }
    }
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = n_vec * P::N + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = P::from_float(f(P::to_float(x[i])));
}
