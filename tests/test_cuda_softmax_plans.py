"""softmax-cuda's plans over a dense grid of inputs, held to a recording: a rewrite of the plan must not move one.

tests/fixtures/softmax_cuda_plans.json.gz was written by this file (``python tests/test_cuda_softmax_plans.py``) from
softmax_plan as it stood before its rules became a table. It holds, for every (rows, cols, SMs, element size, DRAM
GB/s an SM) of the grid below, the plan (strategy, threads, cluster), and for every plan the launch arguments the
extension is given: (strategy code, threads, cluster). The grid takes every threshold the rules read, one either
side of it, on the presets' GPUs (132 SMs, the H100's and the H200's DRAM an SM, and 0 where the driver does not
say) and on smaller ones. Regenerate it only for a change of plan that is meant, and say so in the commit.
"""

from __future__ import annotations

import gzip
import json
import random
import string
import sys
from pathlib import Path

import pytest

from kernelscope.backends.cuda import kernels as K
from kernelscope.backends.device import PRESETS, DeviceFacts
from kernelscope.catalog import OPS

FIXTURE = Path(__file__).parent / "fixtures" / "softmax_cuda_plans.json.gz"
CODES = string.digits + string.ascii_letters + "!#$%&()*+,-./:;<=>?@[]^_{|}~"  # a plan's index, one character


