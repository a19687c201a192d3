"""Whether this Triton holds a softmax row across a thread-block cluster (num_ctas > 1), as CUDA C++'s cluster plans do.

The wide softmax rows (512x50257, 64x262144) are wider than one SM's registers.
softmax-cuda splits such a row over the blocks of a cluster, which exchange
their (max, sum) through distributed shared memory; Triton's num_ctas asks its
compiler for the same: one program's tile spread over num_ctas CTAs, its
reductions crossing them. Three forms of the row kernel (a 1-D tile cut into
equal pieces, the [1, BLOCK] tile of softmax-triton-tuned's row plan, a
[pieces, piece] tile reduced through a reshape) at both wide shapes and both
dtypes: each compiled, checked against torch.softmax in float64, timed with
triton.testing.do_bench, or its compiler error's first line printed.

Triton 3.9 (this repository's CPU build) compiles the [1, BLOCK] form for sm_90
with barrier.cluster and mapa in its PTX; Triton 3.6 (the GPU boxes', with torch
2.11) failed every form on the H100 and the H200 (a757696: "PassManager::run
failed"; one form's log names TritonGPUPlanCTAPass).

    python3 results-proofs/triton-clusters/ctas_probe.py 2>/dev/null

Needs a GPU; seconds.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def k1d(x_ptr, y_ptr, n_cols, piece_cols, stride, SPLIT: tl.constexpr, PIECE: tl.constexpr):
    row = tl.program_id(0)
    i = tl.arange(0, SPLIT * PIECE)
    j = i % PIECE
    cols = (i // PIECE) * piece_cols + j
    mask = (j < piece_cols) & (cols < n_cols)
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, (num / tl.sum(num, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def krow(x_ptr, y_ptr, n_cols, piece_cols, stride, SPLIT: tl.constexpr, PIECE: tl.constexpr):
    # [1, BLOCK] as softmax_rows_tuned_kernel, whole power-of-two row
    row = tl.program_id(0)
    cols = tl.arange(0, SPLIT * PIECE)[None, :]
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = num * (1.0 / tl.sum(num, axis=1))[:, None]
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def k2d_full(x_ptr, y_ptr, n_cols, piece_cols, stride, SPLIT: tl.constexpr, PIECE: tl.constexpr):
    row = tl.program_id(0)
    j = tl.arange(0, PIECE)[None, :]
    cols = tl.arange(0, SPLIT)[:, None] * piece_cols + j
    mask = (j < piece_cols) & (cols < n_cols)
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(tl.reshape(x, [SPLIT * PIECE]), axis=0)
    num = tl.exp(x - m)
    s = tl.sum(tl.reshape(num, [SPLIT * PIECE]), axis=0)
    tl.store(y_ptr + row * stride + cols, (num / s).to(y_ptr.dtype.element_ty), mask=mask)


print(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
for name, kern in (("1d", k1d), ("row", krow), ("2d-reshape", k2d_full)):
    for rows, cols, split, warps in ((512, 50257, 4, 16), (64, 262144, 8, 32), (64, 262144, 16, 16)):
        for dtype in (torch.float32, torch.bfloat16):
            x = (torch.randn(rows, cols, device="cuda") * 3).to(dtype)
            y = torch.empty_like(x)
            piece_cols = triton.cdiv(cols, split)
            piece = triton.next_power_of_2(piece_cols)
            def call(kern=kern, x=x, y=y, cols=cols, piece_cols=piece_cols, split=split, piece=piece, warps=warps):
                kern[(x.shape[0],)](x, y, cols, piece_cols, cols, SPLIT=split, PIECE=piece, num_warps=warps,
                                    num_ctas=split)

            try:
                call()
                torch.cuda.synchronize()
                err = (y.double() - torch.softmax(x.double(), -1)).abs().max().item()
                ms = triton.testing.do_bench(call, warmup=25, rep=100)
                gbps = 2 * x.numel() * x.element_size() / ms / 1e6
                print(f"{name:<10} {rows}x{cols} {str(dtype)[6:]:<8} split={split} w={warps}: err {err:.2e} "
                      f"{ms * 1e3:8.2f} us {gbps:6.0f} GB/s", flush=True)
            except Exception as e:
                print(f"{name:<10} {rows}x{cols} {str(dtype)[6:]:<8} split={split} w={warps}: FAILED "
                      f"{str(e).splitlines()[0][:200] if str(e) else type(e).__name__}", flush=True)
