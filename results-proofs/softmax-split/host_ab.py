"""Host cost a call (launch-bound sizes): per-call time of back-to-back calls, min over blocks; one JSON line a case."""
import json, sys, time
import torch
from kernelscope.catalog import VARIANTS
tag = sys.argv[1]
for name in ("softmax-triton-row", "softmax-triton-tuned", "softmax-triton-online", "softmax-numba", "softmax-cuda", "square-triton-flat1024"):
    v = VARIANTS[name]
    for dtype in ("float32",):
        for shape in ((1024, 1024), (64, 64)):
            x = v.op_spec.make_input(shape, dtype, "cuda", 1)
            for _ in range(50): v(x)
            torch.cuda.synchronize()
            best = []
            for _ in range(15):
                t = time.perf_counter()
                for _ in range(200): v(x)
                host = (time.perf_counter() - t) / 200
                torch.cuda.synchronize()
                best.append(host)
            best.sort()
            print(json.dumps({"tag": tag, "variant": name, "shape": list(shape), "min_us": round(best[0]*1e6, 2), "med_us": round(best[7]*1e6, 2)}), flush=True)
