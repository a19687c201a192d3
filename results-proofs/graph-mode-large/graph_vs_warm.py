"""From results/: graph mode against warm mode at each op's largest size, one commit, float32.

    .venv/bin/python results-proofs/graph-mode-large/graph_vs_warm.py [COMMIT] [MACHINE]
"""

import sys

from kernelscope.results import export

commit = sys.argv[1] if len(sys.argv) > 1 else "c48bed92"
machine = sys.argv[2] if len(sys.argv) > 2 else "nvidia-h100-80gb-hbm3"
largest = {"square": "16384x16384", "gelu": "16384x16384", "softmax": "16384x16384", "mean": "268435456"}
rows = [r for r in export.rows("results") if r["commit"].startswith(commit) and r["machine"] == machine
        and r["dtype"] == "float32" and r["size"] == largest.get(r["op"])]
by = {(r["variant"], r["mode"]): r for r in rows}
worst = {}
print(f"{'variant':24} {'size':12} {'warm us':>9} {'graph us':>9} {'graph/warm':>10}")
for (variant, mode), r in sorted(by.items()):
    if mode != "warm" or (variant, "graph") not in by:
        continue
    g = by[(variant, "graph")]
    ratio = g["time_s"] / r["time_s"] - 1
    kind = "elementwise" if r["op"] in ("square", "gelu") else r["op"]
    worst[kind] = max(worst.get(kind, 0), abs(ratio))
    print(f"{variant:24} {r['size']:12} {r['time_s'] * 1e6:9.1f} {g['time_s'] * 1e6:9.1f} {100 * ratio:+9.2f}%")
print("largest |graph/warm - 1|: " + ", ".join(f"{k} {100 * v:.2f}%" for k, v in sorted(worst.items())))
