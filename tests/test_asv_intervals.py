"""Intervals of cases sampled one value per process, pooled over the run (kernelscope.asv.intervals)."""

import json
import math
import random
import statistics
from pathlib import Path

import numpy as np
import pytest

asv = pytest.importorskip("asv")
from asv.results import Results  # noqa: E402

from kernelscope.asv import intervals as asv_intervals  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# Two runs of Square, Softmax and SquareBfloat16 at 0f8ffa7 on one H100, one after the other: the first is the
# committed result, the second a copy of results-proofs/rerun-noise/h100-0f8ffa7-half-a/results-rerun/
RUN_A = ROOT / "results/nvidia-h100-80gb-hbm3/0f8ffa73-syssite-py3.12.json"
RUN_B = ROOT / "tests/fixtures/asv_rerun/0f8ffa73-syssite-py3.12.json"


def test_the_per_process_rule_matches_the_suites_sampling():
    from kernelscope.timing import MIN_SAMPLES
    from kernelscope.timing.processes import LAUNCH_BOUND_PROCESSES

    assert asv_intervals.PER_PROCESS_MAX_SAMPLES == MIN_SAMPLES - 1  # written twice to keep torch out of asv
    assert LAUNCH_BOUND_PROCESSES in asv_intervals.MEDIAN_VARIANCE


def _median_variance(n: int) -> float:
    """Variance of the median of n standard normal values, integrated from the order statistics' densities
    (trapezoid rule on [-8, 8]: exact to about 1e-12 here, where drawing 40000 samples of each n took 30 s)."""
    x = np.linspace(-8, 8, 1601)
    h = x[1] - x[0]
    phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    if n % 2:  # the middle value, the k-th of n
        k = (n + 1) // 2
        c = math.factorial(n) / (math.factorial(k - 1) * math.factorial(n - k))
        return float(np.sum(x * x * c * cdf ** (k - 1) * (1 - cdf) ** (n - k) * phi) * h)
    # the mean of the j-th and (j+1)-th of n: their joint density on x < y, the diagonal at half weight
    j = n // 2
    c = math.factorial(n) / (math.factorial(j - 1) * math.factorial(n - j - 1))
    low, high = cdf ** (j - 1) * phi, (1 - cdf) ** (n - j - 1) * phi
    density = c * np.outer(low, high) * (np.triu(np.ones((x.size, x.size)), 1) + 0.5 * np.eye(x.size))
    return float(np.sum(np.add.outer(x, x) ** 2 / 4 * density) * h * h)


def _chi2_median(dof: int) -> float:
    """Median of chi-squared with ``dof`` degrees of freedom: the regularized incomplete gamma P(dof/2, x/2)
    from its series, solved for 1/2 by bisection."""
    def cdf(x):
        a, z = dof / 2, x / 2
        term = total = 1 / a
        i = 0
        while term > 1e-17 * total:
            i += 1
            term *= z / (a + i)
            total += term
        return math.exp(a * math.log(z) - z - math.lgamma(a)) * total

    low, high = 0.0, 10.0 * (dof + 1)
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < 0.5 else (low, mid)
    return low


def test_the_order_statistic_constants_are_those_of_normal_samples():
    assert _median_variance(2) == pytest.approx(0.5, rel=1e-9)  # the integration's own check: the mean of two
    assert _chi2_median(2) == pytest.approx(2 * math.log(2), rel=1e-12)  # and the series': exp(-x/2) = 1/2
    for n in asv_intervals.MEDIAN_VARIANCE:
        assert _median_variance(n) == pytest.approx(asv_intervals.MEDIAN_VARIANCE[n], rel=0.03), n
        assert math.sqrt(_chi2_median(n - 1) / (n - 1)) == pytest.approx(asv_intervals.MEDIAN_SD[n], rel=0.02), n


def _results(cases: dict) -> Results:
    """A Results holding ``cases``: benchmark name -> list of sample lists (None: a case not run)."""
    r = Results({"machine": "m"}, {}, "0" * 40, 0, "3.12", "env", {})
    for name, per_case in cases.items():
        r._samples[name] = per_case
        r._results[name] = [statistics.median(s) if s else None for s in per_case]
        r._stats[name] = []
        for samples in per_case:
            if samples is None:
                r._stats[name].append(None)
                continue
            _, stats = asv_intervals.compute_stats(samples, 1)
            r._stats[name].append(stats)
    return r


def _processes(rng, median, spread, n=3):
    return [median * math.exp(rng.gauss(0, spread)) for _ in range(n)]