def grid() -> dict:
    """The inputs: each axis, every combination taken."""
    sms = sorted({f.sm_count for f in PRESETS.values()} | {114, 78, 16})
    dram = sorted({0.0} | {f.dram_gbps_per_sm for f in PRESETS.values()})
    rows = set(range(1, 11)) | {2**k + d for k in range(4, 18) for d in (-1, 0, 1)} | {100000}
    for s in sms:  # rows x cluster against the SMs' fill, and rows against the SMs
        for c in (1, 2, 4, 8, 16):
            rows |= {-(-K.SOFTMAX_CLUSTER_FILL * s // c) + d for d in (-1, 0, 1)}
        rows |= {s - 1, s, s + 1}
    cols = set(range(1, 34)) | {2**k + d for k in range(5, 25) for d in (-1, 0, 1)}
    for c in (1, 2, 4, 8, 16):
        for edge in (2 * c * K.SOFTMAX_MIN_SLICE, c * K.SOFTMAX_BLOCK_MAX_COLS, c * K.SOFTMAX_BLOCK_MAX_COLS_F32_C8,
                     c * K.SOFTMAX_RING_MAX_BYTES // 16 * 4, c * K.SOFTMAX_RING_MAX_BYTES // 16 * 8,
                     c * K.SOFTMAX_RING_MAX_BYTES // 32 * 8):
            cols |= {edge + d for d in range(-9, 10)}
    for threads in (128, 256, 512, 1024):  # a thread's elements against the register and pipe capacities
        for c in (2, 4, 8, 16):
            for ept in (16, 32, 64):
                cols |= {threads * c * ept + d for d in (-8, -1, 0, 1, 8)}
    # the recorded grid's shapes: benchmark, check and stress shapes, the GPU-only past-2^31 one aside
    shapes = {*OPS["softmax"].bench_shapes, *OPS["softmax"].check_shapes,
              *(s.shape for s in OPS["softmax"].stress if not s.gpu_only)}
    rows |= {r for r, _ in shapes}
    cols |= {c for _, c in shapes} | {50257, 9001, 6000, 231307, 1000, 1025, 16385, 20000}
    draw = random.Random(20261127)
    cols |= {int(2 ** draw.uniform(5, 24)) for _ in range(150)}
    return {"rows": sorted(r for r in rows if r > 0), "cols": sorted(c for c in cols if c > 0), "sm_count": sms,
            "itemsize": [2, 4], "dram_gbps_per_sm": dram}


def inputs(axes: dict):
    for sms in axes["sm_count"]:
        for itemsize in axes["itemsize"]:
            for dram in axes["dram_gbps_per_sm"]:
                for rows in axes["rows"]:
                    for cols in axes["cols"]:
                        yield rows, cols, sms, itemsize, dram


def launch_args(plan) -> tuple[int, int, int]:
    """What K.softmax passes the extension for ``plan`` (recorded: SOFTMAX_STRATEGIES[strategy], threads, cluster)."""
    return K.softmax_launch_args(plan)


def record() -> dict:
    axes = grid()
    plans: dict[tuple, int] = {}
    codes = []
    for args in inputs(axes):
        plan = tuple(K.softmax_plan(*args))
        codes.append(CODES[plans.setdefault(plan, len(plans))])
    assert len(plans) <= len(CODES)
    return {"axes": axes, "plans": [[*p, *launch_args(K.SoftmaxPlan(*p))] for p in plans],
            "strategies": K.SOFTMAX_STRATEGIES, "grid": "".join(codes)}


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


def test_the_grid_is_the_recorded_one_and_reaches_every_strategy_the_plan_takes(recorded):
    # the grid is the recording's (a smaller grid here would hold less); it is dense where the rules decide
    assert recorded["axes"] == json.loads(json.dumps(grid()))
    assert {p[0] for p in recorded["plans"]} == {"warp", "block", "cluster", "loop", "loopp", "pipe", "ring",
                                                  "ring1e"}
    assert len(recorded["grid"]) > 500_000


def test_softmax_plan_gives_the_recorded_plan_for_every_input(recorded):
    plans = [K.SoftmaxPlan(*p[:3]) for p in recorded["plans"]]
    wrong = []
    for args, code in zip(inputs(recorded["axes"]), recorded["grid"], strict=True):
        plan = K.softmax_plan(*args)
        if plan != plans[CODES.index(code)]:
            wrong.append((args, plans[CODES.index(code)], plan))
    assert not wrong, f"{len(wrong)} inputs plan differently, e.g. (input, recorded, now): {wrong[:5]}"


def test_every_plan_launches_with_the_recorded_arguments(recorded):
    for *plan, code, threads, cluster in recorded["plans"]:
        assert launch_args(K.SoftmaxPlan(*plan)) == (code, threads, cluster), plan
    # every strategy a caller may name (the tuning scripts' overrides too) keeps its code
    assert K.SOFTMAX_STRATEGIES == recorded["strategies"]
    for name, code in recorded["strategies"].items():
        assert launch_args(K.SoftmaxPlan(name, 256, 4)) == (code, 256, 4)


def test_a_call_launches_the_recorded_arguments_on_each_preset(recorded, monkeypatch):
    # K.softmax's own path from a shape to the extension's arguments (_softmax_launch: the GPU's facts, the plan,
    # its codes), on a sample of the grid
    plans = recorded["plans"]
    for name, facts in PRESETS.items():
        monkeypatch.setattr(K, "gpu_facts", lambda index, f=facts: DeviceFacts(f"cuda:{index}", f.sm_count,
                                                                               dram_gbps_per_sm=f.dram_gbps_per_sm))
        K._softmax_launch.cache_clear()
        try:
            for i, ((rows, cols, sms, itemsize, dram), code) in enumerate(zip(inputs(recorded["axes"]),
                                                                               recorded["grid"], strict=True)):
                if i % 97 or sms != facts.sm_count or dram != facts.dram_gbps_per_sm:
                    continue
                assert K._softmax_launch(rows, cols, itemsize, 0) == tuple(plans[CODES.index(code)][3:]), (
                    name, rows, cols, itemsize)
        finally:
            K._softmax_launch.cache_clear()


if __name__ == "__main__":  # write the recording (see the module's docstring: only for a plan change meant)
    data = json.dumps(record(), separators=(",", ":")).encode()
    FIXTURE.write_bytes(gzip.compress(data, 9, mtime=0))
    print(f"{FIXTURE}: {len(data)} bytes, {FIXTURE.stat().st_size} compressed", file=sys.stderr)
