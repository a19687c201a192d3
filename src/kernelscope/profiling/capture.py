"""``kernelscope profile``: every selected variant profiled, its artifacts written as data.

For each variant, on fresh random input of the op's largest benchmark shape
(so kernels run long enough for ncu and the suite to be compared; ``--shape``
overrides; the CPU path takes the largest that its interpreters check): the
check against the float64 reference once (a wrong kernel is not profiled as if
fine), then torch.profiler (CPU and CUDA activities, a wait/warmup/active
schedule: the key_averages table, a gzipped chrome trace, ops and kernel
counts), then the compiled code (:mod:`kernelscope.profiling.code`). With
``--demos`` the lecture's demonstrations (:mod:`kernelscope.profiling.demos`);
with ``--ncu`` one Nsight Compute pass over all of them at the end
(:mod:`kernelscope.profiling.ncu`).

Everything goes to ``profiles/<machine>/`` (the layout is
:mod:`kernelscope.profiling.artifacts`), the machine named as asv names it.
Nothing stops the run: a part that fails is recorded in the variant's
``errors`` and the rest goes on; the exit status is 1 if any part failed.
"""

from __future__ import annotations

import gzip
import json
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import torch

import kernelscope
from kernelscope import backends
from kernelscope.catalog import Variant, select
from kernelscope.ops import Shape, numel, parse_shape, shape_str
from kernelscope.profiling import artifacts, code, ncu
from kernelscope.profiling.artifacts import Manifest, TorchProfile, VariantProfile

WAIT, WARMUP, ACTIVE = 1, 1, 3  # a few steps: the trace stays small


@dataclass
class Options:
    op: str | None = None
    variant: str | None = None
    backend: str | None = None
    shape: str | None = None  # every variant at this shape; default: each one's largest benchmark shape
    dtype: str = "float32"
    ncu: bool = False
    demos: bool = False
    out: Path | None = None  # the machine's folder; default profiles/<machine>
    json: bool = False
    command: str = "kernelscope profile"


def cpu_cap(variant: Variant) -> int:
    """The largest input the CPU path profiles: what its interpreter checks in reasonable time."""
    from kernelscope.timing.cases import CPU_MAX_NUMEL

    return min(CPU_MAX_NUMEL, backends.BACKENDS[variant.backend].interpreted_max_numel or CPU_MAX_NUMEL)


def default_shape(variant: Variant, dtype: str, device: str) -> Shape | None:
    """The op's largest benchmark shape the variant takes (on the CPU, under its interpreter's cap)."""
    op = variant.op_spec
    cap = cpu_cap(variant) if device == "cpu" else None
    for shapes in (op.bench_shapes, op.check_shapes):  # the check's small shapes when no benchmark one fits
        fits = [s for s in shapes if not variant.unsupported(s, dtype) and (cap is None or numel(s) <= cap)]
        if fits:
            return max(fits, key=numel)
    return None


def machine_name() -> str:
    """The asv machine name `kernelscope machine` records ($KERNELSCOPE_MACHINE or asv's machine file first)."""
    from kernelscope.results.machine import describe, machine_name as asv_machine

    return asv_machine() or describe()["machine"]


def git_commit() -> str:
    repo = Path(kernelscope.__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def versions(with_ncu: bool) -> tuple[str, dict[str, str]]:
    """(GPU name, versions of everything that shaped the artifacts)."""
    from kernelscope.results.machine import describe

    info = describe()
    found = {"python": platform.python_version(), "torch": info["torch"], "triton": info["triton"],
             "numba": info["numba"], "numba-cuda": info["numba_cuda"], "cuda": info["cuda"],
             "driver": info["driver"], "nvcc": code.tool_version("nvcc"),
             "cuobjdump": "found" if code.find_tool("cuobjdump") else "not found"}
    if with_ncu:
        found["ncu"] = ncu.version()
    return info["gpu"], found


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _fresh_dir(path: Path) -> None:
    """Empty a variant's folder of an earlier capture (only folders that hold one, never anything else)."""
    if path.exists() and (path / "profile.json").exists():
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)


def _gzip_file(src: Path, dst: Path) -> None:
    with open(src, "rb") as raw, open(dst, "wb") as out, gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        shutil.copyfileobj(raw, gz)
    src.unlink()


def _torch_profile(variant: Variant, x: torch.Tensor, vdir: Path):
    from kernelscope.profiling.torch_profiler import profile_variant

    plain = vdir / "trace.json"
    prof = profile_variant(variant, x, wait=WAIT, warmup=WARMUP, active=ACTIVE, trace=plain)
    _gzip_file(plain, vdir / "trace.json.gz")
    artifacts.write_text(vdir / "torch_profiler.txt", prof.table + "\n")
    return prof, TorchProfile(table_file="torch_profiler.txt", trace_file="trace.json.gz", ops=prof.ops,
                              kernels=prof.kernels, active_steps=prof.active, self_cuda_us=prof.self_device_us,
                              self_cpu_us=prof.self_cpu_us)


