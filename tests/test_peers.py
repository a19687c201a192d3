"""`kernelscope crosscheck`: the suite's clocks beside peer timers, the file, the agreement and the gate, the page."""

from __future__ import annotations

import functools
import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from kernelscope import backends
from kernelscope.cli import main
from kernelscope.evidence.peers import agreement, command, data, measure, ncu_pass
from kernelscope.evidence.peers.data import PeersFile, Record
from kernelscope.profiling import ncu
from kernelscope.profiling.artifacts import Manifest
from kernelscope.asv import suite as asv_suite

ON_CPU = not backends.cuda_available()
cpu_only = pytest.mark.skipif(not ON_CPU, reason="the CPU path's skips (on a GPU these clocks run)")


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


# --- the command on the CPU path --------------------------------------------------------------------------------------

@cpu_only
def test_crosscheck_times_the_case_with_host_clocks_and_says_why_the_rest_did_not_run(tmp_path, capsys):
    path = tmp_path / "peers.json"
    rc, out, err = run_cli(["crosscheck", "--variant", "square-torch", "--size", "64x64", "--out", str(path)], capsys)
    assert rc == 0, err
    assert "[1/1] square-torch 64x64: measuring" in err and "written to" in err
    peers = data.read(path)
    assert peers.device == "cpu" and peers.stamp.command == "kernelscope crosscheck --variant square-torch --size " \
        f"64x64 --out {path}"
    assert peers.stamp.machine and peers.stamp.commit and peers.stamp.versions["torch"]
    (rec,) = peers.records
    assert (rec.op, rec.variant, rec.size, rec.dtype, rec.status) == ("square", "square-torch", "64x64", "float32",
                                                                      "measured")
    for clock in ("warm", "cold", "timer"):
        assert 0 < rec.seconds[clock] < 0.1, clock
    assert rec.host_per_call_s > 0 and rec.details["warm_number"] >= 1 and rec.details["timer_number"] >= 1
    for clock in ("graph", "do_bench", "do_bench_cudagraph", "ncu"):  # never faked: null and the reason
        assert rec.seconds[clock] is None and "GPU" in rec.skipped[clock], clock
    assert rec.diff_pct["warm"] == pytest.approx((rec.seconds["warm"] / rec.seconds["timer"] - 1) * 100)
    assert rec.diff_pct["cold"] is None and rec.diff_pct["graph"] is None
    assert agreement.host_bound(rec, "warm") is None  # on the CPU every clock is the host's: nothing to tell apart
    assert re.search(r"^square-torch 64x64\s+[\d.,]+\s+[\d.,]+\s+[+-][\d.]+%", out, re.M), out
    assert "warm ~ Timer" in out and "1 case," in out and "gate (" in out


@cpu_only
def test_a_triton_kernel_runs_under_the_interpreter_and_json_goes_to_stdout(tmp_path, capsys):
    rc, out, err = run_cli(["crosscheck", "--variant", "square-triton-flat1024", "--size", "64x64", "--json",
                            "--no-ncu", "--out", str(tmp_path / "p.json")], capsys)
    assert rc == 0, err
    assert os.environ.get("TRITON_INTERPRET") == "1"
    doc = json.loads(out)
    assert set(doc) == {"file", "stamp", "summary", "gate", "records"}
    (rec,) = doc["records"]
    assert rec["backend"] == "triton" and rec["seconds"]["warm"] > 0 and rec["seconds"]["timer"] > 0
    assert rec["skipped"]["ncu"] == "not asked for (kernelscope crosscheck --no-ncu)"
    assert doc["summary"]["warm"]["compared"] == 1 and doc["summary"]["graph"]["compared"] == 0
    assert doc["stamp"]["variants"] == ["square-triton-flat1024"]


@cpu_only
def test_cases_the_suite_refuses_are_recorded_with_its_reason(tmp_path, capsys):
    path = tmp_path / "p.json"
    rc, _, err = run_cli(["crosscheck", "--backend", "cuda", "--op", "square", "--size", "64x64", "--no-ncu",
                          "--out", str(path)], capsys)
    assert rc == 0, err
    records = data.read(path).records
    assert {r.variant for r in records} == {"square-cuda-lecture", "square-cuda-vec4"}
    assert all(r.status == "skipped" and "needs a CUDA GPU" in r.reason and r.seconds["warm"] is None
               for r in records)
    rc, _, _ = run_cli(["crosscheck", "--variant", "mean-torch", "--size", "64x64", "--no-ncu", "--out", str(path)],
                       capsys)
    (rec,) = data.read(path).records
    assert rec.status == "skipped" and "1-D" in rec.reason


@cpu_only
def test_a_narrowed_run_does_not_take_the_place_of_the_whole_runs_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default folder, evidence/<machine>/, is relative to where it runs
    rc, _, err = run_cli(["crosscheck", "--variant", "square-mul", "--size", "16x16", "--no-ncu"], capsys)
    assert rc == 0, err
    (machine,) = (tmp_path / "evidence").iterdir()
    assert [p.name for p in machine.iterdir()] == ["peers-variant-square-mul-size-16x16.json"]
    assert f"written to {Path('evidence') / machine.name / 'peers-variant-square-mul-size-16x16.json'}" in err
    assert data.machines(tmp_path / "evidence") == []  # the site reads peers.json alone
    assert data.default_path("m") == Path("evidence/m/peers.json")


