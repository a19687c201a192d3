#!/usr/bin/env python3
"""Copy stdin to stdout, each line prefixed with the seconds since start: `asv run ... 2>&1 | stamp.py > LOG`.

scripts/gpu/run_cost.py reads such a log: when asv created the environment,
built and installed the project, discovered the benchmarks, started its
forkserver and ran each benchmark.
"""
import sys
import time

if sys.argv[1:]:  # it takes no arguments: -h or --help prints what it does
    print(__doc__)
    sys.exit(0 if sys.argv[1] in ("-h", "--help") else 2)
t0 = time.time()
print(f"# started {t0:.3f}", flush=True)
for line in sys.stdin:
    sys.stdout.write(f"{time.time() - t0:9.2f} {line}")
    sys.stdout.flush()
