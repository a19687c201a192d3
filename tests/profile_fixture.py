"""A profiles folder for the site's tests, written with :mod:`kernelscope.profiling.artifacts`' own writers.

``write(root)`` makes ``root/nvidia-h100-80gb-hbm3/`` as ``kernelscope profile --ncu --demos`` would: the
committed results' H100, so the cross-check finds warm timings to compare with. Test data only, never the
real site's: the real folder is ``profiles/`` at the repository's root, from the GPU box.

Where the values come from:

* real Nsight Compute numbers and rule hints, as ncu printed them on the H100 at 4096x4096
  (``tests/fixtures/ncu/h100-details.txt.gz``): ``square-torch``, ``square-triton-flat1024``,
  ``gelu-compile``; their ``ncu.txt.gz`` is that printout's section for the kernel;
* real compiler output made without a GPU (``tests/fixtures/profiles/``): the PTX and SASS of
  ``square_flat_kernel`` (Triton 3.9 for sm_90, ``cuobjdump -sass``), the PTX of ``square.cu`` and its
  ptxas report (nvcc 13.0, ``-arch=sm_90 -Xptxas -v``);
* shaped like the real thing, values chosen: ``square-cuda-vec4`` at 16384x16384 and ``mean-triton-tuned``
  at 2^28 (ncu times about 1% under their H100 warm medians, so the cross-check has judged cases), the
  torch.profiler tables and traces, Inductor's code, and the demos (the fixed-block widths follow a simple
  model: each row's first 1024 columns moved at 2.6 TB/s plus 4 µs).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from kernelscope.profiling import artifacts as a

HERE = Path(__file__).resolve().parent
CODE = HERE / "fixtures" / "profiles"
NCU_DETAILS = HERE / "fixtures" / "ncu" / "h100-details.txt.gz"
MACHINE = "nvidia-h100-80gb-hbm3"
COMMIT = "76c6eb7e1f0d2a3b4c5d6e7f8091a2b3c4d5e6f7"
COPY_GBPS = 3004.0  # the H100's measured copy bandwidth in results/

POW_KERNEL = ("void at::native::vectorized_elementwise_kernel<(int)4, void at::native::<unnamed>::"
              "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase &, T2)::[lambda(float) "
              "(instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)")
MUL_KERNEL = ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor<float, float, "
              "float, at::native::binary_internal::MulFunctor<float>>, std::array<char *, (unsigned long)3>>"
              "(int, T2, T3)")
OCCUPANCY_TEXT = ("The difference between calculated theoretical (100.0%) and measured achieved occupancy ({:.1f}%) "
                  "can be the result of warp scheduling overheads or workload imbalances during the kernel "
                  "execution. Load imbalances can occur between warps within a block as well as across blocks of "
                  "the same kernel. See the CUDA Best Practices Guide "
                  "(https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#occupancy) for more details "
                  "on optimizing occupancy.")
SOL_TEXT = ("This workload is utilizing greater than 80.0% of the available compute or memory performance of the "
            "device. To further improve performance, work will likely need to be shifted from the most utilized to "
            "another unit. Start by analyzing DRAM in the Memory Workload Analysis section.")


def _occupancy_hint(achieved: float, pct: float) -> a.Hint:
    return a.Hint("Occupancy", "AchievedOccupancy", "OPT", OCCUPANCY_TEXT.format(achieved), "local", pct)


def _sol_hint() -> a.Hint:
    return a.Hint("GPU Speed Of Light Throughput", "SOLBottleneck", "INF", SOL_TEXT)


def ncu_section(kernel_prefix: str) -> str:
    """The part of the H100's ncu details printout for one kernel (its header line starts with the prefix)."""
    text = gzip.decompress(NCU_DETAILS.read_bytes()).decode()
    starts = [m.start() for m in re.finditer(r"^  \S", text, re.M)]
    for i, s in enumerate(starts):
        if text[s + 2:].startswith(kernel_prefix):
            return text[s:starts[i + 1] if i + 1 < len(starts) else len(text)]
    raise KeyError(kernel_prefix)


