"""The dispatch floor: each variant's call cost from host mode at its op's smallest size,
where its GPU time overtakes it, and each backend's cheapest call against a PyTorch op's."""

from __future__ import annotations

import html
import re

import pytest

from kernelscope.catalog import OPS
from kernelscope.ops import numel
from kernelscope.results import dispatch

SQUARE = ["x".join(map(str, s)) for s in sorted(OPS["square"].bench_shapes, key=numel)]


def row(variant, mode, size, time_s, dtype="float32", status="measured"):
    return {"variant": variant, "mode": mode, "size": size, "time_s": time_s, "dtype": dtype, "status": status}


def sweep(variant, host_s, warm_s):
    """Host and warm rows of ``variant`` over square's sizes, smallest first."""
    return ([row(variant, "host", s, t) for s, t in zip(SQUARE, host_s)]
            + [row(variant, "warm", s, t) for s, t in zip(SQUARE, warm_s)])


def test_the_call_cost_is_host_mode_at_the_smallest_size_and_the_gpu_overtakes_it_where_warm_reaches_it():
    # H100: square-torch 10.3 us a call at 64x64 against 1.95 us of GPU; warm reaches it at 4096x4096
    warm = [1.95e-6, 2.2e-6, 3.2e-6, 47.7e-6, 181e-6, 712e-6]
    rows = sweep("square-torch", [10.3e-6, 10.5e-6, 10.8e-6, 48.2e-6, 181.5e-6, 713e-6], warm)
    (c,) = dispatch.call_costs(rows)
    assert (c.variant, c.backend, c.op, c.size) == ("square-torch", "torch", "square", SQUARE[0])
    assert c.call_s == 10.3e-6 and c.gpu_s == 1.95e-6 and c.host_over_gpu == pytest.approx(10.3 / 1.95)
    assert (c.overtakes_at, c.gpu_at_overtake_s, c.host_at_overtake_s) == (SQUARE[3], 47.7e-6, 48.2e-6)


def test_a_call_dearer_than_the_largest_gpu_time_never_overtakes_and_other_dtypes_or_failures_do_not_count():
    rows = sweep("square-numba-flat", [900e-6] * 6, [2e-6, 3e-6, 4e-6, 50e-6, 180e-6, 711e-6])
    rows.append(row("square-torch", "host", SQUARE[0], 5e-6, dtype="bfloat16"))  # not float32: ignored
    rows.append(row("square-mul", "host", SQUARE[0], 5e-6, status="failed"))  # failed: ignored
    (c,) = dispatch.call_costs(rows)
    assert c.variant == "square-numba-flat" and c.overtakes_at is None and c.gpu_at_overtake_s is None
    assert dispatch.call_costs(rows[6:]) == []  # warm alone: no call cost


def test_each_backends_floor_is_its_cheapest_call_over_pytorchs():
    rows = (sweep("square-torch", [10e-6] * 6, [2e-6] * 6) + sweep("square-mul", [9e-6] * 6, [2e-6] * 6)
            + sweep("square-numba-flat", [180e-6] * 6, [2e-6] * 6)
            + sweep("square-numba-coalesced", [126e-6] * 6, [2e-6] * 6))
    floors = {f.backend: f for f in dispatch.floors(dispatch.call_costs(rows))}
    assert set(floors) == {"torch", "numba"}
    assert floors["torch"].cheapest.variant == "square-mul" and floors["torch"].over_baseline == pytest.approx(1.0)
    assert floors["numba"].cheapest.variant == "square-numba-coalesced" and floors["numba"].variants == 2
    assert floors["numba"].over_baseline == pytest.approx(126 / 9)
    # without a PyTorch op there is nothing to compare with
    assert dispatch.floors(dispatch.call_costs(rows[24:]))[0].over_baseline is None


def test_the_kernels_page_shows_every_backends_floor_from_the_committed_results(built_site):
    page = html.unescape(re.sub("<[^>]+>", " ", (built_site / "concepts" / "kernels-into-pytorch" / "index.html")
                                .read_text()))
    assert "What a call costs from Python" in page and "dispatch floor" in page
    for title in ("PyTorch eager", "torch.compile", "Triton", "CUDA C++", "Numba CUDA"):
        assert re.search(rf"{re.escape(title)}\s+[\d.]+ µs", page), title
    assert "GPU time overtakes the call at" in page and "no host-mode results" not in page