def capture_variant(variant: Variant, opts: Options, device: str, vdir: Path, commit: str
                    ) -> tuple[VariantProfile, ncu.Job | None]:
    """One variant's check, torch.profiler run and code, into vdir; the ncu job for it, if it may be profiled."""
    from kernelscope.check import check_case, fresh_seed

    prof = VariantProfile(variant=variant.name, op=variant.op, backend=variant.backend, shape="", dtype=opts.dtype,
                          device=device, commit=commit)
    if opts.dtype not in variant.dtypes:
        prof.skipped["variant"] = f"{variant.name} does not take {opts.dtype} (takes {', '.join(variant.dtypes)})"
        return prof, None
    shape = parse_shape(opts.shape) if opts.shape else default_shape(variant, opts.dtype, device)
    if shape is None:
        prof.skipped["variant"] = f"no shape of {variant.op} fits {variant.name} here"
        return prof, None
    prof.shape = shape_str(shape)
    if len(shape) != variant.op_spec.ndim:
        prof.skipped["variant"] = f"{variant.op} takes {variant.op_spec.ndim}-D inputs, got {prof.shape}"
        return prof, None
    why = variant.unsupported(shape, opts.dtype)
    if why:
        prof.skipped["variant"] = why
        return prof, None
    why = variant.unavailable(device)
    if why:
        prof.skipped["torch"] = prof.skipped["ncu"] = why
        _code(prof, variant, None, opts.dtype, vdir, None)  # CUDA C++: nvcc needs no GPU
        return prof, None

    t0 = time.perf_counter()
    prof.seed = fresh_seed()
    passed = False
    try:
        res = check_case(variant, shape, opts.dtype, device, prof.seed)
        prof.rel_err, passed = res.rel_err, res.ok
        if not passed:
            prof.errors["check"] = (f"rel_err {res.rel_err:.3g} > {res.tolerance:g} against the float64 reference "
                                    f"(seed {prof.seed}): not profiled")
    except Exception as exc:
        prof.errors["check"] = f"{type(exc).__name__}: {exc}"
    prof.seconds["check"] = time.perf_counter() - t0
    try:
        x = variant.op_spec.make_input(shape, opts.dtype, device, prof.seed)
    except Exception as exc:  # e.g. out of memory at this shape: the check's error above says more
        x, passed = None, False
        prof.errors["input"] = f"{type(exc).__name__}: {exc}"
    launched = None
    if passed:
        t0 = time.perf_counter()
        try:
            raw, prof.torch = _torch_profile(variant, x, vdir)
            launched = list(raw.kernels)
        except Exception as exc:
            prof.errors["torch"] = f"{type(exc).__name__}: {exc}"
        prof.seconds["torch"] = time.perf_counter() - t0
    _code(prof, variant, x, opts.dtype, vdir, launched)
    del x
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    job = ncu.Job(variant.name, prof.shape, opts.dtype, prof.seed) if passed else None
    return prof, job


def _code(prof: VariantProfile, variant: Variant, x, dtype: str, vdir: Path, launched) -> None:
    t0 = time.perf_counter()
    got = code.capture(variant, x, vdir, dtype, launched)
    prof.code, prof.seconds["code"] = got.artifacts, time.perf_counter() - t0
    prof.skipped.update(got.skipped)
    prof.errors.update(got.errors)


def _progress_line(i: int, n: int, prof: VariantProfile) -> str:
    parts = [f"{label} {prof.seconds[key]:.1f} s" for key, label in
             (("check", "check"), ("torch", "torch.profiler"), ("code", "code")) if key in prof.seconds]
    if "variant" in prof.skipped:
        parts = [f"skipped: {prof.skipped['variant']}"]
    elif "torch" in prof.skipped:
        parts.insert(0, f"not run here ({prof.skipped['torch']})")
    if prof.errors:
        parts.append("errors: " + "; ".join(f"{k}: {v}" for k, v in prof.errors.items()))
    return f"[{i}/{n}] {prof.variant} {prof.shape} {prof.dtype}: " + ", ".join(parts)


def summary(prof: VariantProfile, vdir: Path) -> dict:
    """The one-line record `--json` prints per variant."""
    return {
        "variant": prof.variant, "op": prof.op, "backend": prof.backend, "shape": prof.shape, "dtype": prof.dtype,
        "device": prof.device, "dir": str(vdir), "rel_err": prof.rel_err,
        "kernels": prof.torch.kernels if prof.torch else None,
        "self_cuda_us": prof.torch.self_cuda_us if prof.torch else None,
        "code": [a.file for a in prof.code],
        "ncu_kernels": [k.name for k in prof.ncu] if prof.ncu is not None else None,
        "ncu_us": sum(k.duration_us for k in prof.ncu) if prof.ncu else None,
        "skipped": prof.skipped, "errors": prof.errors, "seconds": {k: round(v, 2) for k, v in prof.seconds.items()},
    }


