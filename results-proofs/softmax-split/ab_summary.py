import json, sys, statistics
from collections import defaultdict
rows = [json.loads(l) for f in sys.argv[1:] for l in open(f) if l.startswith("{")]
t = defaultdict(lambda: defaultdict(list))
for r in rows:
    if "us" in r: t[(r["variant"], r["dtype"], tuple(r["shape"]))][r["tag"]].append(r["us"])
worst = 0
for k, d in sorted(t.items()):
    a, b = statistics.median(d.get("old", [float("nan")])), statistics.median(d.get("new", [float("nan")]))
    ch = b / a - 1
    worst = max(worst, abs(ch)) if ch == ch else worst
    print(f"{k[0]:24s} {k[1]:9s} {str(k[2]):16s} old {a:10.2f} new {b:10.2f} us  {ch*100:+6.2f}%  old runs {d.get('old')} new runs {d.get('new')}")
print("cases", len(t), "largest change %.2f%%" % (worst * 100))
errs = [r for r in rows if "error" in r]
print("errors", len(errs)); [print(e) for e in errs[:10]]
