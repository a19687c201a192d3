"""The floors of issue #15's hard cases, measured: what moving their bytes costs at their own size.

The issue's targets are shares of the copy bandwidth measured on 1 GiB
(``kernelscope.timing.copy_bandwidth``). Its wide-row softmax cases move far
less (134 MB at 64x262144 in float32, 69 MB in bfloat16), where a kernel's ramp
and tail are a larger share of its time, so a copy itself may read below 100%.
This probe times, with the suite's warm clock, the least work each case must do:

* softmax: a copy of the input into the output, in the case's own shape (one
  read and one write of every element, what a softmax kernel moves at best);
* mean: ``torch.sum`` of the input (one read), beside ``torch.mean``.

Each row gives the floor's time and its share of the copy bandwidth: a target
above a floor's share is out of reach at that size, whatever the kernel.

Usage (GPU box): python3 scripts/gpu/floor_probe.py [--json FILE]    (under a minute on an H100)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune import Table, args  # noqa: E402  (tune puts src/ on sys.path)

import torch  # noqa: E402

from kernelscope.ops import normal, shape_str  # noqa: E402

# (op, shape, dtypes): issue #15's cases
CASES = [
    ("softmax", (512, 50257), ("float32", "bfloat16")),
    ("softmax", (64, 262144), ("float32", "bfloat16")),
    ("softmax", (8192, 8192), ("float32",)),  # 2^26: softmax-numba's target
    ("softmax", (16384, 16384), ("float32",)),  # 2^28
    ("mean", (2**24,), ("float32",)),
]


def main() -> int:
    opts = args(__doc__.splitlines()[0])
    if not torch.cuda.is_available():
        print("floor_probe.py measures a GPU: none here", file=sys.stderr)
        return 2
    table = Table("floors of #15's cases")
    for op, shape, dtypes in CASES:
        for dtype in dtypes:
            x = normal(shape, dtype, "cuda", 15)
            size = x.numel() * x.element_size()
            if op == "softmax":
                y = torch.empty_like(x)
                table.add("copy (read + write)", lambda: y.copy_(x), 2 * size, shape_str(shape), dtype)
            else:
                table.add("torch.sum (read)", lambda: torch.sum(x), size, shape_str(shape), dtype)
                table.add("torch.mean", lambda: torch.mean(x), size, shape_str(shape), dtype)
            del x
    table.dump(opts.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
