"""`kernelscope profile`: the ncu parsers on real H100 output, the CPU-side parts, the missing-tool paths.

The fixtures in tests/fixtures/ncu/ are what Nsight Compute 2025.3 printed on
the H100 for five variants (results-proofs/profiler-output/tool_probe.sh). GPU-only parts are
marked `gpu` and run on the GPU box (pytest -m gpu).
"""

import gzip
import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest
import torch

from kernelscope import cli
from kernelscope.catalog import VARIANTS, get
from kernelscope.profiling import artifacts, capture, code, crosscheck, demos, ncu
from kernelscope.profiling.torch_profiler import range_name

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
NVCC = code.find_tool("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found (install the CUDA toolkit)")
PROBED = ["square-torch", "square-triton-flat1024", "softmax-triton-row", "square-numba-coalesced", "gelu-compile"]


def fixture_text(name: str) -> str:
    return gzip.decompress((FIXTURES / name).read_bytes()).decode()


# --- Nsight Compute: parsing what it printed on the H100 ------------------------------------------------------


def test_ncu_csv_parser_groups_the_h100_kernels_by_their_nvtx_range():
    found = ncu.parse_details_csv(fixture_text("h100-details.csv.gz"))
    assert list(found) == PROBED
    torch_sq = found["square-torch"][0]
    assert len(found["square-torch"]) == 1
    assert "pow_tensor_scalar_kernel_impl" in torch_sq.name  # torch.square reaches pow's kernel
    assert torch_sq.duration_us == pytest.approx(41.86)
    assert torch_sq.dram_pct == pytest.approx(80.92) and torch_sq.memory_pct == pytest.approx(80.92)
    assert torch_sq.compute_pct == pytest.approx(4.94)
    assert torch_sq.achieved_occupancy_pct == pytest.approx(80.60)
    assert torch_sq.theoretical_occupancy_pct == pytest.approx(100)
    assert torch_sq.registers_per_thread == 32 and torch_sq.shared_bytes_per_block == 0
    assert torch_sq.block == (128, 1, 1) and torch_sq.grid == (16384, 1, 1)
    assert torch_sq.cluster == 0 and torch_sq.waves_per_sm == pytest.approx(7.76)
    assert torch_sq.sm_mhz == pytest.approx(1970)
    occupancy = next(h for h in torch_sq.hints if h.rule == "AchievedOccupancy")
    assert (occupancy.section, occupancy.type, occupancy.speedup_type) == ("Occupancy", "OPT", "local")
    assert occupancy.speedup_pct == pytest.approx(19.4)
    assert "theoretical (100.0%) and measured achieved occupancy (80.6%)" in occupancy.text
    bottleneck = next(h for h in torch_sq.hints if h.rule == "SOLBottleneck")
    assert bottleneck.type == "INF" and bottleneck.speedup_pct is None

    assert found["square-triton-flat1024"][0].name == "square_flat_kernel"
    assert found["square-triton-flat1024"][0].registers_per_thread == 18
    assert found["softmax-triton-row"][0].block == (512, 1, 1)
    assert found["softmax-triton-row"][0].shared_bytes_per_block == 64  # dynamic shared memory
    numba = found["square-numba-coalesced"][0]
    assert numba.block == (16, 16, 1) and numba.grid == (256, 256, 1) and numba.duration_us == pytest.approx(63.81)
    assert found["gelu-compile"][0].name == "triton_poi_fused_add_mul_pow_tanh_0"


def test_ncu_units_are_converted_not_assumed():
    assert ncu._scaled(1.5, "ms", ncu._TIME_US) == 1500
    assert ncu._scaled(2.05, "Kbyte/block", ncu._BYTES) == pytest.approx(2050)
    assert ncu._scaled(1.98, "Ghz", ncu._FREQ_MHZ) == pytest.approx(1980)
    with pytest.raises(ValueError, match="unexpected ncu unit"):
        ncu._scaled(1.0, "furlong", ncu._TIME_US)
    assert ncu.number("16,384") == 16384 and ncu.number("n/a") is None


def test_ncu_text_is_split_per_variant_at_its_kernels_headers():
    text = fixture_text("h100-details.txt.gz")
    parts = ncu.split_text(text)
    assert list(parts) == PROBED
    for variant, part in parts.items():
        op = get(variant).op
        assert part.startswith(f"  {op}:{variant}/")
        assert len(re.findall(r"^  [a-z]+:[a-z0-9-]+/", part, re.M)) == 1  # no other variant's kernel inside
        assert "Section: GPU Speed Of Light Throughput" in part
    assert "Est. Local Speedup: 19.4%" in parts["square-torch"]
    # Without --print-nvtx-rename the range comes from each block's NVTX stack.
    plain = re.sub(r"^  [a-z]+:[a-z0-9-]+/", "  ", text, flags=re.M)
    assert list(ncu.split_text(plain)) == PROBED


