// Narrow rows (up to 1024 elements): 32 lanes hold a row, its reductions are warp shuffles, no shared memory, a
// few rows a block.
#pragma once
#include "softmax_common.cuh"

// Warp per row: warp w of block b takes row b * (blockDim.x / 32) + w; lane l
// holds vectors l, l + 32, ... (EPT floats: EPT / N vectors). Shuffles only.
template <typename T, int EPT, typename Exp = SoftmaxExp>
__launch_bounds__(1024) __global__ void softmax_warp_kernel(
    const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
    using P = Pack16<T>;
    constexpr int NV = EPT / P::N;
    const int lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;  // whole warps leave: no block barrier below
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    const RowSplit s = split_row(xr, cols);
    const bool out_aligned = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;

    float v[EPT];
    load_vectors<T, NV>(xr + s.head, lane, 32, s.nvec, v);
    float hv = lane < s.head ? P::to_float(xr[lane]) : -INFINITY;  // unaligned ends, < N each
    float tv = lane < s.tail ? P::to_float(xr[cols - s.tail + lane]) : -INFINITY;

    float m = fmaxf(hv, tv);
#pragma unroll
    for (int i = 0; i < EPT; ++i) m = fmaxf(m, v[i]);
    m = softmax_warp_max(m);
    float sum = exp_in_place<Exp, EPT>(v, m);
    const float shift = softmax_shift(m);
    hv = Exp::exp(hv, shift);
    tv = Exp::exp(tv, shift);
    sum = softmax_warp_sum(sum + hv + tv);
    const float scale = 1.0f / sum;

    store_vectors<T, NV>(yr + s.head, lane, 32, s.nvec, v, scale, out_aligned);
    if (lane < s.head) yr[lane] = P::from_float(hv * scale);
    if (lane < s.tail) yr[cols - s.tail + lane] = P::from_float(tv * scale);
}
