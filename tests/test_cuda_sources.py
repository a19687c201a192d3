"""CUDA C++ sources compile with plain nvcc (the CPU path's check of the CUDA backend).

Beyond compiling, the PTX and ptxas's report check what the tuned kernels rely
on for speed: 16-byte loads and stores for float32 and bfloat16, the cluster
barrier and distributed shared memory in softmax, no register spills, and the
register counts the launch shapes in kernels.py assume.
"""

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.backends.cuda import build
from kernelscope.profiling.nvcc import compile_for_reading
from shared import once

NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if shutil.os.path.exists("/usr/local/cuda/bin/nvcc") else None)
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found (install the CUDA toolkit to compile-check .cu files)")

# What torch.utils.cpp_extension passes nvcc besides -O3 (load_inline builds all .cu files as one).
TORCH_NVCC_FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-D__CUDA_NO_HALF_OPERATORS__",
                    "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
                    "-D__CUDA_NO_HALF2_OPERATORS__"]


def nvcc(*args, arch: str = "sm_90") -> subprocess.CompletedProcess:
    proc = subprocess.run([NVCC, f"-arch={arch}", "-O3", *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc


class Compiled:
    """source -> (PTX text, {kernel: (registers, spill bytes)} from ptxas -v): the profiler's compile of the file
    (kernelscope.profiling.nvcc: one nvcc call, kept per version of the file, which every test process and the
    profiler's own tests read; softmax.cu alone is seconds of nvcc)."""

    def __init__(self):
        self.cache = {}

    def object(self, source: str) -> Path:
        return compile_for_reading(build.HERE / source).object

    def __call__(self, source: str) -> tuple[str, dict[str, tuple[int, int]]]:
        if source not in self.cache:
            done = compile_for_reading(build.HERE / source)
            kernels, current = {}, None
            for line in done.ptxas.splitlines():
                if m := re.search(r"Compiling entry function '(\w+)'", line):
                    current = m.group(1)
                elif m := re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line):
                    spill = int(m.group(1)) + int(m.group(2))
                elif (m := re.search(r"Used (\d+) registers", line)) and current:
                    kernels[current] = (int(m.group(1)), spill)
                    current = None
            self.cache[source] = (done.ptx, kernels)
        return self.cache[source]


@pytest.fixture(scope="module")
def compiled():
    return Compiled()


def entries(ptx: str) -> dict[str, str]:
    """Mangled kernel name -> its PTX body."""
    parts = re.split(r"\.visible \.entry (\w+)", ptx)
    return dict(zip(parts[1::2], parts[2::2]))


@needs_nvcc
# softmax.cu, half a minute of nvcc, first: under pytest-xdist the tests that read its PTX would otherwise wait for it
@pytest.mark.parametrize("source", sorted(build.CU_SOURCES, key=lambda source: source != "softmax.cu"))
def test_cu_file_compiles_to_object_and_ptx(source, compiled):
    ptx, _ = compiled(source)
    assert compiled.object(source).stat().st_size > 0
    assert ".visible .entry" in ptx


COMBINED_ARCHS = ("sm_90", "sm_80")


@pytest.fixture(scope="module")
def combined(tmp_path_factory):
    """The one file load_inline builds (build.sources()) compiled with torch's flags for every arch of
    COMBINED_ARCHS in one nvcc call, once a test run: the host side is compiled once for all of them.

    Gives (arch, tmp_path) -> ptxas's report of that arch's kernels. Where the one call failed, the arch is
    compiled alone, so a test fails on its own arch's error only."""
    cuda = build.sources()[1]

    def make(folder: Path):
        (folder / "combined.cu").write_text(cuda)
        codes = [f"-gencode=arch=compute_{a[3:]},code=[{a},compute_{a[3:]}]" for a in COMBINED_ARCHS]  # as -arch=
        proc = subprocess.run([NVCC, *codes, "-O3", "-c", folder / "combined.cu", "-o", folder / "combined.o",
                               f"-I{build.HERE}", *TORCH_NVCC_FLAGS, "-Xptxas", "-v"], capture_output=True, text=True)
        (folder / "nvcc.json").write_text(json.dumps({"returncode": proc.returncode, "stderr": proc.stderr}))

    digest = hashlib.sha256("\0".join([cuda, *((build.HERE / h).read_text() for h in build.HEADERS)]).encode())
    done = json.loads((once(tmp_path_factory, f"nvcc-combined-{digest.hexdigest()[:16]}", make) / "nvcc.json")
                      .read_text())

    def compiled_for(arch: str, tmp_path: Path) -> str:
        if done["returncode"]:  # which arch failed: that arch alone, as nvcc reports it
            (tmp_path / "combined.cu").write_text(cuda)
            return nvcc("-c", tmp_path / "combined.cu", "-o", tmp_path / "combined.o", f"-I{build.HERE}",
                        *TORCH_NVCC_FLAGS, "-Xptxas", "-v", arch=arch).stderr
        report, current = [], None
        for line in done["stderr"].splitlines():  # each arch's ptxas run reports its own kernels
            if m := re.search(r"for '(sm_\d+a?)'", line):
                current = m.group(1)
            if current == arch:
                report.append(line)
        return "\n".join(report)

    return compiled_for


@needs_nvcc
@pytest.mark.xdist_group("nvcc-combined")  # one test process makes `combined`; the other would wait on its lock
def test_all_sources_compile_as_the_one_file_load_inline_builds(combined, tmp_path):
    # build.extension() concatenates the .cu files: names must not collide, and
    # torch's flags (no implicit bfloat16 conversions) must be accepted.
    report = combined("sm_90", tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    assert spills and all(a == b == "0" for a, b in spills), "a kernel spills registers with torch's flags"


@needs_nvcc
@pytest.mark.xdist_group("nvcc-combined")
def test_the_extension_still_builds_for_gpus_without_clusters(combined, tmp_path):
    # softmax-cuda needs sm_90, but its file is in the one extension every CUDA
    # variant loads: on an A100 (sm_80) the cluster code must compile away.
    assert "for 'sm_80'" in combined("sm_80", tmp_path)


VECTOR_LOAD = re.compile(r"ld\.global\.nc(\.L1::\w+)?(\.L2::\w+)?\.v4\.(f32|u32|b32)")
VECTOR_STORE = re.compile(r"st\.global(\.wb|\.cs|\.cg)?(\.L1::\w+)?\.v4\.(f32|u32|b32)")


@needs_nvcc
@pytest.mark.parametrize("source, kernel", [("square.cu", "square_vec4_kernel"), ("gelu.cu", "gelu_vec4_kernel"),
                                            ("square.cu", "square_tiled_kernel"), ("gelu.cu", "gelu_tiled_kernel"),
                                            ("softmax.cu", "softmax_warp_kernel"),
                                            ("softmax.cu", "softmax_block_kernel"),
                                            ("softmax.cu", "softmax_loop_kernel")])
def test_tuned_kernels_use_16_byte_loads_and_stores_for_both_dtypes(compiled, source, kernel):
    ptx, _ = compiled(source)
    bodies = {name: body for name, body in entries(ptx).items() if kernel in name}
    dtypes = {"bfloat16" if "nv_bfloat16" in name else "float32" for name in bodies}
    assert dtypes == {"float32", "bfloat16"}, sorted(bodies)
    for name, body in bodies.items():
        assert VECTOR_LOAD.search(body), f"{name}: no 16-byte global load"
        assert VECTOR_STORE.search(body), f"{name}: no 16-byte global store"


@needs_nvcc
@pytest.mark.parametrize("kernel", ["square_vec4_kernel", "square_tiled_kernel"])
def test_vectorized_square_keeps_four_loads_in_flight(compiled, kernel):
    ptx, _ = compiled("square.cu")
    body = next(b for name, b in entries(ptx).items() if kernel in name and "IfLi4E" in name)
    # the unrolled loop issues its four loads before the first store
    first_store = VECTOR_STORE.search(body).start()
    assert len(VECTOR_LOAD.findall(body[:first_store])) >= 4


@needs_nvcc
def test_softmax_splits_rows_across_a_cluster_through_distributed_shared_memory(compiled):
    ptx, _ = compiled("softmax.cu")
    bodies = entries(ptx)
    for name, body in bodies.items():
        if "softmax_block_kernel" in name or "softmax_loop_kernel" in name:
            assert "mapa" in body, f"{name}: no mapa (address in another block's shared memory)"
            assert "barrier.cluster.arrive" in body and "barrier.cluster.wait" in body, name
            assert "%cluster_nctarank" in body, f"{name}: the cluster size is read at run time"
        if "softmax_warp_kernel" in name:
            assert "bar.sync" not in body and "barrier.sync" not in body, f"{name}: a warp per row needs no block barrier"


@needs_nvcc
def test_gelu_keeps_float32_precision(compiled):
    # tanh.approx.f32 is off by ~5e-4, far outside the float32 tolerance of 1e-5
    ptx, _ = compiled("gelu.cu")
    assert "tanh.approx" not in ptx


@needs_nvcc
@pytest.mark.parametrize("source", build.CU_SOURCES)
def test_kernels_do_not_spill_registers(compiled, source):
    _, kernels = compiled(source)
    assert kernels
    spilled = {name: spill for name, (_, spill) in kernels.items() if spill}
    assert not spilled


@needs_nvcc
def test_register_counts_allow_the_launch_shapes_kernels_py_assumes(compiled):
    from kernelscope.backends.cuda import kernels as K

    # elementwise (tiled and grid-stride): 2048 threads an SM (8 blocks of 256) fit in 65536 registers
    regs_per_thread = 65536 // 2048
    for source in ("square.cu", "gelu.cu"):
        _, kernels = compiled(source)
        tuned = {name: regs for name, (regs, _) in kernels.items()
                 if ("vec4_kernel" in name or "tiled_kernel" in name) and f"Li{K.ELEMENTWISE_UNROLL}E" in name}
        assert len(tuned) == 4 and all(r <= regs_per_thread for r in tuned.values()), tuned
    # softmax_block_kernel and softmax_exact_kernel at <= 32 elements a thread: 64 registers, so 1024 threads (or
    # 2 x 512) fit an SM; at <= 16, 32 registers, so two blocks of 1024 do (at 36-40, with one, the H200's float32
    # 16384x16384 read 85.7% of copy against 97.8%)
    _, kernels = compiled("softmax.cu")
    sized = {name: (int(m.group(1)), regs) for name, (regs, _) in kernels.items()
             if (m := re.search(r"softmax_(?:block|exact)_kernel\w*?Li(\d+)E", name))}
    assert len(sized) == 16, sorted(sized)  # 8, 16, 32 and 64 elements a thread, two dtypes, two kernels
    for name, (ept, regs) in sized.items():
        assert regs <= (32 if ept <= 16 else 64 if ept <= 32 else 128), (name, regs)


@needs_nvcc
def test_softmax_exact_rows_compile_to_loads_exps_and_stores_alone(compiled):
    # softmax_exact_kernel: no slice bounds (64-bit divisions), no cluster, no unaligned ends; each thread's
    # EPT / N 16-byte loads and stores, unpredicated
    ptx, _ = compiled("softmax.cu")
    exact = {name: body for name, body in entries(ptx).items() if "softmax_exact_kernel" in name}
    assert len(exact) == 8
    for name, body in exact.items():
        ept = int(re.search(r"Li(\d+)E", name).group(1))
        vectors = ept // (4 if "IfLi" in name else 8)
        assert "div." not in body and "rem." not in body and "cluster" not in body, name
        assert len(re.findall(r"\n\s*ld\.global\.nc\.v4", body)) == vectors, name
        assert len(re.findall(r"\n\s*st\.global\.wb\.v4", body)) == vectors, name
        assert "ld.global.nc.u16" not in body and "ld.global.nc.f32" not in body, name  # no scalar ends


@needs_nvcc
def test_the_pipe_kernels_fit_one_block_an_sm_without_spilling(compiled):
    # softmax_pipe_kernel holds its slice of a row in registers and the next row's addresses beside it: one
    # block an SM at the most threads pipe_capacity allows for its size, and nothing spilled to local memory
    from kernelscope.backends.cuda import kernels as K

    _, kernels = compiled("softmax.cu")
    pipes = {name: regs for name, (regs, _) in kernels.items() if "softmax_pipe_kernel" in name}
    assert len(pipes) == 6, pipes  # 16, 32 and 64 elements a thread, float32 and bfloat16
    for name, regs in pipes.items():
        ept = int(re.search(r"Li(\d+)E", name).group(1))
        threads = max(t for t in (128, 256, 512, 1024) if K.pipe_capacity(t) >= ept)
        assert regs * threads <= 65536, (name, regs, threads)


@needs_nvcc
def test_the_ring_kernels_take_few_registers_so_several_blocks_share_an_sm(compiled):
    # softmax_ring_kernel holds no row in registers: its slices sit in shared memory, 1 to 3 rows of them
    _, kernels = compiled("softmax.cu")
    rings = {name: regs for name, (regs, _) in kernels.items() if "softmax_ring_kernel" in name}
    # 1, 2 and 3 stages and one stage with one exp an element, two dtypes
    assert len(rings) == 8 and all(regs <= 64 for regs in rings.values()), rings


SOFTMAX_LAUNCHER = "softmax_launch.cuh"  # softmax's launcher: its enum of strategies and its dispatch on them
CPP = shutil.which("cpp") or shutil.which("g++")


def test_the_ring_limit_is_the_kernels():
    from kernelscope.backends.cuda import kernels as K

    text = (build.HERE / "softmax_ring.cuh").read_text()
    assert f"SOFTMAX_RING_MAX_BYTES = {K.SOFTMAX_RING_MAX_BYTES // 1024} * 1024" in text


def softmax_enum() -> dict[str, int]:
    """The launcher's enum SoftmaxStrategy as the compiler sees it: preprocessed (ENUM -> code)."""
    enum = re.search(r"enum SoftmaxStrategy \{.*?\};", (build.HERE / SOFTMAX_LAUNCHER).read_text(), re.S).group(0)
    cmd = [CPP, "-P", "-I", str(build.HERE), "-"] if CPP.endswith("cpp") else [CPP, "-E", "-P", "-x", "c++", "-I",
                                                                                str(build.HERE), "-"]
    proc = subprocess.run(cmd, input=enum, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return {name: int(code) for name, code in re.findall(r"SOFTMAX_(\w+) = (\d+)", proc.stdout)}


@pytest.mark.skipif(CPP is None, reason="no C preprocessor (cpp or g++) to read the launcher's enum with")
def test_every_launch_code_means_the_same_strategy_on_both_sides():
    # One list, softmax_strategies.def: the C++ enum is made from it and kernels.py parses it. A strategy spelled
    # in either place alone, or a code changed on one side, fails here (and the codes themselves are held to
    # their recording by test_cuda_softmax_plans.py)
    from kernelscope.backends.cuda import kernels as K

    listed = (build.HERE / "softmax_strategies.def").read_text()
    strategies = re.findall(r"^SOFTMAX_STRATEGY\((\w+), (\w+), (\d+)\)", listed, re.M)
    aliases = re.findall(r"^SOFTMAX_ALIAS\((\w+), (\w+)\)", listed, re.M)
    enum = softmax_enum()
    assert enum == {e: int(code) for e, _, code in strategies} and len(set(enum.values())) == len(enum)
    assert K.SOFTMAX_STRATEGIES == {name: int(code) for _, name, code in strategies} | {
        name: enum[e] for name, e in aliases}
    assert aliases == [("cluster", "BLOCK")]  # a block a row is a cluster of one
    launcher = (build.HERE / SOFTMAX_LAUNCHER).read_text().split("enum SoftmaxStrategy", 1)[1]
    assert all(re.search(rf"strategy == SOFTMAX_{e}\b", launcher) for e in enum), "a strategy nothing launches"


def test_softmax_instantiates_the_register_sizes_kernels_py_plans_for():
    from kernelscope.backends.cuda import kernels as K

    text = (build.HERE / SOFTMAX_LAUNCHER).read_text()
    pipe = {int(n) for n in re.findall(r"softmax_pipe_kernel<T, (\d+), Exp>", text)}
    assert max(pipe) == K.pipe_capacity(256) == 64 and K.pipe_capacity(512) == 32 in pipe
    assert K.pipe_capacity(1024) == 0 and "threads <= 256" in text and "threads <= 512" in text
    block = {int(n) for n in re.findall(r"launch_block_rows<T, (\d+), Exp>", text)}  # the block and exact kernels
    warp = {int(n) for n in re.findall(r"softmax_warp_kernel<T, (\d+), Exp>", text)}
    assert max(block) == K.register_capacity(512) and 32 in block and K.register_capacity(1024) == 32
    assert max(warp) == 32  # the warp strategy's 1024 columns: 32 lanes x 32
    assert K.SOFTMAX_WARP_MAX_COLS <= 32 * max(warp)


def test_bindings_declare_exactly_the_launchers_the_cu_files_define():
    cpp, cuda = build.sources()
    declared = set(re.findall(r"^(?:cudaError_t|int) (\w+)\(", cpp, re.M))
    defined = set(re.findall(r"^(?:cudaError_t|int) (\w+)\(", cuda, re.M))
    assert declared and declared == defined
    for fn in build.FUNCTIONS:  # the kernels' entry points, and two queries of the device
        assert re.search(rf"^(?:torch::Tensor|double|int64_t) {fn}\(", cpp, re.M), fn


# Measurement builds of softmax-cuda, each built in softmax.cu's place (build.extension(softmax=...)): softmax.cu's
# entry points over the same launcher and kernels, with a policy of its own.
PROBES = {"free-exps": Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "softmax_free_exps.cu",
          "rounded-stage": Path(__file__).resolve().parents[1] / "results-proofs" / "softmax-ring-stage"
                           / "ring_stage_probe.cu"}


def test_the_shipped_sources_carry_no_probe_switch():
    # a probe's change is a policy in its own file, so the shipped kernels are built one way only
    for name in (*build.CU_SOURCES, *build.HEADERS, build.BINDINGS):
        text = (build.HERE / name).read_text()
        assert not re.search(r"^\s*#\s*if(n?def)?\b[^\n]*\bKERNELSCOPE_", text, re.M), name
        assert "KERNELSCOPE_FREE_EXPS" not in text and "KERNELSCOPE_RING_STAGE_ROUNDED" not in text, name


@pytest.mark.parametrize("probe", PROBES.values(), ids=PROBES)
def test_each_probe_defines_the_entry_points_bindings_declare(probe):
    cpp, cuda = build.sources(probe)
    declared = set(re.findall(r"^(?:cudaError_t|int) (\w+)\(", cpp, re.M))
    assert declared == set(re.findall(r"^(?:cudaError_t|int) (\w+)\(", cuda, re.M))
    assert f"// ---- {probe.name}\n" in cuda and "// ---- softmax.cu\n" not in cuda
    assert cuda != build.sources()[1]


@needs_nvcc
@pytest.mark.parametrize("probe", PROBES, ids=PROBES)
def test_each_probe_builds_every_shipped_kernel_with_its_own_policy(probe, compiled, tmp_path):
    # The same 38 kernels as softmax.cu. The free-exps build's have no exp left (every MUFU.EX2 of softmax_exp
    # gone; the combine's __expf stays); the rounded stage's are the shipped kernels themselves (host side only).
    nvcc("-ptx", PROBES[probe], "-o", tmp_path / "probe.ptx", f"-I{build.HERE}")
    built = entries((tmp_path / "probe.ptx").read_text())
    shipped = {name: body for name, body in entries(compiled("softmax.cu")[0]).items() if "softmax_" in name}
    assert len(built) == len(shipped) == 38
    if probe == "free-exps":
        assert all("ex2.approx.ftz" in body for body in shipped.values())
        assert {n.replace("8FreeExps", "10SoftmaxExp") for n in built} == set(shipped)
        assert not any("ex2.approx.ftz" in body for body in built.values())
    else:
        assert set(built) == set(shipped)


def test_every_launch_failure_raises_through_check_launch():
    # A binding's own TORCH_CHECK of a failed launch, with many arguments, crashed the process on the GPU boxes
    # (torch 2.11) where check_launch's raised: every launch error goes through check_launch, the one place that
    # names the CUDA error (test_gpu.py's refusal test runs it there)
    cpp, _ = build.sources()
    assert cpp.count("cudaGetErrorString") == 1
    assert re.search(r"static void check_launch\(cudaError_t err, const char\* kernel\) \{\n\s+TORCH_CHECK\(err == "
                     r"cudaSuccess, kernel, \" launch failed: \", cudaGetErrorString\(err\)\);", cpp)


def test_build_hashes_the_headers_the_sources_include():
    # every header a .cu file includes, directly or through another header, and no other
    included, todo = set(), list(build.CU_SOURCES)
    while todo:
        for name in re.findall(r'^#include "([\w.]+)"', (build.HERE / todo.pop()).read_text(), re.M):
            if name not in included:
                included.add(name)
                todo.append(name)
    assert included == set(build.HEADERS)
    assert "HEADERS" in (build.HERE / "build.py").read_text().split("def extension", 1)[1]


def test_every_file_the_extension_build_reads_ships_with_the_package():
    # asv installs kernelscope as a package (not editable) for each commit: a header left out of
    # package-data fails every CUDA benchmark there while the editable install works (seen on the H100).
    import fnmatch
    import tomllib

    root = build.HERE.parents[3]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["kernelscope"]
    needed = [p for p in build.HERE.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert {p.name for p in needed} >= set(build.CU_SOURCES) | {build.BINDINGS}
    for path in needed:
        rel = f"backends/cuda/{path.name}"
        assert any(fnmatch.fnmatch(rel, pattern) for pattern in patterns), f"{rel} is not in package-data"


@needs_nvcc
def test_sass_counts_shows_the_exact_rows_with_triton_s_row_kernel_beside_them():
    # scripts/sass_counts.py, the command behind softmax.cu's instruction counts: the exact kernel's SASS is one
    # path of NV loads and NV stores, and Triton's row kernel of the same launch compiles here too, without a GPU
    script = Path(__file__).resolve().parents[1] / "scripts" / "sass_counts.py"
    out = subprocess.run([sys.executable, str(script), "--kernel", r"softmax_exact_kernel.*bfloat16.*Li32",
                          "--triton-softmax", "bfloat16,16384,16"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    counts = re.findall(r"(\d+) instructions, (\d+) global loads, (\d+) global stores", out.stdout)
    assert len(counts) == 2, out.stdout  # the exact kernel, then Triton's
    assert [c[1:] for c in counts] == [("4", "4"), ("4", "4")], out.stdout  # 16-byte loads and stores, both


@needs_nvcc
def test_the_persistent_cluster_kernels_exchange_a_rows_pairs_without_a_cluster_barrier(compiled):
    # cluster_combine<true> (ring, pipe: a block's previous row's stores are in flight at its combine): st.async
    # into the other blocks' shared memory, counted on their mbarriers; the cluster barrier only once, at the start.
    # cluster.sync()'s arrive is a MEMBAR.ALL.GPU that would wait for those stores (H100: without it ring1 reads
    # 512x50257 float32 at 86.6% of copy against 83.6%). The loop kernel, a row a block, exchanges the same way
    # (H100: 64x262144 float32 71.5% against 69.2%). cluster_combine<false> (a row a block held in registers): the
    # barrier, which costs the block kernel no registers (test_register_counts_allow_the_launch_shapes...).
    ptx, _ = compiled("softmax.cu")
    kernels = entries(ptx)
    persistent = {n: b for n, b in kernels.items() if re.search(r"softmax_(ring|pipe|loop)_kernel", n)}
    one_row = {n: b for n, b in kernels.items() if re.search(r"softmax_block_kernel", n)}
    assert len(persistent) == 16 and len(one_row) == 8, (sorted(persistent), sorted(one_row))
    for name, body in persistent.items():
        assert "st.async.shared::cluster.mbarrier::complete_tx::bytes" in body, name
        assert "mbarrier.try_wait.parity" in body, name
        assert body.count("barrier.cluster.arrive") == 1, name  # softmax_cluster_start's, before the first row
    for name, body in one_row.items():
        assert "st.async" not in body and "mbarrier" not in body, name
        assert body.count("barrier.cluster.arrive") == 2, name  # the start's and cluster.sync()'s


def test_the_build_command_is_the_same_wherever_kernelscope_is_installed(tmp_path, monkeypatch):
    """Two installs sharing the build cache (one asv environment per GPU) must not rebuild each other's extension:
    ninja rebuilds whenever the command changes, so it may not name the install's folder."""
    import torch.utils.cpp_extension

    calls = []
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: calls.append(kwargs) or object())
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    for install in ("env-gpu0", "env-gpu1"):
        here = tmp_path / install / "cuda"
        shutil.copytree(build.HERE, here, ignore=shutil.ignore_patterns("__pycache__"))
        monkeypatch.setattr(build, "HERE", here)
        build.extension.cache_clear()
        build.extension()
    build.extension.cache_clear()
    first, second = calls
    assert first == second
    include = Path(first["extra_include_paths"][0])
    assert include.is_relative_to(first["build_directory"])
    for name in build.HEADERS:  # the headers the .cu files include are there
        assert (include / name).read_text() == (tmp_path / "env-gpu1" / "cuda" / name).read_text()


def test_a_build_killed_midway_does_not_block_the_next_load(tmp_path, monkeypatch):
    """torch's lock file, left by a killed build, would make every later load wait forever."""
    import torch.utils.cpp_extension

    seen = []
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline",
                        lambda **kw: seen.append((Path(kw["build_directory"]) / "lock").exists()) or object())
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    build.extension.cache_clear()
    build.extension()
    (folder,) = (tmp_path / "cache" / "torch_extensions").iterdir()
    (folder / "lock").touch()  # what a SIGKILL during nvcc leaves
    build.extension.cache_clear()
    build.extension()
    build.extension.cache_clear()
    assert seen == [False, False]