def profiler_table(rows: list[tuple[str, float, float, int]], steps: int) -> str:
    """A key_averages() table laid out as torch prints it: (name, self CPU µs, self CUDA µs, calls)."""
    cpu_total = sum(r[1] for r in rows) or 1.0
    cuda_total = sum(r[2] for r in rows) or 1.0
    cols = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA",
            "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls"]
    width = 55  # torch's max_name_column_width: longer names end in "..."
    rule = "-" * width + "  " + "  ".join("-" * 12 for _ in cols[1:]) + "  "
    us = lambda v: f"{v:.3f}us" if v < 1000 else f"{v / 1000:.3f}ms"  # noqa: E731
    lines = [rule, f"{cols[0]:>{width}}  " + "  ".join(f"{c:>12}" for c in cols[1:]) + "  ", rule]
    for name, cpu, cuda, calls in rows:
        cells = [f"{100 * cpu / cpu_total:.2f}%", us(cpu), f"{100 * cpu / cpu_total:.2f}%", us(cpu),
                 us(cpu / calls), us(cuda), f"{100 * cuda / cuda_total:.2f}%", us(cuda), us(cuda / calls), str(calls)]
        shown = name if len(name) <= width else name[:width - 3] + "..."
        lines.append(f"{shown:>{width}}  " + "  ".join(f"{c:>12}" for c in cells) + "  ")
    lines += [rule, f"Self CPU time total: {us(cpu_total)}", f"Self CUDA time total: {us(cuda_total)}", ""]
    return "\n".join(lines)


def chrome_trace(range_name: str, ops: list[str], kernel: str, kernel_us: float, steps: int = 3) -> str:
    """A small chrome trace of the active steps: host ops and launches, the kernels on a stream, flow arrows."""
    events, t = [], 1000.0
    for step in range(steps):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step + 2}", "pid": 1, "tid": 1,
                       "ts": t, "dur": 40.0 + kernel_us})
        events.append({"ph": "X", "cat": "user_annotation", "name": range_name, "pid": 1, "tid": 1, "ts": t + 2,
                       "dur": 30.0})
        for i, op in enumerate(ops):
            events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t + 4 + i, "dur": 20.0})
        launch = t + 10
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": launch, "dur": 5.0, "args": {"correlation": step + 1}})
        events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": launch + 6,
                       "dur": kernel_us, "args": {"correlation": step + 1, "stream": 7}})
        events.append({"ph": "s", "id": step + 1, "pid": 1, "tid": 1, "ts": launch, "cat": "ac2g", "name": "ac2g"})
        events.append({"ph": "f", "id": step + 1, "pid": 0, "tid": 7, "ts": launch + 6, "cat": "ac2g",
                       "name": "ac2g", "bp": "e"})
        t += 60.0 + kernel_us
    return json.dumps({"schemaVersion": 1, "traceEvents": events, "displayTimeUnit": "ms"})


def _torch_profile(vdir: Path, variant: str, op: str, ops: list[str], kernels: dict[str, float],
                   cpu_us: float) -> a.TorchProfile:
    """torch_profiler.txt and trace.json.gz for 3 active steps; ``kernels``: name -> µs per launch."""
    steps = 3
    rows = [(k, 0.0, us * steps, steps) for k, us in kernels.items()]
    rows += [(f"{op}:{variant}", cpu_us * 0.4 * steps, 0.0, steps)]
    rows += [(o, cpu_us * 0.6 / len(ops) * steps, 0.0, steps) for o in ops]
    rows += [("cudaLaunchKernel", 4.1 * steps * len(kernels), 0.0, steps * len(kernels))]
    a.write_text(vdir / "torch_profiler.txt", profiler_table(rows, steps))
    first = next(iter(kernels))
    a.write_text(vdir / "trace.json.gz", chrome_trace(f"{op}:{variant}", ops, first, kernels[first], steps),
                 compress=True)
    return a.TorchProfile(table_file="torch_profiler.txt", trace_file="trace.json.gz",
                          ops={f"{op}:{variant}": steps, **{o: steps for o in ops}, "cudaLaunchKernel": steps},
                          kernels={k: steps for k in kernels}, active_steps=steps,
                          self_cuda_us=sum(kernels.values()), self_cpu_us=cpu_us)


def _variant(mdir: Path, vp: a.VariantProfile) -> None:
    a.write_json(a.variant_dir(mdir, vp.variant) / "profile.json", vp)


def _code(vdir: Path, name: str, text: str) -> str:
    a.write_text(vdir / name, text)
    return name


