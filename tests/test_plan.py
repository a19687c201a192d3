"""`kernelscope plan`: the kernel and launch shape a call of a tuned variant takes, on the CPU.

The plan a variant prints must be the one its launch uses: each launch path
below runs with its GPU reader given a preset's facts and its kernels replaced
by recorders of the grid and block they are launched with (nothing runs; the
inputs are meta tensors), and what it launched is compared with the plan. The
grids the CUDA C++ launchers work out are held to their lines in the .cu files.
"""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kernelscope import backends, cli
from kernelscope.backends.device import H100, H200, PRESETS
from kernelscope.catalog import VARIANTS
from kernelscope.plan import planned_variants, plan_of

backends.configure_interpreters()  # before Triton and Numba import: their CPU interpreters, where there is no GPU

ROOT = Path(__file__).resolve().parents[1]
CU = ROOT / "src/kernelscope/backends/cuda"


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = cli.main(["plan", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def cases(variant):
    """(shape, dtype) of every benchmark size of the variant's op, in every dtype it takes."""
    return [(shape, dtype) for shape in variant.op_spec.bench_shapes for dtype in variant.dtypes]


# --- the command's output ------------------------------------------------------------------------

def test_softmax_cuda_wide_rows_take_the_loop_shape_of_each_gpu(capsys):
    # 64x262144 float32: the loop kernel, SOFTMAX_F32_LOOP (512 x 16) on the H100, SOFTMAX_F32_LOOP_WIDE_DRAM
    # (512 x 8) on the H200, whose DRAM asks more of each SM (kernels.py)
    from kernelscope.backends.cuda import kernels as K

    shapes = {}
    for gpu in ("h100", "h200"):
        rc, out, err = run(capsys, "softmax-cuda", "64x262144", "--gpu", gpu, "--json")
        assert rc == 0, err
        record = json.loads(out)
        assert (record["variant"], record["shape"], record["dtype"], record["gpu"]) == ("softmax-cuda", "64x262144",
                                                                                        "float32", gpu)
        assert record["strategy"] == "loop"
        [launch] = record["launches"]
        assert launch["kernel"] == "softmax_loop_kernel" and launch["source"].endswith("cuda/softmax_loop.cuh")
        shapes[gpu] = (launch["block"], launch["cluster"], launch["grid"])
    assert shapes["h100"] == (*K.SOFTMAX_F32_LOOP, [64 * K.SOFTMAX_F32_LOOP[1]])
    assert shapes["h200"] == (*K.SOFTMAX_F32_LOOP_WIDE_DRAM, [64 * K.SOFTMAX_F32_LOOP_WIDE_DRAM[1]])
    assert shapes["h100"] != shapes["h200"]


def test_the_text_names_the_variant_gpu_kernel_grid_block_and_cluster(capsys):
    rc, out, err = run(capsys, "softmax-cuda", "64x262144", "--gpu", "h200")
    assert rc == 0 and err == ""
    lines = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out.splitlines())
    assert lines["variant"] == "softmax-cuda" and lines["shape"] == "64x262144 float32"
    assert lines["gpu"].startswith("h200 (preset NVIDIA H200): 132 SMs, 60 MiB L2, 36.5 GB/s of DRAM an SM")
    assert lines["strategy"] == "loop"
    assert lines["kernel"] == "softmax_loop_kernel  [src/kernelscope/backends/cuda/softmax_loop.cuh]"
    assert lines["grid"] == "512 (64 rows x 8 blocks a row)"
    assert (lines["block"], lines["cluster"], lines["persistent"]) == ("512 threads", "8 blocks", "no")


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_each_backend_s_softmax_at_the_two_reference_sizes(capsys, gpu):
    # The plans kernels.py, triton/softmax/ and numba/softmax/ describe for the two sizes the site quotes
    wide_dram = gpu == "h200"
    expected = {
        ("softmax-cuda", "4096x4096"): ("block", "softmax_exact_kernel", [4096], 256, 1),
        ("softmax-triton-tuned", "4096x4096"): ("row", "softmax_rows_tuned_kernel", [4096], 128, 1),
        ("softmax-numba", "4096x4096"): ("regs", "softmax_regs_vector", [4096], 256 if wide_dram else 128, 1),
        ("softmax-triton-tuned", "64x262144"): ("split", "softmax_chunk_stats_kernel", [4096], 512, 1),
        ("softmax-numba", "64x262144"): ("resident", "softmax_resident", None, 512, 1),  # the resident blocks
    }
    for (variant, shape), (strategy, kernel, grid, block, cluster) in expected.items():
        rc, out, err = run(capsys, variant, shape, "--gpu", gpu, "--json")
        assert rc == 0, err
        record = json.loads(out)
        first = record["launches"][0]
        assert (record["strategy"], first["kernel"], first["grid"], first["block"], first["cluster"]) == (
            strategy, kernel, grid, block, cluster), (variant, shape)


def test_every_plan_answers_at_every_benchmark_size_on_both_presets():
    for v in planned_variants():
        for gpu in PRESETS:
            for shape, dtype in cases(v):
                p = plan_of(v, shape, dtype, gpu)
                assert p.plan.launches, (v.name, shape, dtype)
                for launch in p.plan.launches:
                    assert 32 <= launch.block <= p.facts.max_threads_per_block and launch.block % 32 == 0
                    assert launch.cluster in (1, 2, 4, 8, 16) and launch.count >= 1
                    if launch.grid is None:  # a persistent grid: its bound, and the rule in words
                        assert launch.most and launch.note, (v.name, shape, dtype)
                    else:
                        assert all(g >= 1 for g in launch.grid), (v.name, shape, dtype)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_all_lists_every_planned_variant_at_its_sizes_and_leaves_none_out(capsys, gpu):
    rc, out, err = run(capsys, "--all", "--gpu", gpu, "--json")
    assert rc == 0 and err == ""
    records = json.loads(out)
    expected = [(v.name, "x".join(map(str, s)), d) for v in planned_variants() for s in v.op_spec.bench_shapes
                for d in v.bench_dtypes]
    assert [(r["variant"], r["shape"], r["dtype"]) for r in records] == expected
    rc, out, err = run(capsys, "--all", "--gpu", gpu)
    assert rc == 0 and f"{len(planned_variants())} variants at their op's benchmark sizes on {gpu}" in out


def test_every_tuned_softmax_and_mean_variant_has_a_plan():
    planned = {v.name for v in planned_variants()}
    assert {v.name for v in VARIANTS.values() if v.tuned and v.op in ("softmax", "mean")} <= planned
    assert {"square-cuda-vec4", "gelu-cuda-vec4", "square-numba-flat", "square-numba-direct", "gelu-numba",
            "gelu-triton", "square-triton-flat1024", "square-triton-flat256", "square-triton-flat4096",
            "square-triton-direct"} <= planned
    for v in VARIANTS.values():
        assert v.plan is None or v.backend not in ("torch", "torch-compile"), v.name


def test_every_kernel_a_plan_names_is_defined_in_its_source():
    from kernelscope.plan import _resolve

    for v in planned_variants():
        for gpu in PRESETS:
            for shape, dtype in cases(v):
                for launch in _resolve(v.plan)(shape, dtype, PRESETS[gpu]).launches:
                    text = (ROOT / launch.source).read_text()
                    name = launch.kernel
                    if launch.source.endswith((".cu", ".cuh")):
                        assert re.search(rf"__global__ void {name}\(", text), (v.name, name)
                    elif launch.source.endswith("numba/elementwise.py"):  # named after the map: square_tiled
                        suffix = name.rsplit("_", 1)[1]
                        assert suffix in ("tiled", "flat") and f'f"{{name}}_{suffix}"' in text, (v.name, name)
                    elif "/triton/" in launch.source:
                        assert re.search(rf"@triton\.jit[^\n]*\ndef {name}\(", text), (v.name, name)
                    else:
                        assert re.search(rf"\n\s+def {name}\(", text) or f"def {name}(" in text, (v.name, name)


def test_a_variant_without_a_plan_says_what_it_launches(capsys):
    rc, out, _ = run(capsys, "softmax-torch", "4096x4096", "--gpu", "h100")
    assert (rc, out) == (0, "softmax-torch: ATen's kernel; no kernelscope plan\n")
    rc, out, _ = run(capsys, "square-compile", "64x64", "--gpu", "h100")
    assert rc == 0 and "Inductor" in out and "no kernelscope plan" in out
    rc, out, _ = run(capsys, "square-cuda-lecture", "64x64", "--gpu", "h100", "--json")
    assert rc == 0 and json.loads(out)["plan"] is None


@pytest.mark.parametrize("argv, message", [
    (["softmax-cuda", "64x262144", "float16", "--gpu", "h100"],
     "softmax-cuda: dtype float16 not supported (supports float32, bfloat16)"),
    (["softmax-cuda", "64x262144", "float64", "--gpu", "h100"], "softmax-cuda: dtype float64 not supported"),
    (["softmax-cuda", "262144", "--gpu", "h100"], "softmax-cuda: expected a 2-D shape, got 262144"),
    (["mean-cuda", "64x64", "--gpu", "h200"], "mean-cuda: expected a 1-D shape, got 64x64"),
    (["softmax-numba", "64xq", "--gpu", "h100"], "softmax-numba: bad shape '64xq'"),
    (["softmax-numba", "0x64", "--gpu", "h100"], "softmax-numba: bad shape '0x64'"),
    (["softmax-cuda", "--gpu", "h100"], "softmax-cuda: give a SHAPE"),
    (["softmax-cudax", "64x64", "--gpu", "h100"], "unknown variant 'softmax-cudax'"),
    ([], "give VARIANT SHAPE [DTYPE], or --all"),
    (["--all", "softmax-cuda"], "give VARIANT SHAPE [DTYPE], or --all"),
])
def test_a_bad_variant_shape_or_dtype_is_refused_naming_the_variant(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == "" and message in err, err


def test_a_tuned_variant_plans_past_2_31_elements(capsys):
    rc, out, err = run(capsys, "mean-numba", "4294967296", "--gpu", "h100", "--json")
    assert rc == 0 and err == "" and json.loads(out)["launches"][0]["grid"] == [528], out


@pytest.mark.skipif(backends.cuda_available(), reason="this box has a GPU: `this` reads it")
def test_without_a_gpu_this_is_refused_and_the_default_is_the_h100_preset(capsys):
    rc, out, err = run(capsys, "softmax-cuda", "64x64", "--gpu", "this")
    assert rc == 2 and "no CUDA GPU here to read: pass --gpu h100 or --gpu h200" in err
    rc, out, err = run(capsys, "--all", "--gpu", "this")
    assert rc == 2 and "pass --gpu h100" in err
    rc, out, err = run(capsys, "softmax-cuda", "64x64", "--json")
    assert rc == 0 and json.loads(out)["gpu"] == "h100" and "no GPU here: the h100 preset" in err


@pytest.mark.gpu
def test_on_an_h100_or_h200_this_gpu_plans_as_its_preset():
    # Each backend reads this GPU as its launch does (SMs, L2, the DRAM's attributes, shared memory a block): on
    # the GPUs the presets describe, every plan must come out as the preset's
    from kernelscope.plan import this_gpu

    name = this_gpu()[1]
    preset = next((g for g, facts in PRESETS.items() if facts.name == name), None)
    if preset is None:
        pytest.skip(f"{name} is neither preset's GPU")
    for v in planned_variants():
        for shape, dtype in cases(v):
            assert plan_of(v, shape, dtype, "this").plan == plan_of(v, shape, dtype, preset).plan, (v.name, shape)


def test_help_shows_the_usage_and_examples(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["plan", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert "kernelscope plan VARIANT SHAPE [DTYPE] [--gpu this|h100|h200] [--json]" in out
    assert "kernelscope plan --all" in out and "kernelscope plan softmax-cuda 64x262144 --gpu h100" in out


def test_the_presets_are_the_gpus_the_backends_describe():
    from kernelscope.backends import WIDE_DRAM_GBPS_PER_SM

    assert (H100.sm_count, H100.l2_bytes, H200.sm_count, H200.l2_bytes) == (132, 50 * 2**20, 132, 60 * 2**20)
    assert 25 < H100.dram_gbps_per_sm < WIDE_DRAM_GBPS_PER_SM <= 36 < H200.dram_gbps_per_sm < 37  # 25.4, 36.5
    assert H100.shared_bytes_per_block == H200.shared_bytes_per_block == 227 * 1024


# --- the launch takes the plan the command prints --------------------------------------------------

def meta(shape, dtype="float32"):
    from kernelscope.ops import dtype_of

    return torch.empty(shape, device="meta", dtype=dtype_of(dtype))


class TritonKernel:
    """A @triton.jit kernel's stand-in: records (name, grid, threads) of each launch, runs nothing."""

    def __init__(self, name, calls):
        self.name, self.calls, self.arg_names = name, calls, []

    def __getitem__(self, grid):
        from kernelscope.backends.triton import DEFAULT_WARPS

        def launch(*args, **keywords):
            self.calls.append((self.name, tuple(grid), keywords.get("num_warps", DEFAULT_WARPS) * 32))
        return launch


class NumbaKernel:
    """A Numba kernel's stand-in: records (name, grid, threads) of each launch, runs nothing."""

    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def __getitem__(self, config):
        grid, threads = config[0], config[1]

        def launch(*args):
            self.calls.append((self.name, tuple(grid) if isinstance(grid, tuple) else (grid,), threads))
        return launch


def launches(variant, shape, dtype, facts):
    """[(kernel, grid, threads)] of the launches a call makes by its plan, in order: the split plans group by
    group, pass 1 then pass 2, the last group of the rows that are left."""
    from kernelscope.plan import _resolve

    p = _resolve(VARIANTS[variant].plan)(shape, dtype, facts)
    if p.strategy != "split":  # a persistent grid (grid None): as many blocks as the plan says fit at most
        return [(launch.kernel, launch.grid or (launch.most,), launch.block) for launch in p.launches
                for _ in range(launch.count)]
    group, calls = p.fields["rows a group"], []
    for row0 in range(0, shape[0], group):
        rows = min(group, shape[0] - row0)
        for launch in p.launches:  # Triton: a program a chunk of each row; Numba: a grid of rows x chunks
            grid = (rows * launch.grid[0] // group,) if len(launch.grid) == 1 else (rows, launch.grid[1])
            calls.append((launch.kernel, grid, launch.block))
    return calls


def each_case_launches_its_plan(impls: dict, calls: list, facts, kept: tuple) -> None:
    """Each variant's implementation, called on meta tensors at each of its cases, launches what its plan says.

    ``kept``: the launch shapes the launchers work out once per size and device (functools caches), cleared
    before and after: the meta device is the same on both presets, and each must be read anew.
    """
    for cache in kept:
        cache.cache_clear()
    try:
        for variant, impl in impls.items():
            for shape, dtype in cases(VARIANTS[variant]):
                calls.clear()
                impl(meta(shape, dtype), meta(() if len(shape) == 1 else shape, dtype))
                assert calls == launches(variant, shape, dtype, facts), (variant, shape, dtype)
    finally:
        for cache in kept:
            cache.cache_clear()


@pytest.mark.parametrize("facts", [H100, H200], ids=["h100", "h200"])
def test_softmax_cuda_launches_the_plan(monkeypatch, facts):
    from kernelscope.backends.cuda import kernels as K

    launched = []

    class Extension:
        def dram_peak_gbps(self, index):
            return facts.dram_gbps_per_sm * facts.sm_count

        def softmax(self, x, out, strategy, threads, cluster):
            launched.append((strategy, threads, cluster))

    monkeypatch.setattr(K, "extension", lambda: Extension())
    monkeypatch.setattr(K, "_sm_count", lambda index: facts.sm_count)
    K._softmax_launch.cache_clear()
    K.dram_gbps_per_sm.cache_clear()
    try:
        for shape, dtype in cases(VARIANTS["softmax-cuda"]):
            K.softmax(meta(shape, dtype))
            p = K.softmax_plan_of(shape, dtype, facts)
            [launch] = p.launches
            assert launched[-1] == (K.SOFTMAX_STRATEGIES[p.strategy], launch.block, launch.cluster), (shape, dtype)
    finally:
        K._softmax_launch.cache_clear()
        K.dram_gbps_per_sm.cache_clear()


@pytest.mark.parametrize("facts", [H100, H200], ids=["h100", "h200"])
def test_the_cuda_elementwise_and_mean_launches_take_the_plan(monkeypatch, facts):
    # The launch passes (threads, blocks_per_sm, unroll) to the C++ launcher, which works out the grid
    # (test_the_cuda_grids_are_the_launchers_own)
    from kernelscope.backends.cuda import kernels as K

    launched = []

    class Extension:
        def __getattr__(self, name):
            return lambda x, out, *args: launched.append((name, args))

    monkeypatch.setattr(K, "extension", lambda: Extension())
    monkeypatch.setattr(K, "_sm_count", lambda index: facts.sm_count)
    K._elementwise_launch.cache_clear()
    try:
        for variant, call, plan in (("square-cuda-vec4", K.square_vec4, K.square_vec4_plan_of),
                                    ("gelu-cuda-vec4", K.gelu_vec4, K.gelu_vec4_plan_of)):
            for shape, dtype in cases(VARIANTS[variant]):
                call(meta(shape, dtype))
                p = plan(shape, dtype, facts)
                assert launched[-1][1] == (p.launches[0].block, K.ELEMENTWISE_BLOCKS_PER_SM,
                                           p.fields["16-byte loads a thread"]), (variant, shape, dtype)
        for shape, _ in cases(VARIANTS["mean-cuda"]):
            K.mean(meta(shape), meta(()))
            p = K.mean_plan_of(shape, "float32", facts)
            assert launched[-1] == ("mean", (K.MEAN_STREAMING, K.MEAN_BLOCKS_PER_SM, p.fields["16-byte loads a lap"]))
        assert K.mean_plan_of((2**24,), "float32", facts).launches[0].grid == (facts.sm_count * K.MEAN_BLOCKS_PER_SM,)
    finally:
        K._elementwise_launch.cache_clear()


@pytest.mark.parametrize("facts", [H100, H200], ids=["h100", "h200"])
def test_the_triton_launches_take_the_plan(monkeypatch, facts):
    from kernelscope.backends.triton import gelu as tgelu, mean as tmean, softmax as tsoftmax, square as tsquare
    from kernelscope.backends.triton.softmax import launch as tsoftmax_launch

    calls = []
    for module, names in ((tsoftmax_launch, ("softmax_rows_tuned_kernel", "softmax_tiles_kernel",
                                             "softmax_persistent_kernel", "softmax_chunk_stats_kernel",
                                             "softmax_chunk_write_kernel", "softmax_pipe_kernel")),
                          (tmean, ("mean_one_pass_kernel",)), (tgelu, ("gelu_kernel",)),
                          (tsquare, ("square_flat_kernel",))):
        for name in names:
            monkeypatch.setattr(module, name, TritonKernel(name, calls))
    monkeypatch.setattr(tsoftmax_launch, "gpu_facts", lambda device: facts)  # the launches' reader of their GPU
    monkeypatch.setattr(tmean, "gpu_facts", lambda device: facts)
    impls = {"softmax-triton-tuned": tsoftmax.softmax_tuned, "mean-triton-tuned": tmean.mean_tuned,
             "gelu-triton": tgelu.gelu, "square-triton-flat1024": tsquare.square_flat,
             "square-triton-flat256": tsquare.square_flat256, "square-triton-flat4096": tsquare.square_flat4096,
             "square-triton-direct": tsquare.square_flat_direct}
    assert set(impls) == {v.name for v in planned_variants() if v.backend == "triton"}
    each_case_launches_its_plan(impls, calls, facts, (tsoftmax.default_plan, tmean._tuned_launch))


@pytest.mark.parametrize("facts", [H100, H200], ids=["h100", "h200"])
def test_the_numba_launches_take_the_plan(monkeypatch, facts):
    from types import SimpleNamespace

    from kernelscope.backends.numba import elementwise, gelu as ngelu, mean as nmean, softmax as nsoftmax
    from kernelscope.backends.numba import square as nsquare
    from kernelscope.backends.numba.softmax import launch as nsoftmax_launch

    calls = []
    for module in (nsoftmax_launch, nmean, elementwise):  # the GPU's path, the preset's facts read by its reader
        monkeypatch.setattr(module, "SIMULATED", False)
        monkeypatch.setattr(module, "gpu_facts", lambda index: facts)
    monkeypatch.setattr(elementwise, "as_array", lambda t: t)
    monkeypatch.setattr(elementwise, "stream", lambda: 0)
    for module in (nsoftmax_launch, nmean):  # direct.launch: the kernel's launch, as Numba's first call makes it;
        # nothing kept to fix, so every call launches its plan anew
        monkeypatch.setattr(module, "numba_direct", SimpleNamespace(
            launch=lambda kernel, grid, block, *args, flat=False, shared=0: kernel[grid, block, 0, shared](*args),
            fixed=lambda *args, **keywords: None))
    for name, kernel in (("softmax_regs_kernel", lambda *a: NumbaKernel(
            "softmax_regs_vector" if a[-1] else "softmax_regs", calls)),
            ("softmax_row_kernel", lambda *a: NumbaKernel("softmax_row", calls)),
            ("chunk_stats_kernel", lambda *a: NumbaKernel("chunk_stats", calls)),
            ("chunk_write_kernel", lambda *a: NumbaKernel("chunk_write", calls)),
            ("softmax_resident_kernel", lambda *a: NumbaKernel("softmax_resident", calls))):
        monkeypatch.setattr(nsoftmax_launch, name, kernel)
    # the occupancy query's answer on such a GPU: blocks of its threads and shared memory an SM, times its SMs
    monkeypatch.setattr(nsoftmax_launch, "_resident_blocks", lambda kernel, args, threads, shared, device: (
        facts.sm_count * min(2048 // threads, facts.shared_bytes_per_block // shared)))
    monkeypatch.setattr(nsoftmax_launch, "allow_large_shared", lambda kernel, args, nbytes: True)
    monkeypatch.setattr(nmean, "mean_one_launch_kernel", lambda *a: NumbaKernel("mean_one_launch", calls))
    monkeypatch.setattr(elementwise, "tiled_kernel", lambda f, name, *a: NumbaKernel(f"{name}_tiled", calls))
    monkeypatch.setattr(elementwise, "grid_stride_kernel", lambda f, name, *a: NumbaKernel(f"{name}_flat", calls))
    monkeypatch.setattr(elementwise, "numba_direct", SimpleNamespace(
        launch_map=lambda kernel, blocks, threads, x, y: calls.append((kernel.name, (blocks,), threads))))
    # the direct variants' own maps, shaped at their first call; the launch shapes the others keep, worked out anew
    impls = {"softmax-numba": nsoftmax.softmax, "mean-numba": nmean.mean,
             "gelu-numba": elementwise.direct_map(*ngelu._form(None), ngelu._defaults()),
             "square-numba-flat": nsquare.square_flat,
             "square-numba-direct": elementwise.direct_map(nsquare.square_f32, "square", nsquare.FLAT_DEFAULTS)}
    assert set(impls) == {v.name for v in planned_variants() if v.backend == "numba"}
    each_case_launches_its_plan(impls, calls, facts, (nmean.default_launch, nsoftmax.default_plan))


# --- the CUDA C++ launchers' grids, as the plans give them ---------------------------------------

def test_the_cuda_grids_are_the_launchers_own():
    from kernelscope.backends.cuda import kernels as K

    softmax, mean, pack = ((CU / name).read_text() for name in ("softmax_launch.cuh", "mean.cu", "pack16.cuh"))
    # softmax: a warp a row, threads / 32 rows a block; otherwise rows x cluster blocks; persistent kernels
    # as many clusters as fit, one a row at most
    assert "const int64_t grid = (int64_t)rows * cluster;" in softmax
    assert "const int warps = threads / 32, blocks = (rows + warps - 1) / warps;" in softmax
    assert "config.gridDim = dim3((fit.clusters < rows ? fit.clusters : rows) * cluster);" in softmax
    assert "if (cluster == 1 && cols == EPT * threads && aligned16(x, y))" in softmax
    assert tuple(int(n) for n in re.findall(r"softmax_warp_kernel<T, (\d+), Exp>>\(blocks", softmax)) == K._WARP_EPTS
    assert tuple(int(n) for n in re.findall(r"return launch_block_rows<T, (\d+), Exp>", softmax)) == K._BLOCK_EPTS
    assert tuple(sorted({int(n) for n in re.findall(r"softmax_pipe_kernel<T, (\d+), Exp>", softmax)})) == K._PIPE_EPTS
    for strategy, kernel in (("SOFTMAX_LOOP", "softmax_loop_kernel"), ("SOFTMAX_LOOP_PERSISTENT", "softmax_loop_kernel")):
        assert re.search(rf"if \(strategy == {strategy}\)\n\s+return launch_\w+<{kernel}<T, Exp>>", softmax), strategy
    # mean: one block up to 16 x 512 elements, else a block a 4 x 512, at most SMs x blocks_per_sm
    assert f"constexpr int MEAN_THREADS = {K.MEAN_THREADS};" in mean
    assert "constexpr int64_t MEAN_ONE_BLOCK = 16 * MEAN_THREADS;" in mean and K._MEAN_ONE_BLOCK == 16 * K.MEAN_THREADS
    assert "int64_t needed = (n + 4 * MEAN_THREADS - 1) / (4 * MEAN_THREADS);" in mean
    assert "int64_t cap = (int64_t)sm_count * blocks_per_sm;" in mean
    assert [K.mean_partial_count(n, 132, 3) for n in (1, 8192, 8193, 2**20, 2**28)] == [1, 1, 5, 396, 396]
    # the elementwise grids: a block a tile (capped at SMs x k with -k), or the grid-stride wave
    assert "const int64_t tile = (int64_t)threads * unroll;" in pack
    assert "int64_t tiles = ((n + per_pack - 1) / per_pack + tile - 1) / tile;" in pack
    assert "if (blocks_per_sm > 0 && tiles > (int64_t)sm_count * blocks_per_sm) tiles = (int64_t)sm_count * blocks_per_sm;" in pack
    assert "int64_t needed = (items + threads - 1) / threads;" in pack
    for op in ("square", "gelu"):
        text = (CU / f"{op}.cu").read_text()
        assert re.search(rf"if \(blocks_per_sm > 0\) \{{\n\s+int blocks = resident_grid\(.*\n\s+{op}_vec4_kernel", text)
        assert re.search(rf"int blocks = tiled_grid\(n, N, threads, UNROLL, -blocks_per_sm, sm_count\);\n\s+"
                         rf"{op}_tiled_kernel", text)
    assert K.tiled_grid(64 * 64, 4, 128, 1, 0, 132) == 8 and K.tiled_grid(2**28, 4, 128, 4, 0, 132) == 2**17


def test_this_reads_each_backend_s_gpu_as_its_launch_does(monkeypatch):
    # `--gpu this` on a GPU: each backend's own reader, the one its launch calls (checked for agreement with the
    # presets on the H100 and the H200 themselves: the GPU tests)
    from kernelscope import plan as plans

    assert set(plans.THIS_READERS) == {v.backend for v in planned_variants()}
    read = {}
    monkeypatch.setattr(plans, "this_gpu", lambda: (0, "NVIDIA H100 80GB HBM3"))
    monkeypatch.setattr(plans, "_resolve", lambda path: (lambda index: read.setdefault(path, replace(H100, name=path))))
    assert plans.facts_for("cuda", "this").name == plans.THIS_READERS["cuda"]
    assert plans.facts_for("numba", "this").name == plans.THIS_READERS["numba"]
    assert plans.facts_for("triton", "h200") is H200


# --- the site's macros: the plans, generated at build time -----------------------------------------

def test_the_site_macros_render_the_command_s_plans_and_refuse_wrong_names(capsys, tmp_path):
    from kernelscope.site.data import SiteData
    from kernelscope.site.macros import Macros

    m = Macros(SiteData(tmp_path, ROOT))  # no results needed: the plans come from the code
    rc, out, _ = run(capsys, "softmax-cuda", "64x262144", "--gpu", "h200")
    assert m.plan_text("softmax-cuda", "64x262144", "h200") == (
        f"```text\n$ kernelscope plan softmax-cuda 64x262144 --gpu h200\n{out}```")
    table = m.launch_plans(["softmax-cuda", "mean-numba"])
    for v in ("softmax-cuda", "mean-numba"):
        for shape in VARIANTS[v].op_spec.bench_shapes:
            assert f"| `{v}` | {'x'.join(map(str, shape))} |" in table
    assert "**H100** loop: `softmax_loop_kernel` 1024 × 512, clusters of 16<br>**H200** loop: `softmax_loop_kernel` " \
           "512 × 512, clusters of 8 |" in table  # a plan that differs between the GPUs shows both
    assert "| `softmax-cuda` | 4096x4096 | block: `softmax_exact_kernel` 4096 × 256 |" in table  # the same: once
    with pytest.raises(KeyError, match="softmax-torch has no launch plan"):
        m.launch_plans(["softmax-torch"])
    with pytest.raises(KeyError, match="not a benchmark size of softmax"):
        m.plan_text("softmax-cuda", "3x3")
    with pytest.raises(KeyError, match="unknown GPU preset 'a100'"):
        m.launch_plans(["softmax-cuda"], gpus=["a100"])


def test_each_op_page_shows_its_tuned_variants_plans(built_site):
    from kernelscope.catalog import OPS, variants_of
    from kernelscope.site import plan_pages

    for op in OPS:
        section = plan_pages.op_section(op)
        planned = [v.name for v in variants_of(op) if v.plan is not None and v.tuned]
        assert planned or section == ""
        for v in variants_of(op):  # a folded table for each tuned variant with a plan, and for no other
            assert (f'??? info "`{v.name}`: ' in section) == (v.name in planned), (op, v.name)
    assert "softmax-cuda" in plan_pages.op_section("softmax")
    page = (built_site / "results" / "softmax" / "index.html").read_text()
    assert 'id="launch-plans"' in page and "softmax_exact_kernel" in page and "softmax_loop_kernel" in page
