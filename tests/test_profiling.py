"""torch.profiler around a catalog variant: the schedule, the NVTX-named range, the trace (CPU path)."""

import torch

from kernelscope.catalog import VARIANTS
from kernelscope.profiling.torch_profiler import legacy_autograd_profile, profile_variant, trace_events


def test_only_the_active_steps_are_recorded_under_the_variants_name(tmp_path):
    x = torch.randn(64, 64)
    prof = profile_variant(VARIANTS["square-mul"], x, wait=2, warmup=1, active=3, trace=tmp_path / "t.json")
    assert prof.ops["square:square-mul"] == 3  # not the 2 skipped nor the warm-up step
    assert prof.ops["aten::mul"] == 3  # a * a reaches aten::mul, once a call
    assert "aten::mul" in prof.table and "square:square-mul" in prof.table
    names = [e.get("name") for e in trace_events(prof.trace)]
    assert names.count("square:square-mul") == 3


def test_the_square_variants_reach_different_aten_ops():
    x = torch.randn(64, 64)
    reached = {name: profile_variant(VARIANTS[name], x, wait=0, warmup=1, active=1).ops
               for name in ("square-torch", "square-mul", "square-pow")}
    assert "aten::square" in reached["square-torch"]
    assert "aten::mul" in reached["square-mul"] and "aten::pow" not in reached["square-mul"]
    assert "aten::pow" in reached["square-pow"]


def test_the_legacy_autograd_profiler_runs_as_spelled_today():
    x = torch.randn(32, 32)
    assert "aten::mul" in legacy_autograd_profile(lambda: x * x)