def _apply_ncu(result: ncu.Result, profiles: dict[str, VariantProfile], jobs: list[ncu.Job], out_dir: Path) -> None:
    asked = {j.variant for j in jobs}
    for name, prof in profiles.items():
        if name not in asked:
            prof.skipped.setdefault("ncu", "not profiled: the variant did not pass the check or did not run here")
            continue
        if result.skipped:
            prof.skipped["ncu"] = result.skipped
            continue
        if "*" in result.errors:
            prof.errors["ncu"] = result.errors["*"]
            continue
        if name in result.errors:
            prof.errors["ncu"] = result.errors[name]
        if name in result.metrics:
            prof.ncu = result.metrics[name]
        if name in result.text:
            artifacts.write_text(out_dir / name / "ncu.txt.gz", result.text[name], compress=True)
            prof.ncu_text_file = "ncu.txt.gz"
        prof.seconds["ncu"] = result.seconds / max(1, len(jobs))  # one process for all: its share


def run(opts: Options) -> int:
    backends.configure_interpreters()
    device = backends.default_device()
    variants = select(op=opts.op, variant=opts.variant, backend=opts.backend)
    machine = machine_name()
    out_dir = Path(opts.out) if opts.out else artifacts.PROFILES_DIR / machine
    commit = git_commit()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    gpu, found_versions = versions(opts.ncu)
    _say(f"kernelscope profile: {len(variants)} variants on {device} ({gpu}), machine {machine}, into {out_dir}/")
    out_dir.mkdir(parents=True, exist_ok=True)

    profiles: dict[str, VariantProfile] = {}
    jobs: list[ncu.Job] = []
    for i, variant in enumerate(variants, 1):
        vdir = artifacts.variant_dir(out_dir, variant.name)
        _fresh_dir(vdir)
        try:
            prof, job = capture_variant(variant, opts, device, vdir, commit)
        except Exception as exc:  # anything capture_variant did not expect: this variant's error, not the run's
            prof, job = VariantProfile(variant.name, variant.op, variant.backend, opts.shape or "", opts.dtype,
                                       device, commit=commit), None
            prof.errors["capture"] = f"{type(exc).__name__}: {exc}"
        profiles[variant.name] = prof
        artifacts.write_json(vdir / "profile.json", prof)  # now, in case a later step dies; again after ncu
        if job:
            jobs.append(job)
        _say(_progress_line(i, len(variants), prof))

    demo_errors = False
    if opts.demos:
        try:
            from kernelscope.profiling import demos

            found = demos.run(machine, commit, device, progress=_say)
        except Exception as exc:
            found = artifacts.Demos(machine=machine, commit=commit, errors={"demos": f"{type(exc).__name__}: {exc}"})
        artifacts.write_json(out_dir / "demos.json", found)
        demo_errors = bool(found.errors)

    if opts.ncu:
        if device == "cuda":
            torch.cuda.empty_cache()  # the child needs the GPU's memory
        _say(f"ncu: {len(jobs)} variants in one Nsight Compute process ...")
        try:
            result = ncu.run(jobs, log=lambda line: _say(f"  ncu| {line}"))
        except Exception as exc:
            result = ncu.Result(errors={"*": f"{type(exc).__name__}: {exc}"})
        _apply_ncu(result, profiles, jobs, out_dir)
        kernels = sum(len(v) for v in result.metrics.values())
        _say(f"ncu: {result.skipped or f'{kernels} kernels of {len(result.metrics)} variants in {result.seconds:.1f} s'}")
        if result.errors:
            _say("ncu errors: " + "; ".join(f"{k}: {v}" for k, v in result.errors.items()))
            _say("ncu output (last lines):\n" + "\n".join(result.log.strip().splitlines()[-15:]))
    else:
        for prof in profiles.values():
            prof.skipped.setdefault("ncu", "not asked for (kernelscope profile --ncu)")

    for name, prof in profiles.items():
        artifacts.write_json(artifacts.variant_dir(out_dir, name) / "profile.json", prof)
        if opts.json:
            print(json.dumps(summary(prof, artifacts.variant_dir(out_dir, name))), flush=True)
    order = {v: i for i, v in enumerate(v.name for v in select())}
    present = sorted((p.name for p in out_dir.iterdir() if (p / "profile.json").exists()),
                     key=lambda n: (order.get(n, len(order)), n))
    artifacts.write_json(out_dir / "manifest.json", Manifest(machine=machine, gpu=gpu, commit=commit, date=started,
                                                             versions=found_versions, variants=present,
                                                             command=opts.command))
    failed = [p.variant for p in profiles.values() if p.errors]
    _say(f"kernelscope profile: {len(profiles)} variants into {out_dir}/"
         + (f"; errors in {', '.join(failed)}" if failed else "") + ("; demos had errors" if demo_errors else ""))
    return 1 if failed or demo_errors else 0