def test_a_case_whose_processes_agree_by_chance_gets_the_runs_spread():
    rng = random.Random(1)
    cases = {"benchmarks.Square.time_warm": [_processes(rng, 2e-6, 0.03) for _ in range(20)]
             + [[2.0e-6, 2.0005e-6, 2.001e-6], [1e-3 * (1 + i / 1000) for i in range(12)], None]}
    r = _results(cases)
    lucky = r._stats["benchmarks.Square.time_warm"][20]
    long_case = dict(r._stats["benchmarks.Square.time_warm"][21])
    assert (lucky["ci_99_b"] - lucky["ci_99_a"]) / 2e-6 < 0.01  # asv's own: under 1% wide

    spread = asv_intervals.widen(r)

    sigma, cases_pooled = spread["time_warm"]
    assert cases_pooled == 21 and 0.02 < sigma < 0.045
    half = asv_intervals.Z_99 * sigma * math.sqrt(2 * asv_intervals.MEDIAN_VARIANCE[3])
    assert lucky["ci_99_a"] == pytest.approx(2.0005e-6 * math.exp(-half))
    assert lucky["ci_99_b"] == pytest.approx(2.0005e-6 * math.exp(half))
    assert r._stats["benchmarks.Square.time_warm"][21] == long_case  # one process's 12 samples: asv's, untouched
    for stats, samples in zip(r._stats["benchmarks.Square.time_warm"][:20], cases["benchmarks.Square.time_warm"]):
        _, own = asv_intervals.compute_stats(samples, 1)
        assert stats["ci_99_a"] <= own["ci_99_a"] and stats["ci_99_b"] >= own["ci_99_b"]  # never narrower


def test_widening_again_gives_the_same_intervals_and_modes_pool_apart():
    rng = random.Random(2)
    r = _results({"benchmarks.Square.time_warm": [_processes(rng, 2e-6, 0.03) for _ in range(12)],
                  "benchmarks.Square.track_host": [_processes(rng, 1e-5, 0.15) for _ in range(12)],
                  "benchmarks.Gelu.track_host": [_processes(rng, 1e-5, 0.15) for _ in range(12)]})
    spread = asv_intervals.widen(r)
    first = json.dumps(r._stats, sort_keys=True)
    assert asv_intervals.widen(r) == spread and json.dumps(r._stats, sort_keys=True) == first
    assert spread["time_warm"][1] == 12 and spread["track_host"][1] == 24  # a mode across its classes
    assert spread["track_host"][0] > 2 * spread["time_warm"][0]


def test_a_mode_with_few_cases_keeps_asvs_intervals():
    rng = random.Random(3)
    r = _results({"benchmarks.FirstCall.time_first_call": [_processes(rng, 1.0, 0.1) for _ in range(5)]})
    before = json.dumps(r._stats, sort_keys=True)
    assert asv_intervals.widen(r) == {}
    assert json.dumps(r._stats, sort_keys=True) == before


def test_on_a_same_commit_rerun_of_the_h100_the_rerun_lands_inside_in_95_percent():
    counts = asv_intervals.replay(str(RUN_A), str(RUN_B))
    total = sum(c["cases"] for c in counts.values())
    own = sum(c["own"] for c in counts.values())
    widened = sum(c["widened"] for c in counts.values())
    assert total > 200 and set(counts) == {"time_warm", "track_cold", "track_host"}
    assert own / total < 0.95  # asv's own intervals: 240 of 260 (92.3%)
    assert widened / total >= 0.95, counts
    assert all(c["widened"] >= c["own"] for c in counts.values())


def test_the_environment_widens_on_every_save(tmp_path):
    from kernelscope.asv import env as asv_env  # noqa: F401  (loading the plugin patches asv)

    assert "save_every_case.<locals>.merged" in Results.save._kernelscope_wrapped_by  # merged, widened, atomic
    rng = random.Random(4)
    r = _results({"benchmarks.Square.time_warm": [_processes(rng, 2e-6, 0.03) for _ in range(12)]
                  + [[2.0e-6, 2.0005e-6, 2.001e-6]]})
    r._benchmark_params = {"benchmarks.Square.time_warm": [[repr(str(i)) for i in range(13)]]}
    r._started_at["benchmarks.Square.time_warm"] = 0
    r._benchmark_version["benchmarks.Square.time_warm"] = "3"
    r.save(str(tmp_path))
    (saved,) = (tmp_path / "m").glob("*.json")
    data = json.loads(saved.read_text())
    row = dict(zip(data["result_columns"], data["results"]["benchmarks.Square.time_warm"]))
    lo, hi = row["stats_ci_99_a"][12], row["stats_ci_99_b"][12]
    assert (hi - lo) / 2 / 2.0005e-6 > 0.03