INDUCTOR_GELU = '''# AOT ID: ['0_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels

aten = torch.ops.aten
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
async_compile = AsyncCompile()


# kernel path: /tmp/torchinductor_root/3q/c3qz7kqhkbm6zk4yq2jfrukp7b5h2b5ghq5wqcbgqyqjqlw2m4i.py
# Topologically Sorted Source Nodes: [mul, pow_1, mul_1, add, mul_2, tanh, add_1, mul_3], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh]
# Source node to ATen node mapping:
#   add => add
#   add_1 => add_1
#   mul => mul
#   tanh => tanh
triton_poi_fused_add_mul_pow_tanh_0 = async_compile.triton('triton_poi_fused_add_mul_pow_tanh_0', \'\'\'
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

@triton_heuristics.pointwise(
    size_hints={'x': 16777216},
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, warp_size=32), 'constants': {}},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_mul_pow_tanh_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'num_load': 1, 'num_reduction': 0},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_mul_pow_tanh_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 16777216
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), None)
    tmp1 = 0.5
    tmp2 = tmp0 * tmp1
    tmp3 = tmp0 * tmp0
    tmp4 = tmp3 * tmp0
    tmp5 = 0.044715
    tmp6 = tmp4 * tmp5
    tmp7 = tmp0 + tmp6
    tmp8 = 0.7978845608028654
    tmp9 = tmp7 * tmp8
    tmp10 = libdevice.tanh(tmp9)
    tmp11 = 1.0
    tmp12 = tmp10 + tmp11
    tmp13 = tmp2 * tmp12
    tl.store(out_ptr0 + (x0), tmp13, None)
\'\'\', device_str='cuda')


async_compile.wait(globals())
del async_compile

def call(args):
    arg0_1, = args
    args.clear()
    assert_size_stride(arg0_1, (4096, 4096), (4096, 1))
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((4096, 4096), (4096, 1), torch.float32)
        # Topologically Sorted Source Nodes: [mul, pow_1, mul_1, add, mul_2, tanh, add_1, mul_3], Original ATen: [aten.mul, aten.pow, aten.add, aten.tanh]
        stream0 = get_raw_stream(0)
        triton_poi_fused_add_mul_pow_tanh_0.run(arg0_1, buf0, 16777216, stream=stream0)
        del arg0_1
    return (buf0, )
'''

LEGACY_ROWS = [("aten::square", 14.2, 0.0, 1), ("aten::pow", 31.7, 41.9, 2), ("aten::mul", 12.9, 41.7, 1),
               ("aten::result_type", 1.1, 0.0, 2), ("aten::to", 0.6, 0.0, 2), ("cudaLaunchKernel", 21.4, 0.0, 3),
               (POW_KERNEL, 0.0, 83.8, 2), (MUL_KERNEL, 0.0, 41.7, 1)]


