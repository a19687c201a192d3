"""Compare two `kernelscope plan --all --json` files case by case, leaving out the `gpu` and `facts` fields.

    python3 compare_plans.py plan-this.json plan-h200.json
"""
import gzip, json, sys


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        plans = json.load(f)
    return plans if isinstance(plans, list) else plans.get("plans", plans)


def strip(plan):
    return {k: v for k, v in plan.items() if k not in ("gpu", "facts")}


a, b = load(sys.argv[1]), load(sys.argv[2])
same = sum(strip(x) == strip(y) for x, y in zip(a, b))
print(f"{same} of {len(a)} cases give the same plan ({len(b)} in the preset)")
for x, y in zip(a, b):
    if strip(x) != strip(y):
        print("differs:", x.get("variant"), x.get("shape"), x.get("dtype"))