def test_ncu_command_line_keeps_the_clocks_and_filters_to_the_variants_ranges(tmp_path):
    cmd = ncu.command("ncu", tmp_path / "r.ncu-rep", ["python", "-m", "x"])
    joined = " ".join(cmd)
    assert "--clock-control none" in joined
    assert "--nvtx --nvtx-include" in joined and cmd[cmd.index("--nvtx-include") + 1] == ncu.NVTX_INCLUDE
    for section in ("SpeedOfLight", "Occupancy", "LaunchStats", "WorkloadDistribution"):
        assert f"--section {section}" in joined
    assert "gpu__time_duration.sum" in cmd[cmd.index("--metrics") + 1]
    assert cmd[-3:] == ["python", "-m", "x"]
    # The filter must take every catalog variant's range, and only op:variant names.
    pattern = re.compile(ncu.NVTX_INCLUDE.removeprefix("regex:").removesuffix("/"))
    assert all(pattern.fullmatch(range_name(v)) for v in VARIANTS.values())
    assert not pattern.fullmatch("ProfilerStep#1") and not pattern.fullmatch("square/square-torch")


def test_missing_ncu_is_a_skip_reason_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(ncu, "DEFAULT_CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # past the no-GPU reason, to the missing tool
    assert "ncu" in ncu.unavailable() and "not found" in ncu.unavailable()
    result = ncu.run([ncu.Job("square-torch", "64x64", "float32", 1)])
    assert result.skipped and "not found" in result.skipped and not result.metrics
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "no CUDA GPU" in ncu.unavailable()


FAKE_NCU = """#!{python}
# Stands in for ncu: runs the child it is given, writes a report, and on --import prints the H100 fixtures.
import gzip, subprocess, sys
args = sys.argv[1:]
fixtures = {fixtures!r}
if "--version" in args:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.1.0 (build 1)")
elif "--import" in args:
    name = "h100-details.csv.gz" if "--csv" in args else "h100-details.txt.gz"
    sys.stdout.write(gzip.decompress(open(fixtures + "/" + name, "rb").read()).decode())
elif {denied}:
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
    sys.exit(1)
else:
    child = args[args.index("-m") - 1:]
    code = subprocess.run(child).returncode
    open(args[args.index("--export") + 1], "w").write("report")
    sys.exit(code)
"""


def fake_ncu(tmp_path, monkeypatch, denied=False) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / "ncu"
    path.write_text(FAKE_NCU.format(python=sys.executable, fixtures=str(FIXTURES), denied=denied))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(ncu, "unavailable", lambda: None)  # the stand-in runs without a GPU
    return path


def test_one_ncu_process_runs_the_child_and_reads_back_each_variants_kernels(tmp_path, monkeypatch):
    fake_ncu(tmp_path, monkeypatch)
    result = ncu.run([ncu.Job("square-torch", "16x16", "float32", 1), ncu.Job("square-mul", "16x16", "float32", 2)])
    assert result.skipped is None and "*" not in result.errors, result.log
    assert result.metrics["square-torch"][0].duration_us == pytest.approx(41.86)
    assert result.text["square-torch"].startswith("  square:square-torch/")
    # The fixture has no square-mul range: that is this variant's error, the others are unaffected.
    assert result.errors == {"square-mul": "no kernel was profiled in its NVTX range"}


def test_ncus_permission_error_is_named(tmp_path, monkeypatch):
    fake_ncu(tmp_path, monkeypatch, denied=True)
    result = ncu.run([ncu.Job("square-torch", "16x16", "float32", 1)])
    assert "ERR_NVGPUCTRPERM" in result.skipped and "root" in result.skipped
    assert not result.metrics


# --- compiled code: CUDA C++ through nvcc (no GPU needed), Inductor on the CPU -----------------------------------


def test_cuda_variants_kernels_come_from_their_launchers():
    assert code.cuda_kernels(get("square-cuda-lecture")) == ["square_lecture_kernel"]
    # the launcher has two paths (one lap of tiles by default, the grid-stride loop for the sweeps): both are candidates
    assert sorted(code.cuda_kernels(get("square-cuda-vec4"))) == ["square_tiled_kernel", "square_vec4_kernel"]
    for v in VARIANTS.values():
        if v.backend == "cuda":
            kernels = code.cuda_kernels(v)  # every CUDA variant resolves to kernels of its own .cu file (or its headers)
            source = "\n".join(f.read_text() for f in code.cuda_files(code.cuda_source(v)))
            assert kernels and all(re.search(rf"__global__[^(]*\b{k}\s*\(", source) for k in kernels), v.name


def test_template_instantiations_are_named_and_picked_by_dtype_and_by_what_ran():
    symbols = ["_Z21square_lecture_kernelPKfPfii", "_Z18square_vec4_kernelIfLi1EEvPKT_PS0_l",
               "_Z18square_vec4_kernelIfLi4EEvPKT_PS0_l", "_Z18square_vec4_kernelI13__nv_bfloat16Li4EEvPKT_PS1_l"]
    assert code.display_name(symbols[2], "square_vec4_kernel") == "square_vec4_kernel<float, 4>"
    assert code.display_name(symbols[0], "square_lecture_kernel") == "square_lecture_kernel"
    assert [s for s, _ in code.select_symbols(symbols, "square_vec4_kernel", "float32")] == symbols[1:3]
    assert code.select_symbols(symbols, "square_vec4_kernel", "bfloat16") == [
        (symbols[3], "square_vec4_kernel<__nv_bfloat16, 4>")]
    ran = ["void square_vec4_kernel<float, 4>(float const*, float*, long)"]  # as torch.profiler names it
    assert code.select_symbols(symbols, "square_vec4_kernel", "float32", ran) == [
        (symbols[2], "square_vec4_kernel<float, 4>")]
    assert code.select_symbols(symbols, "square_lecture_kernel", "float32") == [(symbols[0], "square_lecture_kernel")]


def test_ptxas_report_is_parsed_per_kernel():
    report = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1akPf' for 'sm_90'
ptxas info    : Function properties for _Z1akPf
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]
ptxas info    : Compile time = 1.2 ms
ptxas info    : Compiling entry function '_Z1bkPf' for 'sm_90'
ptxas info    : Function properties for _Z1bkPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers
"""
    found = code.parse_ptxas(report)
    assert found["_Z1akPf"]["registers"] == 40 and found["_Z1akPf"]["shared_bytes"] == 2048
    assert found["_Z1akPf"]["spill_stores"] == 4 and "Compile time" not in found["_Z1akPf"]["text"]
    assert found["_Z1bkPf"] == {**found["_Z1bkPf"], "registers": 10, "shared_bytes": 0, "spill_stores": 0}


@needs_nvcc
def test_cuda_ptx_ptxas_report_and_sass_of_square_cuda_vec4_without_a_gpu(tmp_path):
    got = code.capture(get("square-cuda-vec4"), None, tmp_path, "float32",
                       launched=["void square_vec4_kernel<float, 4>(float const*, float*, long)"])
    assert not got.errors, got.errors
    kinds = {a.kind for a in got.artifacts}
    assert {"ptx", "ptxas"} <= kinds and ("sass" in kinds or "sass" in got.skipped)
    assert {a.kernel for a in got.artifacts} == {"square_vec4_kernel<float, 4>"}  # the one that ran, no other
    tiled = code.capture(get("square-cuda-vec4"), None, tmp_path / "tiled", "float32",
                         launched=["void square_tiled_kernel<float, 4>(float const*, float*, long)"])
    assert {a.kernel for a in tiled.artifacts} == {"square_tiled_kernel<float, 4>"}  # the other path, likewise
    ptx = next(a for a in got.artifacts if a.kind == "ptx")
    text = (tmp_path / ptx.file).read_text()
    assert ".target sm_90" in text and text.count(".entry") == 1 and "square_lecture" not in text
    assert re.search(r"ld\.global(\.nc)?\S*\.v4\.(f32|u32|b32)", text)  # the 16-byte loads it is about
    assert ptx.registers and ptx.registers > 0 and ptx.spills == 0 and ptx.shared_bytes == 0
    report = (tmp_path / next(a.file for a in got.artifacts if a.kind == "ptxas")).read_text()
    assert f"Used {ptx.registers} registers" in report
    if "sass" in kinds:
        sass = (tmp_path / next(a.file for a in got.artifacts if a.kind == "sass")).read_text()
        assert "LDG.E.128" in sass and "/* 0x" not in sass  # instructions, without the encoding columns


def test_no_nvcc_is_a_skip_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(code, "find_tool", lambda name: None)
    got = code.capture(get("square-cuda-lecture"), None, tmp_path)
    assert "nvcc not found" in got.skipped["code"] and not got.artifacts and not got.errors


def test_inductor_code_on_the_cpu(tmp_path):
    x = torch.randn(32, 32)
    got = code.capture(get("gelu-compile"), x, tmp_path, "float32")
    assert not got.errors and len(got.artifacts) == 1
    art = got.artifacts[0]
    assert (art.kind, art.file, art.language) == ("inductor", "inductor.py", "python")
    generated = (tmp_path / art.file).read_text()
    assert art.kernel and all(k in generated for k in art.kernel.split(", "))
    assert "tanh" in generated  # the formula, fused into the generated kernel


def test_interpreted_backends_say_why_there_is_no_code(tmp_path):
    got = code.capture(get("square-triton-flat1024"), torch.randn(8, 8), tmp_path)
    assert "interpreter" in got.skipped["code"] and not got.artifacts
    assert "ATen" in code.capture(get("square-torch"), torch.randn(8, 8), tmp_path).skipped["code"]


# --- the capture on the CPU path ---------------------------------------------------------------------------------


def test_capture_writes_readable_artifacts_per_variant(tmp_path):
    out = tmp_path / "cpu-test"
    for name in ("square-torch", "square-triton-flat1024", "gelu-compile"):
        rc = capture.run(capture.Options(variant=name, shape="32x32", out=out, command="test"))
        assert rc == 0
    manifest = artifacts.read_manifest(out)
    assert manifest.variants == ["square-torch", "square-triton-flat1024", "gelu-compile"]  # catalog order
    assert manifest.commit and manifest.versions["torch"] == torch.__version__ and manifest.command == "test"

    sq = artifacts.read_variant(out, "square-torch")
    assert (sq.shape, sq.dtype, sq.device, sq.errors) == ("32x32", "float32", "cpu", {})
    assert sq.rel_err is not None and sq.rel_err < 1e-6 and sq.seed is not None
    assert sq.torch.active_steps == capture.ACTIVE
    assert sq.torch.ops["square:square-torch"] == capture.ACTIVE and sq.torch.ops["aten::square"] == capture.ACTIVE
    assert "aten::square" in (out / "square-torch" / sq.torch.table_file).read_text()
    events = json.loads(artifacts.read_text(out / "square-torch" / sq.torch.trace_file))["traceEvents"]
    assert [e["name"] for e in events].count("square:square-torch") == capture.ACTIVE
    assert "ncu" in sq.skipped and sq.ncu is None

    tr = artifacts.read_variant(out, "square-triton-flat1024")
    assert tr.torch is not None and "interpreter" in tr.skipped["code"] and not tr.code

    comp = artifacts.read_variant(out, "gelu-compile")
    assert [a.kind for a in comp.code] == ["inductor"] and (out / "gelu-compile" / comp.code[0].file).exists()


def test_a_variant_that_fails_the_check_is_not_profiled_and_fails_the_run(tmp_path, monkeypatch):
    import kernelscope.check as check

    real = check.check_case

    def wrong(*args, **kwargs):
        res = real(*args, **kwargs)
        res.rel_err, res.ok = 0.5, False
        return res

    monkeypatch.setattr(check, "check_case", wrong)
    rc = capture.run(capture.Options(variant="square-mul", shape="16x16", out=tmp_path))
    assert rc == 1
    prof = artifacts.read_variant(tmp_path, "square-mul")
    assert "not profiled" in prof.errors["check"] and prof.torch is None
    assert not (tmp_path / "square-mul" / "trace.json.gz").exists()


def test_default_shape_is_the_largest_benchmark_shape_the_variant_takes():
    assert capture.default_shape(get("square-torch"), "float32", "cuda") == (16384, 16384)
    assert capture.default_shape(get("mean-torch"), "float32", "cuda") == (2**28,)
    assert capture.default_shape(get("square-torch"), "float32", "cpu") == (64, 64)
    numba = capture.default_shape(get("square-numba-lecture"), "float32", "cpu")  # the simulator's cap
    assert numba[0] * numba[1] <= 1024


def test_profile_json_round_trips_ncu_metrics(tmp_path):
    metrics = ncu.parse_details_csv(fixture_text("h100-details.csv.gz"))["square-torch"]
    prof = artifacts.VariantProfile("square-torch", "square", "torch", "4096x4096", "float32", "cuda", ncu=metrics)
    artifacts.write_json(tmp_path / "square-torch" / "profile.json", prof)
    back = artifacts.read_variant(tmp_path, "square-torch")
    assert back.ncu == metrics and back.ncu[0].block == (128, 1, 1)
    assert isinstance(back.ncu[0].hints[0], artifacts.Hint)


# --- the lecture's demos on the CPU ------------------------------------------------------------------------------


def test_demos_read_the_squares_aten_ops_from_our_own_traces():
    found = demos.run("cpu-test", "abc", "cpu")
    assert not found.errors, found.errors
    ops = {s.variant: s.aten_ops for s in found.squares}
    assert ops["square-torch"][:2] == ["aten::square", "aten::pow"]  # torch.square reaches pow
    assert "aten::pow" in ops["square-pow"] and "aten::mul" not in ops["square-pow"]
    assert "aten::mul" in ops["square-mul"] and "aten::pow" not in ops["square-mul"]
    assert {s.expression for s in found.squares} == {"torch.square(a)", "a * a", "a ** 2"}
    assert "aten::square" in found.legacy_autograd_table
    assert "GPU" in found.skipped["host_clock"] and "GPU" in found.skipped["fixed_block"]


def test_the_fixed_block_square_is_right_up_to_1024_columns_and_wrong_past_them():
    assert demos.fixed_block_check(3, 1024, "cpu") == (True, pytest.approx(0, abs=1e-6))
    passed, err = demos.fixed_block_check(3, 1500, "cpu")
    assert not passed and err != err  # columns past 1024 keep their NaN poison


# --- cross-check ---------------------------------------------------------------------------------------------------


def test_cross_check_arithmetic():
    # (ncu, suite): the suite's time in % more than ncu's
    assert crosscheck.compare(100.0, 103.0) == {"diff_pct": pytest.approx(3.0), "judged": True, "within": True}
    assert crosscheck.compare(200.0, 190.0)["within"] is False  # -5%
    small = crosscheck.compare(50.0, 60.0)
    assert small["judged"] is False and small["within"] is None and small["diff_pct"] == pytest.approx(20.0)
    assert crosscheck.compare(None, 100.0)["diff_pct"] is None


def synthetic_profiles(root: Path) -> Path:
    mdir = root / "gpu-x"
    metrics = ncu.parse_details_csv(fixture_text("h100-details.csv.gz"))
    for name in PROBED:
        v = get(name)
        kernels = [artifacts.KernelMetrics(k.name, 250.0) for k in metrics[name]]  # long enough to be judged
        artifacts.write_json(mdir / name / "profile.json",
                             artifacts.VariantProfile(name, v.op, v.backend, "4096x4096", "float32", "cuda",
                                                      ncu=kernels))
    artifacts.write_json(mdir / "manifest.json", artifacts.Manifest("gpu-x", "GPU X", "abc", "2026-01-01", {},
                                                                    PROBED, "test"))
    return mdir


def test_cross_check_reads_profiles_and_results(tmp_path, monkeypatch, capsys):
    synthetic_profiles(tmp_path)
    suite = {("gpu-x", "square-torch", "4096x4096", "float32"): 255e-6,  # +2.0%: within
             ("gpu-x", "square-triton-flat1024", "4096x4096", "float32"): 200e-6}  # -20%: outside
    monkeypatch.setattr(crosscheck, "suite_times", lambda results_dir, repo=".": suite)
    table = {r["variant"]: r for r in crosscheck.rows(tmp_path, "results")}
    assert table["square-torch"]["diff_pct"] == pytest.approx(2.0) and table["square-torch"]["within"]
    assert table["square-triton-flat1024"]["within"] is False
    assert table["gelu-compile"]["suite_us"] is None and "no warm-mode result" in table["gelu-compile"]["why"]
    rc = cli.main(["profile", "--cross-check", "--profiles-dir", str(tmp_path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 1 and report["summary"]["outside"] == ["square-triton-flat1024"]
    assert report["summary"]["judged"] == 2 and report["summary"]["within"] == 1


@pytest.mark.skipif(not Path("results/benchmarks.json").exists(), reason="run from the repository root")
def test_suite_times_are_the_newest_warm_medians_of_the_stored_results():
    times = crosscheck.suite_times("results")
    assert times and all(t > 0 for t in times.values())
    assert ("nvidia-h100-80gb-hbm3", "square-torch", "4096x4096", "float32") in times


# --- the command line --------------------------------------------------------------------------------------------


def test_cli_json_prints_one_record_per_variant(tmp_path, capsys):
    rc = cli.main(["profile", "--op", "square", "--backend", "torch", "--shape", "16x16", "--ncu",
                   "--out", str(tmp_path), "--json"])
    out = capsys.readouterr().out
    records = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [r["variant"] for r in records] == ["square-torch", "square-mul", "square-pow"]
    for r in records:
        assert r["shape"] == "16x16" and r["kernels"] == {} and r["errors"] == {}
        assert "no CUDA GPU" in r["skipped"]["ncu"]  # asked for, and told why not
    assert artifacts.read_manifest(tmp_path).command.startswith("kernelscope profile --op square")


def test_cli_rejects_bad_filters_and_shapes(tmp_path, capsys):
    assert cli.main(["profile", "--op", "nope", "--out", str(tmp_path)]) == 2
    assert cli.main(["profile", "--shape", "4096by4096", "--out", str(tmp_path)]) == 2
    assert "bad shape" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
    assert cli.main(["profile", "--cross-check", "--profiles-dir", str(tmp_path / "none")]) == 2


# --- on the GPU box (pytest -m gpu) ------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["square-triton-flat1024", "square-triton-direct", "square-numba-coalesced",
                                  "square-numba-direct"])
def test_gpu_jit_code_of_the_kernels_that_ran(name, tmp_path):
    x = get(name).op_spec.make_input((1024, 1024), "float32", "cuda", 1)
    got = code.capture(get(name), x, tmp_path, "float32")
    assert not got.errors, got.errors
    ptx = [a for a in got.artifacts if a.kind == "ptx"]
    assert len(ptx) == 1 and ptx[0].registers and ".entry" in (tmp_path / ptx[0].file).read_text()


@pytest.mark.gpu
def test_gpu_cuda_code_is_the_instantiation_the_profiler_saw(tmp_path):
    out = tmp_path / "gpu"
    assert capture.run(capture.Options(variant="square-cuda-vec4", shape="4096x4096", out=out)) == 0
    prof = artifacts.read_variant(out, "square-cuda-vec4")
    ran = list(prof.torch.kernels)
    assert ran and {a.kernel for a in prof.code} and all(
        any(re.sub(r"\s", "", a.kernel) + "(" in re.sub(r"\s", "", k) for k in ran) for a in prof.code)


@pytest.mark.gpu
@pytest.mark.skipif(ncu.find_ncu() is None, reason="Nsight Compute (ncu) not installed")
def test_gpu_ncu_profiles_only_the_variants_own_kernels():
    result = ncu.run([ncu.Job("square-torch", "4096x4096", "float32", 1), ncu.Job("mean-cuda", "16777216",
                                                                                  "float32", 2)])
    if result.skipped:
        pytest.skip(result.skipped)
    assert not result.errors, result.errors
    assert len(result.metrics["square-torch"]) == 1  # not the input's randn, not the warm-up call
    assert result.metrics["square-torch"][0].duration_us > 5


@pytest.mark.gpu
def test_gpu_demos_show_the_host_clock_wrong_and_events_right():
    found = demos.run("gpu", "abc", "cuda")
    assert not found.errors, found.errors
    h = found.host_clock
    assert h.host_no_sync_us < h.events_us  # the launches only: the kernels were still queued
    wide = [r for r in found.fixed_block if r.cols > 1024]
    assert wide and not any(r.passed for r in wide)
    assert all(r.passed for r in found.fixed_block if r.cols <= 1024)


def test_a_numba_kernel_from_the_disk_cache_is_named_from_its_mangled_entry():
    """numba-cuda rebuilds a kernel loaded from its on-disk cache without ``py_func`` (on the H100:
    AttributeError); the name comes from the entry symbol numba-cuda's own mangler wrote."""
    from types import SimpleNamespace

    from numba.core import types
    from numba.cuda import itanium_mangler

    from kernelscope.profiling.code import numba_kernel_name

    entry = itanium_mangler.mangle("cudapy::kernelscope.backends.numba.square.square_coalesced_kernel",
                                   [types.float32[:, :], types.float32[:, :]], abi_tags=["v1"])
    assert numba_kernel_name(SimpleNamespace(entry_name=entry)) == "square_coalesced_kernel"
    assert numba_kernel_name(SimpleNamespace(py_func=lambda: None, entry_name=entry)) == "<lambda>"
    assert numba_kernel_name(SimpleNamespace(entry_name="plain_name")) == "plain_name"