def write(root: Path) -> Path:
    """The fixture folder under ``root``; returns ``root`` (pass it as KERNELSCOPE_PROFILES_DIR)."""
    mdir = root / MACHINE
    variants = []

    # square-torch: the lecture's torch.square, real ncu numbers; eager PyTorch has no code of its own to dump
    name = "square-torch"
    vdir = a.variant_dir(mdir, name)
    a.write_text(vdir / "ncu.txt.gz", ncu_section("square:square-torch/"), compress=True)
    _variant(mdir, a.VariantProfile(
        name, "square", "torch", "4096x4096", "float32", "cuda",
        torch=_torch_profile(vdir, name, "square", ["aten::square", "aten::pow"], {POW_KERNEL: 41.9}, 38.5),
        ncu=[a.KernelMetrics(POW_KERNEL, 41.86, dram_pct=80.92, memory_pct=80.92, compute_pct=4.94,
                             achieved_occupancy_pct=80.6, theoretical_occupancy_pct=100.0, registers_per_thread=32,
                             shared_bytes_per_block=0, block=(128, 1, 1), grid=(16384, 1, 1), cluster=0,
                             waves_per_sm=7.76, sm_mhz=1970.0, hints=[_sol_hint(), _occupancy_hint(80.6, 19.4)])],
        ncu_text_file="ncu.txt.gz",
        skipped={"code": "PyTorch eager launches ATen's precompiled kernels: no code of its own to dump"}))
    variants.append(name)

    # square-triton-flat1024: real ncu numbers, real PTX and SASS
    name = "square-triton-flat1024"
    vdir = a.variant_dir(mdir, name)
    a.write_text(vdir / "ncu.txt.gz", ncu_section("square:square-triton-flat1024/"), compress=True)
    _variant(mdir, a.VariantProfile(
        name, "square", "triton", "4096x4096", "float32", "cuda",
        torch=_torch_profile(vdir, name, "square", ["aten::empty_like"], {"square_flat_kernel": 42.4}, 21.0),
        ncu=[a.KernelMetrics("square_flat_kernel", 42.43, dram_pct=80.33, memory_pct=80.33, compute_pct=4.90,
                             achieved_occupancy_pct=80.56, theoretical_occupancy_pct=100.0, registers_per_thread=18,
                             shared_bytes_per_block=0, block=(128, 1, 1), grid=(16384, 1, 1), cluster=0,
                             waves_per_sm=7.76, sm_mhz=1970.0, hints=[_sol_hint(), _occupancy_hint(80.56, 19.44)])],
        ncu_text_file="ncu.txt.gz",
        code=[a.CodeArtifact("ptx", "square_flat_kernel",
                             _code(vdir, "square_flat_kernel.ptx", (CODE / "square_flat_kernel.ptx").read_text()),
                             "ptx", registers=18, shared_bytes=0, spills=0, source="triton CompiledKernel.asm"),
              a.CodeArtifact("sass", "square_flat_kernel",
                             _code(vdir, "square_flat_kernel.sass", (CODE / "square_flat_kernel.sass").read_text()),
                             "nasm", source="cuobjdump -sass")]))
    variants.append(name)

    # square-cuda-vec4 at the largest size: a judged cross-check case; nvcc's PTX (long: collapsed) and ptxas report
    name = "square-cuda-vec4"
    vdir = a.variant_dir(mdir, name)
    vec4 = "_Z18square_vec4_kernelPKfPfl"
    _variant(mdir, a.VariantProfile(
        name, "square", "cuda", "16384x16384", "float32", "cuda",
        torch=_torch_profile(vdir, name, "square", ["aten::empty_like"], {"square_vec4_kernel(float const*, float*, "
                                                                           "long)": 757.0}, 19.0),
        ncu=[a.KernelMetrics("square_vec4_kernel(const float *, float *, long)", 756.20, dram_pct=91.41,
                             memory_pct=91.41, compute_pct=6.12, achieved_occupancy_pct=93.2,
                             theoretical_occupancy_pct=100.0, registers_per_thread=32, shared_bytes_per_block=0,
                             block=(256, 1, 1), grid=(1056, 1, 1), cluster=0, waves_per_sm=1.0, sm_mhz=1980.0,
                             hints=[_sol_hint()])],
        code=[a.CodeArtifact("ptx", vec4, _code(vdir, "square.ptx", (CODE / "square_vec4.ptx").read_text()), "ptx",
                             source="nvcc -ptx -arch=sm_90"),
              a.CodeArtifact("ptxas", vec4, _code(vdir, "square.ptxas.txt", (CODE / "square.ptxas.txt").read_text()),
                             "text", registers=32, shared_bytes=0, spills=0, source="nvcc -Xptxas -v")]))
    variants.append(name)

    # mean-triton-tuned at 2^28: two launches per call, summed for the cross-check
    name = "mean-triton-tuned"
    vdir = a.variant_dir(mdir, name)
    finish_text = ("The grid for this launch is configured to execute only 1 blocks, which is less than the GPU's "
                   "132 multiprocessors. This can underutilize some multiprocessors. If you do not intend to use "
                   "the additional multiprocessors, consider reducing the number of blocks.")
    _variant(mdir, a.VariantProfile(
        name, "mean", "triton", "268435456", "float32", "cuda",
        torch=_torch_profile(vdir, name, "mean", ["aten::empty"], {"partial_sums_kernel": 342.7,
                                                                   "finish_mean_kernel": 3.1}, 24.0),
        ncu=[a.KernelMetrics("partial_sums_kernel", 342.61, dram_pct=93.02, memory_pct=93.02, compute_pct=11.8,
                             achieved_occupancy_pct=47.9, theoretical_occupancy_pct=50.0, registers_per_thread=40,
                             shared_bytes_per_block=32, block=(256, 1, 1), grid=(528, 1, 1), cluster=0,
                             waves_per_sm=1.0, sm_mhz=1980.0, hints=[_sol_hint()]),
             a.KernelMetrics("finish_mean_kernel", 3.07, dram_pct=0.31, memory_pct=1.2, compute_pct=0.05,
                             achieved_occupancy_pct=6.2, theoretical_occupancy_pct=100.0, registers_per_thread=16,
                             shared_bytes_per_block=0, block=(128, 1, 1), grid=(1, 1, 1), cluster=0,
                             waves_per_sm=0.0, sm_mhz=1980.0,
                             hints=[a.Hint("LaunchStats", "LaunchConfiguration", "OPT", finish_text, "global",
                                           99.24)])],
        skipped={"sass": "cuobjdump not found on PATH"}))
    variants.append(name)

    # gelu-compile: real ncu numbers, Inductor's generated Triton
    name = "gelu-compile"
    vdir = a.variant_dir(mdir, name)
    a.write_text(vdir / "ncu.txt.gz", ncu_section("gelu:gelu-compile/"), compress=True)
    mem_text = ("Memory is more heavily utilized than Compute: Look at the Memory Workload Analysis section to "
                "identify the DRAM bottleneck. Check memory replay (coalescing) metrics to make sure you're "
                "efficiently utilizing the bytes transferred. Also consider whether it is possible to do more work "
                "per memory access (kernel fusion) or whether there are values you can (re)compute.")
    _variant(mdir, a.VariantProfile(
        name, "gelu", "torch-compile", "4096x4096", "float32", "cuda",
        torch=_torch_profile(vdir, name, "gelu", ["Torch-Compiled Region: 0/0", "aten::empty_strided"],
                             {"triton_poi_fused_add_mul_pow_tanh_0": 45.5}, 52.0),
        ncu=[a.KernelMetrics("triton_poi_fused_add_mul_pow_tanh_0", 45.44, dram_pct=76.35, memory_pct=76.35,
                             compute_pct=42.93, achieved_occupancy_pct=74.56, theoretical_occupancy_pct=100.0,
                             registers_per_thread=16, shared_bytes_per_block=0, block=(256, 1, 1),
                             grid=(32768, 1, 1), cluster=0, waves_per_sm=31.03, sm_mhz=1960.0,
                             hints=[a.Hint("GPU Speed Of Light Throughput", "SOLBottleneck", "OPT", mem_text),
                                    _occupancy_hint(74.56, 25.44)])],
        ncu_text_file="ncu.txt.gz",
        code=[a.CodeArtifact("inductor", "triton_poi_fused_add_mul_pow_tanh_0",
                             _code(vdir, "inductor.py", INDUCTOR_GELU), "python",
                             source="torch._inductor output_code")]))
    variants.append(name)

    # softmax-torch: a torch.profiler capture only (ncu missing on the box)
    name = "softmax-torch"
    vdir = a.variant_dir(mdir, name)
    softmax_kernel = ("void at::native::<unnamed>::cunn_SoftMaxForward<(int)4, float, float, float, "
                      "at::native::<unnamed>::SoftMaxForwardEpilogue>(T4 *, const T2 *, int)")
    _variant(mdir, a.VariantProfile(
        name, "softmax", "torch", "16384x16384", "float32", "cuda",
        torch=_torch_profile(vdir, name, "softmax", ["aten::softmax", "aten::_softmax"], {softmax_kernel: 828.1},
                             29.0),
        ncu=None, skipped={"ncu": "ncu not found on PATH (install Nsight Compute, or run without --ncu)",
                           "code": "PyTorch eager launches ATen's precompiled kernels: no code of its own to dump"}))
    variants.append(name)

    # the lecture's demos
    fixed = []
    for cols in (256, 512, 1024, 2048, 4096, 8192, 16384):
        moved = 4096 * min(cols, 1024) * 4 * 2
        time_us = 4.0 + moved / 2.6e3 / 1e3
        # past 1024 columns the kernel never writes: the NaN-poisoned output stays NaN, as on the H100
        fixed.append(a.FixedBlockRow(cols=cols, passed=cols <= 1024, rel_err=0.0 if cols <= 1024 else float("nan"),
                                     time_us=round(time_us, 2), reported_gbps=round(4096 * cols * 8 / time_us / 1e3, 1),
                                     copy_gbps=COPY_GBPS))
    a.write_json(mdir / "demos.json", a.Demos(
        machine=MACHINE, commit=COMMIT,
        host_clock=a.HostClockDemo("square-torch", "16384x16384", 10, host_no_sync_us=5.83, host_sync_us=717.69,
                                   events_us=713.14),  # per call
        squares=[a.SquareDemo("square-torch", "torch.square(a)", ["aten::square", "aten::pow"], [POW_KERNEL]),
                 a.SquareDemo("square-mul", "a * a", ["aten::mul"], [MUL_KERNEL]),
                 a.SquareDemo("square-pow", "a ** 2", ["aten::pow"], [POW_KERNEL])],
        fixed_block=fixed,
        legacy_autograd_table=profiler_table(LEGACY_ROWS, 1)))

    a.write_json(mdir / "manifest.json", a.Manifest(
        machine=MACHINE, gpu="NVIDIA H100 80GB HBM3", commit=COMMIT, date="2026-11-22T14:05:00+00:00",
        versions={"torch": "2.11.0+cu130", "triton": "3.6.0", "numba-cuda": "0.30.4", "cuda": "13.0",
                  "driver": "580.159.04", "ncu": "2025.3.1", "nvcc": "13.0.88"},
        variants=variants, command="kernelscope profile --ncu --demos"))
    return root


if __name__ == "__main__":
    import sys

    print(write(Path(sys.argv[1] if len(sys.argv) > 1 else "profiles-fixture")))