@cpu_only
def test_a_run_in_more_dtypes_times_each_case_in_each(tmp_path, capsys):
    # the bfloat16 cases have their own targets (80% of copy on the wide rows), so their clocks need peers too
    path = tmp_path / "p.json"
    rc, _, err = run_cli(["crosscheck", "--variant", "square-mul", "--size", "16x16", "--dtype", "float32", "bfloat16",
                          "--no-ncu", "--out", str(path)], capsys)
    assert rc == 0, err
    assert [(r.size, r.dtype, r.status) for r in data.read(path).records] == [
        ("16x16", "float32", "measured"), ("16x16", "bfloat16", "measured")]
    assert command.narrowed_to(command.Options(op="softmax", dtypes=("bfloat16",))) == "op-softmax-dtype-bfloat16"
    assert command.narrowed_to(command.Options(op="softmax")) == "op-softmax"  # float32 alone: the default
    with pytest.raises(SystemExit) as exc:  # argparse names the choices
        main(["crosscheck", "--variant", "square-mul", "--dtype", "float64"])
    assert exc.value.code == 2 and "float64" in capsys.readouterr().err


def test_the_clis_dtype_names_are_the_ops():
    from kernelscope.cli import DTYPE_CHOICES
    from kernelscope.ops import DTYPES

    assert list(DTYPE_CHOICES) == list(DTYPES)


@cpu_only
def test_the_gate_on_the_cpu_fails_rather_than_pass_on_nothing(tmp_path, capsys, monkeypatch):
    # Nothing judged, whatever the CPU's load: a busy 2-core CI machine read cold mode over the gate's 50 us even
    # at 16x16, so the gate judges only cases of 10 s or more here
    monkeypatch.setattr(agreement, "gate", functools.partial(agreement.gate, min_s=10.0))
    rc, out, err = run_cli(["crosscheck", "--variant", "square-mul", "--size", "16x16", "--no-ncu", "--gate",
                            "--out", str(tmp_path / "p.json")], capsys)
    assert rc == 1
    assert "the gate failed: nothing judged" in err and "FAILED" in out


