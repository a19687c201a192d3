"""How many processes a launch-bound case needs: asv's own statistics replayed on measured process medians.

Reads the H100 probes' per-process warm medians of four launch-bound cases
(results-proofs/launch-bound-spread/h100-forked-processes/spread-probe*.json.gz: 90 fresh processes
in all), draws two runs of R processes each (one value per process, as the suite
samples them; within-process noise 0.3%), computes each run's median and 99%
interval with asv_runner's compute_stats, and counts how often the second run's
median falls inside the first run's interval, how wide that interval is, and
how often asv's rule would flag the pair (ratio past 1.1 and disjoint intervals).

    .venv/bin/python scripts/rounds_sim.py [--trials 2000] [--rounds 3 4 5 6 8]
"""

import argparse
import collections
import gzip
import json
import random
import statistics
from pathlib import Path

from asv_runner.statistics import compute_stats

PROBES = Path(__file__).resolve().parents[1] / "results-proofs" / "launch-bound-spread" / "h100-forked-processes"


def process_medians() -> dict[str, list[float]]:
    by_case = collections.defaultdict(list)
    for path in sorted(PROBES.glob("spread-probe*.json.gz")):
        for record in json.loads(gzip.open(path).read()):
            by_case[record["case"]].append(record["warm"])
    return by_case


def one_run(pop: list[float], processes: int, rng: random.Random) -> tuple[float, float, float]:
    samples = [rng.choice(pop) * (1 + rng.gauss(0, 0.003)) for _ in range(processes)]
    median, stats = compute_stats(samples, 1)
    return median, stats["ci_99_a"], stats["ci_99_b"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000, help="run pairs per case and process count")
    ap.add_argument("--rounds", type=int, nargs="+", default=[3, 4, 5, 6, 8], help="processes per run")
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases = process_medians()
    print(f"{sum(map(len, cases.values()))} process medians of {len(cases)} cases: {', '.join(cases)}")
    print("processes  rerun inside interval  median half-width  flagged by asv's rule")
    for r in args.rounds:
        inside, widths, flagged = [], [], []
        for pop in cases.values():
            for _ in range(args.trials):
                m1, a1, b1 = one_run(pop, r, rng)
                m2, a2, b2 = one_run(pop, r, rng)
                inside.append(a1 <= m2 <= b1)
                widths.append((b1 - a1) / 2 / m1)
                flagged.append(max(m1, m2) / min(m1, m2) > 1.1 and (b1 < a2 or b2 < a1))
        print(f"{r:9d}  {100 * sum(inside) / len(inside):20.1f}%  {100 * statistics.median(widths):16.1f}%"
              f"  {100 * sum(flagged) / len(flagged):20.2f}%")


if __name__ == "__main__":
    main()
