#!/usr/bin/env python3
"""What an asv results folder holds for one commit: per benchmark, when asv started it and how many cases it measured.

    python3 results-proofs/cut-off-runs/saved.py RESULTS_DIR [COMMIT-PREFIX]

Used to show that a run cut off keeps what it finished (this folder's README):
listed before the resumed run and after it, a benchmark the first run
finished keeps its start time.
"""
import datetime
import json
import math
import sys
from pathlib import Path

root, prefix = Path(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "")
for path in sorted(root.glob("*/*.json")):
    if path.name == "machine.json" or not path.name.startswith(prefix):
        continue
    data = json.loads(path.read_text())
    cols = data["result_columns"]
    print(f"{path.parent.name}/{path.name}")
    for name, values in sorted(data["results"].items()):
        row = dict(zip(cols, values))
        results = row["result"] if isinstance(row["result"], list) else [row["result"]]
        measured = sum(r is not None and not (isinstance(r, float) and math.isnan(r)) for r in results)
        started = datetime.datetime.fromtimestamp(row["started_at"] / 1e3, datetime.timezone.utc).strftime("%H:%M:%S")
        print(f"  {name:<40} started {started} UTC  {measured:3d} of {len(results)} cases measured")