def test_crosscheck_help_and_bad_input(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["crosscheck", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for words in ("torch.utils.benchmark.Timer", "do_bench_cudagraph", "evidence/<machine>/peers.json", "examples:",
                  "kernelscope crosscheck --gate", "--no-ncu", "50 us", "host-bound"):
        assert words in text, words
    rc, _, err = run_cli(["crosscheck", "--variant", "square-nonesuch"], capsys)
    assert rc == 2 and "square-nonesuch" in err
    rc, _, err = run_cli(["crosscheck", "--variant", "square-torch", "--size", "64by64"], capsys)
    assert rc == 2 and "64by64" in err


def test_cases_are_every_variant_at_its_ops_sizes():
    specs = measure.case_specs()
    from kernelscope.catalog import VARIANTS, select

    assert len(specs) == sum(len(v.op_spec.bench_shapes) for v in VARIANTS.values())
    assert measure.case_specs(variant="mean-numba")[-1] == measure.CaseSpec("mean", "mean-numba", "268435456")
    squares = len(select(op="square"))
    assert squares >= 13 and [s.size for s in measure.case_specs(op="square", size="64x64")] == ["64x64"] * squares


def test_graph_mode_captures_the_calls_the_suite_captures():
    assert asv_suite.graph_calls(1e-6) == asv_suite.GRAPH_MAX_CALLS
    assert asv_suite.graph_calls(1e-3) == 2
    assert asv_suite.graph_calls(1.0) == 1


class _Drifting:
    """A call whose host cost triples once it is told to (as a Numba call's moved on the H100), on the CPU."""

    device = "cpu"

    def __init__(self):
        self.slow, self.log = False, []

    def call(self):
        import time

        # Calls of 0.4 and 1.2 ms: a block of 50 lasts 20 or 60 ms, long beside the few ms the other test
        # process can take this one's core for, so a preemption does not pass for a spell of the host.
        t = time.perf_counter()
        while time.perf_counter() - t < (1.2e-3 if self.slow else 0.4e-3):
            pass

    def check(self, out):
        self.log.append("check")


def test_host_mode_and_timer_read_in_pairs_see_the_same_drift(monkeypatch):
    # The host is slow in spells: fast for host mode's samples 1-3, slow for 4-8 (after the third sample), fast
    # again from the ninth. Timer's reading after each sample sees the host that sample saw, so both clocks
    # take five fast and five slow blocks of as many calls, and their medians agree though the spread is 3x.
    case = _Drifting()
    monkeypatch.setattr(measure, "plan_host", lambda fn, device: 50)
    order = []
    real_block, real_timer = measure.block_s, measure._timer

    def block_s(fn, device, number):
        order.append("host")
        case.slow = 4 <= order.count("host") <= 8
        return real_block(fn, device, number)

    class Timer:  # torch's Timer, its readings logged in the order they are taken
        def __init__(self, case):
            self.timer = real_timer(case)

        def timeit(self, number):
            order.append(("timer", number))
            return self.timer.timeit(number)

    monkeypatch.setattr(measure, "block_s", block_s)
    monkeypatch.setattr(measure, "_timer", Timer)
    found = measure.host_and_timer(case, samples=10)
    host, timer = found["host"], found["timer"]
    assert order == ["host", ("timer", 50)] * 10 and case.log == ["check"]
    assert host[1]["host_samples"] == 10 and host[1]["host_number"] == 50
    assert timer[1]["timer_blocks"] == 10 and timer[1]["timer_number"] == 50 and timer[1]["timer_paired"]
    assert host[1]["host_max_s"] > 2 * host[1]["host_min_s"]  # the spells show in host mode's span
    assert timer[1]["timer_max_s"] > 2 * timer[1]["timer_min_s"]  # and in Timer's: they read the same host
    assert host[0] == pytest.approx(timer[0], rel=0.25)  # both medians sit between the fast and the slow host
    assert host[1]["host_pair_ratio"] == pytest.approx(1.0, rel=0.25)  # each pair saw one host


def test_a_timer_that_fails_leaves_host_modes_reading(monkeypatch):
    case = _Drifting()
    monkeypatch.setattr(measure, "plan_host", lambda fn, device: 10)

    class Broken:
        def timeit(self, number):
            raise RuntimeError("no timer here")

    monkeypatch.setattr(measure, "_timer", lambda case: Broken())
    found = measure.host_and_timer(case, samples=4)
    assert isinstance(found["timer"], RuntimeError) and found["host"][1]["host_samples"] == 4


def test_host_pairs_go_on_while_their_ratio_is_unsure(monkeypatch):
    # A host whose blocks wander by a third: each host block and its Timer reading see independent draws, so
    # twenty ratios leave the median unsure by several percent; pairs are added 20 at a time up to the cap.
    # A quiet host stops at the first twenty.
    import random

    rng = random.Random(7)
    case = _Drifting()
    monkeypatch.setattr(measure, "plan_host", lambda fn, device: 10)

    class Reading:  # a Measurement's fields that host_and_timer reads
        def __init__(self, s):
            self.median, self.number_per_run, self.raw_times = s, 10, [s * 10]

    class Timer:
        def timeit(self, number):
            return Reading(rng.uniform(1.0, 1.35) * 1e-5)

    monkeypatch.setattr(measure, "_timer", lambda case: Timer())
    monkeypatch.setattr(measure, "block_s", lambda fn, device, number: rng.uniform(1.0, 1.35) * 1e-5)
    noisy = measure.host_and_timer(case, samples=20, max_pairs=200, ratio_ci_pct=1.0)
    assert noisy["host"][1]["host_samples"] > 20 and noisy["host"][1]["host_samples"] % 20 == 0
    lo, hi = noisy["host"][1]["host_pair_ratio_ci"]
    assert lo <= noisy["host"][1]["host_pair_ratio"] <= hi

    monkeypatch.setattr(measure, "block_s", lambda fn, device, number: 1e-5 * (1 + rng.uniform(0, 1e-4)))
    monkeypatch.setattr(Timer, "timeit", lambda self, number: Reading(1e-5 * (1 + rng.uniform(0, 1e-4))))
    quiet = measure.host_and_timer(case, samples=20, max_pairs=200, ratio_ci_pct=1.0)
    assert quiet["host"][1]["host_samples"] == 20


def test_the_medians_interval_holds_the_order_statistics_a_binomial_gives():
    values = list(range(1, 101))  # n = 100: ranks 40 and 61 (50 - 9.8, 1 + 50 + 9.8)
    assert measure.median_interval([float(v) for v in values]) == (40.0, 61.0)
    assert measure.median_interval([3.0]) == (3.0, 3.0)
    lo, hi = measure.median_interval([5.0, 1.0, 4.0, 2.0, 3.0])
    assert lo <= 3.0 <= hi and (lo, hi) == (1.0, 5.0)


# --- the file ---------------------------------------------------------------------------------------------------------

def rec(variant="square-torch", size="16384x16384", warm=700e-6, timer=702e-6, cold=710e-6, do_bench=712e-6,
        graph=698e-6, cudagraph=699e-6, host=8e-6, flush=90e-6, ncu_s=None, op=None, loop="timer",
        dtype="float32") -> Record:
    # host: the host's cost of one call (a burst); loop: host mode's reading (default: Timer's)
    r = Record(op=op or variant.split("-")[0], variant=variant, backend="torch", size=size, dtype=dtype,
               device="cuda", seconds={"warm": warm, "cold": cold, "graph": graph, "timer": timer,
                                       "do_bench": do_bench, "do_bench_cudagraph": cudagraph, "ncu": ncu_s,
                                       "host": timer if loop == "timer" else loop},
               host_per_call_s=host, flush_s=flush)
    r.diff_pct = agreement.diffs(r)
    return r


def peers_file(records: list[Record], machine="nvidia-h100-80gb-hbm3") -> PeersFile:
    stamp = Manifest(machine=machine, gpu="NVIDIA H100 80GB HBM3", commit="0123456789abcdef", date="2026-11-24",
                     versions={"torch": "2.9.0", "triton": "3.5.0"}, variants=sorted({r.variant for r in records}),
                     command="kernelscope crosscheck --gate")
    return PeersFile(stamp=stamp, device="cuda", budgets=measure.Budgets().as_dict(), records=records)


NUMBA_HOST_BOUND = dict(variant="mean-numba", size="268435456", warm=365e-6, timer=533e-6, cold=370e-6,
                        do_bench=445e-6, graph=364e-6, cudagraph=365e-6, host=530e-6)


def test_the_file_round_trips_through_its_reader(tmp_path):
    skipped = Record("square", "square-cuda-lecture", "cuda", "16384x16384", "float32", "cuda", status="skipped",
                     reason="square-cuda-lecture: more rows than a 2-D grid")
    original = peers_file([rec(ncu_s=705e-6), rec(**NUMBA_HOST_BOUND), skipped])
    path = data.write(tmp_path / "m" / data.FILE_NAME, original)
    back = data.read(path)
    assert back == original
    assert data.machines(tmp_path) == [path] and data.machines(tmp_path / "m") == [path]
    raw = json.loads(path.read_text())
    raw["records"][0]["a_newer_field"] = 1  # a newer writer's field is ignored
    raw["format"] = data.FORMAT + 1
    path.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="newer than this reader"):
        data.read(path)


# --- agreement and the gate --------------------------------------------------------------------------------------------

def test_the_summary_counts_shares_within_1_and_2_percent_and_names_the_worst():
    records = [rec(), rec(size="8192x8192", timer=689e-6), rec(size="4096x4096", timer=600e-6),
               rec(variant="square-mul", warm=10e-6, timer=10.05e-6)]
    s = agreement.summarize(records)["warm"]
    assert s.compared == 4 and s.within == {"1": 2, "2": 3}
    assert (s.worst["variant"], s.worst["size"]) == ("square-torch", "4096x4096")
    assert s.worst["diff_pct"] == pytest.approx((700 / 600 - 1) * 100)
    assert s.judged == 3 and s.judged_within == {"1": 1, "2": 2}  # the 10 us case is below the gate's 50 us
    assert s.share(2.0) == 0.75


def test_a_gate_passes_when_every_judged_pair_is_within_2_percent():
    small = rec(variant="square-mul", warm=10e-6, timer=13e-6, cold=12e-6, do_bench=20e-6, graph=9e-6,
                cudagraph=9.5e-6, host=5e-6)  # far off its peers, but under 50 us
    g = agreement.gate([rec(), small])
    assert g.passed and g.judged == 4 and not g.failures and not g.exceptions  # warm, cold, graph, host


def test_a_gate_fails_on_a_pair_outside_2_percent_or_without_a_peer_reading():
    g = agreement.gate([rec(), rec(variant="gelu-cuda-vec4", cold=730e-6, do_bench=700e-6)])
    assert not g.passed and len(g.failures) == 1
    f = g.failures[0]
    assert (f["variant"], f["mode"]) == ("gelu-cuda-vec4", "cold") and "+4.29%" in f["why"]
    missing = rec(cudagraph=None)
    missing.skipped["do_bench_cudagraph"] = "RuntimeError: capture failed"
    g = agreement.gate([missing])
    assert not g.passed and g.failures[0]["why"] == "no do_bench_cudagraph reading: RuntimeError: capture failed"
    assert not agreement.gate([rec(warm=5e-6, cold=6e-6, graph=4e-6, timer=7e-6)]).passed  # nothing judged
    failed = Record("square", "square-torch", "torch", "64x64", "float32", "cuda", status="failed",
                    reason="RuntimeError: output does not match the float64 reference")
    g = agreement.gate([rec(), failed])
    assert not g.passed and g.why == "1 case failed" and g.failures[0]["why"].startswith("RuntimeError")


def test_a_loop_slower_than_the_gpu_excuses_warm_against_timer_and_host_mode_is_judged_against_timer():
    # H100, square-numba-flat 8192x8192: a burst of 20 calls cost the host 151 us a call, under the GPU's
    # 180, yet Timer's loop read 224: the loop (host mode) is what tells whether the queue stays full
    flat = dict(variant="square-numba-flat", size="8192x8192", warm=180e-6, cold=182e-6, do_bench=183e-6,
                graph=178e-6, cudagraph=178e-6, timer=224e-6, host=151e-6)
    reason = agreement.host_bound(rec(**flat, loop=226e-6), "warm")
    assert "a loop of calls takes 226.0 us a call (host mode) against 180.0 us of GPU work" in reason
    assert agreement.host_bound(rec(**flat, loop=226e-6), "host") is None  # two host loops: always judged
    g = agreement.gate([rec(**flat, loop=226e-6)])
    assert g.passed and [(e["mode"], e["peer"]) for e in g.exceptions] == [("warm", "timer"), ("cold", "do_bench")]
    g = agreement.gate([rec(**flat, loop=232e-6)])  # host mode 3.6% over Timer: outside host mode's 3%
    assert not g.passed and [f["mode"] for f in g.failures] == ["host"] and "outside 3%" in g.failures[0]["why"]
    # a loop within 2% of the GPU time keeps the queue full: warm is judged against Timer
    assert agreement.host_bound(rec(**flat, loop=182e-6), "warm") is None
    # a peers.json from before host mode has no host clock at all: its gate judges the modes it has
    old = rec(**flat, loop=226e-6)
    del old.seconds["host"]
    g = agreement.gate([rec(), old])  # without the loop's reading warm is judged, and fails as it did then
    assert g.judged == 4 + 2 and [(f["variant"], f["mode"]) for f in g.failures] == [("square-numba-flat", "warm")]


def test_a_host_pair_whose_host_drifts_is_excused_only_while_timer_stays_inside_host_modes_span():
    # H100, mean-numba 4096 in one process (timer_probe.py): host mode's samples 334-433 us a call,
    # Timer 359 us; five runs a few seconds apart read 359-635. GPU work: 5 us.
    def drifting(timer, lo=334e-6, hi=433e-6, loop=374e-6):
        r = rec(variant="mean-numba", size="4096", warm=4.9e-6, cold=7.7e-6, do_bench=280e-6, graph=4.0e-6,
                cudagraph=4.0e-6, host=222e-6, timer=timer, loop=loop)
        r.details.update(host_min_s=lo, host_max_s=hi)
        return r

    inside = drifting(timer=359e-6)
    assert "samples span 334.0 us to 433.0 us (30%), and Timer's 359.0 us lies inside" in agreement.host_drift(
        inside, "host")
    assert agreement.host_drift(inside, "warm") is None  # only the host pair
    g = agreement.gate([rec(), inside])
    assert g.passed, g.failures
    assert ("mean-numba", "host", "timer") in [(e["variant"], e["mode"], e["peer"]) for e in g.exceptions]
    # Timer outside the span fails, however much the host drifts
    g = agreement.gate([drifting(timer=891e-6)])
    assert not g.passed and [f["mode"] for f in g.failures] == ["host"]
    # a steady host (its samples within 3%) is judged to 3%: 4% off fails
    steady = drifting(timer=360e-6, lo=370e-6, hi=378e-6, loop=374e-6)
    assert agreement.host_drift(steady, "host") is None and not agreement.gate([steady]).passed
    # a file from before the span was kept: judged as before
    assert agreement.host_drift(rec(timer=100e-6, loop=120e-6), "host") is None
    # Timer's readings paired with host mode's samples see the same drift: judged, not excused (4% off fails)
    paired = drifting(timer=359e-6)
    paired.details["timer_paired"] = True
    assert agreement.host_drift(paired, "host") is None
    g = agreement.gate([paired])
    assert not g.passed and [f["mode"] for f in g.failures] == ["host"]


def test_a_paired_host_pair_is_judged_by_the_median_of_its_pairs_ratios():
    # H100, square-numba-flat 1024x1024 in crosscheck's one process: ten pairs whose host samples
    # spanned 112-430 us and Timer's 111-274 us, medians 138.2 and 128.8 (+7.3%); 110.7 and 110.7 rerun alone.
    # Pair by pair the two clocks read one host, so a spell that lands in one block moves one ratio.
    r = rec(variant="square-numba-flat", size="1024x1024", warm=3.7e-6, cold=7.7e-6, do_bench=52.9e-6,
            graph=2.64e-6, cudagraph=2.66e-6, host=113e-6, timer=128.8e-6, loop=138.2e-6)
    r.details.update(timer_paired=True, host_min_s=112e-6, host_max_s=430e-6)
    assert agreement.pair_diff(r, "host") == pytest.approx(7.3, abs=0.05)  # no pairs kept: the medians
    r.details["host_pair_ratio"] = 1.012
    assert agreement.pair_diff(r, "host") == pytest.approx(1.2)
    assert agreement.pair_diff(r, "warm") == agreement.diff_pct(3.7e-6, 128.8e-6)  # only host mode's pairs
    assert agreement.diffs(r)["host"] == pytest.approx(1.2)
    g = agreement.gate([r])
    assert g.passed, g.failures
    assert agreement.summarize([r])["host"].judged_worst["diff_pct"] == pytest.approx(1.2)
    r.details["host_pair_ratio"] = 1.05  # pairs that disagree fail, and the line says how it was read
    g = agreement.gate([r])
    assert not g.passed and "+5.00% (the median of the pairs' ratios), outside 3%" in g.failures[0]["why"]


def test_cold_mode_and_do_bench_take_their_rounds_in_turns(monkeypatch):
    # H100: one block of 30 cold samples read square-triton-flat1024 4096x4096 2.4% over do_bench,
    # and 1.5-1.8% under it in two runs alone. Rounds in turns put a slow spell into both clocks alike.
    case = _Drifting()
    order = []
    real_cold = measure.timing.time_cold

    def time_cold(fn, device, samples, flusher, hold_s):
        order.append(("cold", samples))
        return real_cold(fn, device, samples, flusher, hold_s=hold_s)

    def do_bench_times(case, warmup_ms, rep_ms):
        order.append(("do_bench", rep_ms))
        return [30e-6, 31e-6, 29e-6]

    monkeypatch.setattr(measure.timing, "time_cold", time_cold)
    monkeypatch.setattr(measure, "do_bench_times", do_bench_times)
    plan = measure.timing.plan_warm(case.call, "cpu")
    budgets = measure.Budgets(cold_samples=5, cold_rounds=3, do_bench_rep_ms=7.0)
    found = measure.cold_and_do_bench(case, plan, budgets, cpu_path=False)
    assert order == [("cold", 5), ("do_bench", 7.0)] * 3 and case.log == ["check"]
    assert found["cold"][1]["cold_samples"] == 15 and found["cold"][1]["cold_rounds"] == 3
    assert found["cold"][1]["cold_taken"] == 15
    assert found["do_bench"] == (30e-6, {"do_bench_calls": 9})
    # the CPU path: cold mode's rounds alone, no do_bench reading; a do_bench that fails leaves cold mode's
    order.clear()
    assert "do_bench" not in measure.cold_and_do_bench(case, plan, budgets, cpu_path=True)
    assert order == [("cold", 5)] * 3

    def broken(case, warmup_ms, rep_ms):
        raise RuntimeError("no do_bench here")

    monkeypatch.setattr(measure, "do_bench_times", broken)
    found = measure.cold_and_do_bench(case, plan, budgets, cpu_path=False)
    assert isinstance(found["do_bench"], RuntimeError) and found["cold"][1]["cold_samples"] == 15


def test_host_bound_pairs_are_listed_with_the_reason_and_their_graph_pair_still_judged():
    numba = rec(**NUMBA_HOST_BOUND)
    assert "530.0 us on the host and 365.0 us on the GPU" in agreement.host_bound(numba, "warm")
    assert "do_bench's L2 flush (90.0 us)" in agreement.host_bound(numba, "cold")
    assert agreement.host_bound(numba, "graph") is None
    # do_bench reads the host once the launch outlasts the flush alone (H100, square-numba-coalesced 4096x4096:
    # host 151 us, flush 91 us, kernel 70 us, do_bench 144 us): the call's own time does not hide the launch
    coalesced = rec(cold=70e-6, do_bench=144e-6, host=151e-6, flush=91e-6)
    assert "waits 60.0 us for the launch" in agreement.host_bound(coalesced, "cold")
    assert agreement.host_bound(rec(cold=70e-6, host=80e-6, flush=91e-6), "cold") is None
    g = agreement.gate([rec(), numba])
    assert g.passed, g.failures
    assert [(e["variant"], e["mode"], e["peer"]) for e in g.exceptions] == [
        ("mean-numba", "warm", "timer"), ("mean-numba", "cold", "do_bench")]
    assert g.exceptions[0]["diff_pct"] == pytest.approx((365 / 533 - 1) * 100)
    broken = rec(**{**NUMBA_HOST_BOUND, "graph": 380e-6})
    assert not agreement.gate([broken]).passed
    # the host below the GPU time, and a loop of calls that keeps up with the GPU: not an exception,
    # and 31% off fails
    assert not agreement.gate([rec(**{**NUMBA_HOST_BOUND, "host": 100e-6, "loop": 370e-6})]).passed
    # an excused case's graph pair is judged even under 50 us
    small = rec(**{**NUMBA_HOST_BOUND, "graph": 40e-6, "cudagraph": 45e-6})
    assert any(f["mode"] == "graph" for f in agreement.gate([small]).failures)


# --- the Nsight Compute pass -------------------------------------------------------------------------------------------

FAKE_NCU = """#!{python}
# Stands in for ncu: runs the child, keeps its spec as the "report", and on --import prints a CSV with
# one 10 us kernel per call in each case's range.
import csv, json, subprocess, sys
args = sys.argv[1:]
if "--import" in args:
    spec = json.loads(open(args[args.index("--import") + 1]).read())
    out = csv.writer(sys.stdout, quoting=csv.QUOTE_ALL)
    nvtx = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    out.writerow(["ID", nvtx, "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"])
    launch = 0
    for job in spec["jobs"]:
        for _ in range(spec["calls"]):
            rng = '1  "<default domain>:%s:%s:none:none:none:none:none:none" ' % (job["op"], job["key"])
            out.writerow([launch, rng, "kernel", "gpu__time_duration.sum", "us", "10.00"])
            launch += 1
else:
    open({argv_file!r}, "w").write(json.dumps(args))
    child = args[args.index("-m") - 1:]
    code = subprocess.run(child).returncode
    spec = child[child.index("--child") + 1]
    open(args[args.index("--export") + 1], "w").write(open(spec).read())
    sys.exit(code)
"""


def test_one_ncu_process_profiles_every_case_and_its_time_per_call_is_read_back(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ncu"
    argv_file = tmp_path / "argv.json"
    fake.write_text(FAKE_NCU.format(python=sys.executable, argv_file=str(argv_file)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(ncu, "unavailable", lambda: None)  # the stand-in runs without a GPU
    records = [rec(size="64x64"), rec(variant="square-mul", size="64x64")]
    lines = []
    outcome = ncu_pass.run(records, calls=2, log=lines.append)
    assert outcome.skipped is None and not outcome.errors, outcome.log
    assert outcome.per_call_s == {"square-torch-64x64-float32": pytest.approx(10e-6),
                                  "square-mul-64x64-float32": pytest.approx(10e-6)}
    assert any("[2/2] square-mul 64x64" in line for line in lines)  # the child prepared and ran both cases
    argv = json.loads(argv_file.read_text())
    assert "--clock-control" in argv and argv[argv.index("--clock-control") + 1] == "none"
    assert "--section" not in argv and argv[argv.index("--metrics") + 1] == "gpu__time_duration.sum"
    assert argv[argv.index("--nvtx-include") + 1] == ncu.NVTX_INCLUDE
    ncu_pass.apply(outcome, records)
    assert records[0].seconds["ncu"] == pytest.approx(10e-6) and records[0].details["ncu_kernels"] == 1


def test_every_case_range_passes_ncus_filter():
    pattern = re.compile(ncu.NVTX_INCLUDE.removeprefix("regex:").removesuffix("/"))
    for spec in measure.case_specs():
        r = Record(spec.op, spec.variant, "", spec.size, spec.dtype, "cuda")
        assert pattern.fullmatch(f"{r.op}:{ncu_pass.range_key(r)}"), r.name


# --- the site ---------------------------------------------------------------------------------------------------------

def test_without_evidence_the_page_and_the_macro_give_the_command():
    from kernelscope.site import peer_pages
    from kernelscope.site.evidence import EvidenceData

    none = EvidenceData(None)
    assert "No peer-timer evidence yet" in peer_pages.page(none) and "kernelscope crosscheck --gate" in \
        peer_pages.page(none)
    assert "kernelscope crosscheck --gate" in peer_pages.agreement_summary(none.pick("any"))


def test_an_unreadable_evidence_file_is_named(tmp_path):
    from kernelscope.site.evidence import EvidenceData, EvidenceError

    bad = tmp_path / "m" / data.FILE_NAME
    bad.parent.mkdir()
    bad.write_text("{not json")
    with pytest.raises(EvidenceError, match="m/peers.json"):
        EvidenceData(tmp_path)


def test_site_shows_the_evidence_the_gate_and_the_host_bound_rows(tmp_path, monkeypatch):
    from sitebuild import RESULTS, build

    if not (RESULTS / "benchmarks.json").exists():
        pytest.skip("no committed results")
    evidence = tmp_path / "evidence"
    paired = rec(ncu_s=705e-6)
    paired.details["host_pair_ratio"] = 1.0  # a file from since the pairs' ratios are kept
    data.write(data.default_path("nvidia-h100-80gb-hbm3", evidence),
               peers_file([paired, rec(**NUMBA_HOST_BOUND),
                           rec(variant="softmax-manual", size="64x64", warm=10e-6, timer=25e-6, cold=15e-6,
                               do_bench=16e-6, graph=8e-6, cudagraph=8.1e-6, host=24e-6)]))
    bf16 = rec(variant="softmax-cuda", size="512x50257", warm=42.6e-6, timer=42.8e-6, cold=43.7e-6, do_bench=43.6e-6,
               graph=41.1e-6, cudagraph=40.8e-6, host=6e-6, dtype="bfloat16")
    for machine in ("nvidia-h100-80gb-hbm3", "nvidia-h200"):  # the H200 has narrowed runs only
        data.write(data.default_path(machine, evidence, narrowed_to="variant-softmax-cuda-dtype-bfloat16"),
                   peers_file([bf16], machine=machine))
    monkeypatch.setenv("KERNELSCOPE_EVIDENCE_DIR", str(evidence))
    site = build(tmp_path / "site", RESULTS)
    page = (site / "results" / "peers" / "index.html").read_text()
    narrowed = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert narrowed.count("Narrowed runs (1).") == 2 and "No whole run here" in narrowed
    assert narrowed.count("peers-variant-softmax-cuda-dtype-bfloat16.json: 1 case at 01234567, 2026-11-24; the gate "
                          "did not pass") == 2  # one case under 50 us: nothing judged
    assert narrowed.count("softmax-cuda tuned 512x50257 bfloat16 42.6 µs 42.8 µs -0.47%") == 2  # its cases row
    text = re.sub(r"<[^>]+>", " ", page)
    assert "NVIDIA H100 80GB HBM3" in text and "01234567" in text and "kernelscope crosscheck --gate" in text
    assert "The gate passed" in text and "all 6 judged pairs within 2% (host mode's against Timer: 3%)" in text
    assert "530.0 µs on the host and 365.0 µs on the GPU" in text  # the exception's reason, with its numbers
    assert page.count(">host-bound</span>") == 2  # mean-numba and softmax-manual's rows are marked
    assert "1 of 3 (33%)" in text and "3 of 3 (100%)" in text  # warm within 1%; graph within 2%
    words = " ".join(text.split())
    assert "host mode's, read in pairs with Timer's, as the median of the pairs' ratios − 1." in words
    assert ("host mode samples, 20 at a time (up to 200, while the median ratio's 95% interval is wider than ±1%), "
            "each followed by a Timer timeit of as many calls") in words
    assert "the pair's diff is the median of the pairs' ratios" in words
    assert "cold 25 samples and do_bench (warmup 5 ms, rep 25 ms) in turns, 4 rounds of each" in words
    method = re.sub(r"<[^>]+>", " ", (site / "concepts" / "method" / "index.html").read_text())
    assert "Checked against peer timers" in method and "passed" in method and "mean-numba" in method
    assert "no peer-timer evidence yet" not in method


def test_one_case_in_two_dtypes_reads_apart_in_the_table_the_gate_and_the_site():
    # crosscheck --dtype float32 bfloat16: each case twice, which every table and message must tell apart
    from kernelscope.site import peer_pages
    from kernelscope.site.evidence import MachinePeers

    f32 = rec(**NUMBA_HOST_BOUND)
    bf16 = rec(**{**NUMBA_HOST_BOUND, "warm": 183e-6, "timer": 531e-6, "cold": 187e-6, "do_bench": 271e-6,
                  "graph": 182e-6, "cudagraph": 182.5e-6}, dtype="bfloat16")
    lines = command.table([f32, bf16]).splitlines()
    assert lines[3].startswith("mean-numba 268435456 ") and "bfloat16" not in lines[3]
    assert lines[4].startswith("mean-numba 268435456 bfloat16 ")
    header, row = command.table([rec(ncu_s=705e-6)]).splitlines()[1::2]  # every mode's columns, then ncu's
    assert header.split() == ["case", "warm", "Timer", "diff", "cold", "do_bench", "diff", "graph", "cudagraph", "diff",
                              "host", "Timer", "diff", "ncu", "host/call", "note"]
    assert row.split()[-5:] == ["702.0", "702.0", "+0.00%", "705.0", "8.0"]  # host, Timer, diff, ncu, host/call
    off = rec(cold=730e-6, do_bench=700e-6, dtype="bfloat16")
    text = command.summary_text(agreement.summarize([rec(), off]), agreement.gate([rec(), off]))
    assert "worst square-torch 16384x16384 bfloat16 +4.29%" in text
    assert "  square-torch 16384x16384 bfloat16 cold: cold 730.0 us against do_bench 700.0 us" in text
    m = MachinePeers("nvidia-h100-80gb-hbm3", Path("peers.json"), peers_file([f32, bf16]))
    rows = [r for r in peer_pages.exceptions_table(m).splitlines() if "warm ~ Timer" in r]
    assert len(rows) == 2 and "| 268435456 |" in rows[0] and "| 268435456 bfloat16 |" in rows[1]
    assert "| 183 µs | 531 µs |" in rows[1] and "| 365 µs | 533 µs |" in rows[0]  # each row reads its own case
    old = dict(m.gate.exceptions[0])
    del old["dtype"]  # evidence written before cases carried their dtype: float32
    assert peer_pages._size(old) == "268435456"


# --- on the GPU -------------------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_one_case_on_the_gpu_with_every_peer():
    spec = measure.CaseSpec("square", "square-torch", "4096x4096")  # 128 MiB moved: ~45 us, far above its launch
    r = measure.measure_case(spec, measure.Budgets(), "cuda")
    assert r.status == "measured" and not r.errors, r.errors
    for clock in ("warm", "cold", "graph", "timer", "do_bench", "do_bench_cudagraph"):
        assert 5e-6 < r.seconds[clock] < 5e-3, (clock, r.seconds[clock])
    assert r.host_per_call_s < r.seconds["warm"] and r.flush_s > 0  # GPU-bound: no peer reads the host here
    assert not agreement.host_bound(r, "warm") and not agreement.host_bound(r, "cold")
    assert abs(r.diff_pct["graph"]) < 5 and abs(r.diff_pct["warm"]) < 5 and abs(r.diff_pct["cold"]) < 10, r.diff_pct
    budgets = measure.Budgets()  # cold mode and do_bench took their rounds; host mode's pairs kept their ratio
    assert r.details["cold_taken"] == budgets.cold_samples * budgets.cold_rounds
    from kernelscope.timing import MIN_SAMPLES

    assert MIN_SAMPLES * budgets.cold_rounds <= r.details["cold_samples"] <= r.details["cold_taken"]  # starved dropped
    assert budgets.host_samples <= r.details["host_samples"] <= budgets.host_max_pairs
    assert r.details["do_bench_calls"] >= budgets.cold_rounds and 0.5 < r.details["host_pair_ratio"] < 2
    if ncu.unavailable() is None:
        outcome = ncu_pass.run([r], calls=2)
        ncu_pass.apply(outcome, [r])
        assert r.seconds["ncu"] is not None or "ERR_NVGPUCTRPERM" in (outcome.skipped or ""), outcome.errors
        if r.seconds["ncu"] is not None:
            assert 0.5 < r.seconds["ncu"] / r.seconds["graph"] < 2
