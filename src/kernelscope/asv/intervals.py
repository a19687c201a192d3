"""Intervals of the cases sampled one value per process: where a rerun's median lands, from the run's pooled spread.

A launch-bound case (and a first call, and a host-bound case in host mode) is
sampled one value per process, in three processes
(:mod:`kernelscope.timing.processes`), because the process itself moves its
time. asv's 99% interval of the median is then built from those three values
alone, and three values say little about their spread: when three processes
happen to agree, the interval is a fraction of a percent wide and the next
run lands outside it. Even an exact 99% interval of the median leaves a
rerun's median (itself a median of three) outside about 7% of the time. On the
H100, two same-commit runs of Square, Softmax and SquareBfloat16 on one box
(the stored runs of 0f8ffa7) put 84% of the launch-bound warm medians inside asv's interval, 92%
of all cases sampled per process (the rerun criteria ask 95%).

The spread between processes is much the same for every such case of one
timing mode on one machine, so it is pooled over the run: sigma, the mode's
process-to-process standard deviation on a log scale, is the median over the
run's cases of that mode of their own standard deviation, each divided by the
median of s / sigma for its number of values (0.83 for three). The interval
stored is the wider of asv's own and ``median * exp(+-z * sigma * sqrt(2 c_n))``:
``c_n sigma^2`` is the variance of a median of n values (0.449 for three),
so this is the 99% interval of the difference of two runs' medians, the
range a rerun's median lands in. asv's own interval is recomputed from the
samples at each save, so the result depends only on the samples stored.

Replayed on three same-commit pairs of runs on the H100 (the stored runs of 0f8ffa7, c426785,
97237aa; ``tests/test_asv_intervals.py`` replays the first from
tests/fixtures), the rerun's median falls inside in 97-100% of the cases of
every mode, where asv's own intervals gave 84-99%.

A mode with fewer than ``MIN_POOLED`` such cases in the run keeps asv's
intervals: a spread pooled over a handful of cases is no better than their own.

Either way no interval has a bound a time cannot have. For three values asv
extends its interval beyond them with a Laplace fit, whose lower end goes below
zero when one value is far above the others (a first call that timed a cold
compile: 0.5, 0.5 and 24 s). Such a bound becomes the lowest value the
interval would have without asv's fit: the pooled interval's, or the smallest
sample's.
"""

from __future__ import annotations

import math
import statistics
from functools import lru_cache

from asv.results import Results
from asv_runner.statistics import compute_stats

# One process takes at least kernelscope.timing.MIN_SAMPLES (6) samples, so a case with 2-5
# samples was sampled one value per process (written here to keep torch out of asv's process;
# a test checks it against timing).
PER_PROCESS_MAX_SAMPLES = 5
MIN_POOLED = 10
Z_99 = 2.5758  # the normal distribution's two-sided 99% point

# Variance of the median of n normal values, in units of sigma^2 (n = 2: the mean of two;
# n = 4: the mean of the middle two; order-statistic tables).
MEDIAN_VARIANCE = {2: 0.5, 3: 0.4487, 4: 0.2982, 5: 0.2868}
# Median of the sample standard deviation of n normal values, in units of sigma:
# sqrt(median of chi-squared with n - 1 degrees of freedom / (n - 1)).
MEDIAN_SD = {2: 0.6745, 3: 0.8326, 4: 0.8881, 5: 0.9160}


def _per_process(samples) -> bool:
    return bool(samples) and 2 <= len(samples) <= PER_PROCESS_MAX_SAMPLES and all(
        isinstance(s, float) and s > 0 for s in samples)


def _cases(results: Results):
    """(benchmark, index, samples, stats) of every case sampled one value per process."""
    for name, per_case in results._samples.items():
        stats = results._stats.get(name) or []
        for i, samples in enumerate(per_case or []):
            if i < len(stats) and stats[i] is not None and _per_process(samples):
                yield name, i, samples, stats[i]


def _mode(name: str) -> str:
    return name.rsplit(".", 1)[-1]  # time_warm, track_cold, track_host, time_first_call


# A run saves its results after every case (kernelscope.asv.saves), and each save widens every case of the file
# again: a case's own spread and asv's interval are kept by its samples, so a save computes only the new cases'
# (statistics.stdev is exact, in fractions: recomputed for every case it was most of a save's time).
_KEPT_CASES = 1 << 16


@lru_cache(maxsize=_KEPT_CASES)
def _scaled_sd(samples: tuple[float, ...]) -> float:
    """A case's standard deviation on a log scale, over the median of s / sigma for its number of values."""
    return statistics.stdev([math.log(s) for s in samples]) / MEDIAN_SD[len(samples)]


@lru_cache(maxsize=_KEPT_CASES)
def _asv_interval(samples: tuple[float, ...], number) -> tuple[float, float] | None:
    """asv's own 99% interval of the median, from the samples alone (None where asv gives none)."""
    _, own = compute_stats(list(samples), number)
    return None if own is None else (own["ci_99_a"], own["ci_99_b"])


def pooled_spread(results: Results) -> dict[str, tuple[float, int]]:
    """Per benchmark method (the timing mode): the pooled process-to-process sigma (log scale), and of how many cases."""
    scaled: dict[str, list[float]] = {}
    for name, _, samples, _ in _cases(results):
        scaled.setdefault(_mode(name), []).append(_scaled_sd(tuple(samples)))
    return {mode: (statistics.median(v), len(v)) for mode, v in scaled.items()}


def widen(results: Results) -> dict[str, tuple[float, int]]:
    """Give every case sampled per process the wider of asv's interval and the pooled rerun interval, and no
    lower bound at or below zero.

    Returns the pooled spreads used (modes with fewer than ``MIN_POOLED`` cases keep asv's intervals).
    """
    spread = {mode: v for mode, v in pooled_spread(results).items() if v[1] >= MIN_POOLED}
    for name, _, samples, stats in _cases(results):
        own = _asv_interval(tuple(samples), stats.get("number") or 1)  # asv's own, from the samples alone
        if own is None:
            continue
        low, high = own
        floor = min(samples)
        if _mode(name) in spread:
            sigma = spread[_mode(name)][0]
            half = Z_99 * sigma * math.sqrt(2 * MEDIAN_VARIANCE[len(samples)])
            median = statistics.median(samples)
            floor = min(floor, median * math.exp(-half))
            low, high = min(low, median * math.exp(-half)), max(high, median * math.exp(half))
        stats["ci_99_a"] = low if low > 0 else floor
        stats["ci_99_b"] = high
    return spread


def replay(first: str, rerun: str) -> dict[str, dict[str, int]]:
    """Two stored runs of one commit: per mode, how many of the first's per-process cases the rerun's median
    lands inside, with asv's intervals as stored (``own``) and widened here (``widened``), of ``cases``."""
    a, b = Results.load(first), Results.load(rerun)
    counts: dict[str, dict[str, int]] = {}

    def tally(key: str):
        for name, i, samples, stats in _cases(a):
            theirs = (b._samples.get(name) or [])[i:i + 1]
            if theirs and theirs[0]:
                c = counts.setdefault(_mode(name), {"cases": 0, "own": 0, "widened": 0})
                c["cases"] += key == "own"
                c[key] += stats["ci_99_a"] <= statistics.median(theirs[0]) <= stats["ci_99_b"]

    tally("own")
    widen(a)
    tally("widened")
    return counts
