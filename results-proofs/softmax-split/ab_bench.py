"""Time every softmax variant built from a tree (PYTHONPATH picks it) with triton.testing.do_bench; one JSON line a case."""
import json, sys
import torch, triton
from kernelscope.catalog import VARIANTS
tag = sys.argv[1]
names = [n for n, v in VARIANTS.items() if v.op == "softmax" and v.backend in ("cuda", "triton", "numba")]
shapes = [(1024, 1024), (4096, 4096), (16384, 16384), (16384, 1000), (512, 50257), (64, 262144), (8, 1048576)]
for name in names:
    v = VARIANTS[name]
    for dtype in ("float32", "bfloat16"):
        if dtype not in v.dtypes:
            continue
        for shape in shapes:
            if v.unsupported(shape, dtype):
                continue
            x = v.op_spec.make_input(shape, dtype, "cuda", 1234)
            try:
                y = v(x); torch.cuda.synchronize()
                err = ((y.double() - torch.softmax(x.double(), -1)).abs().max()).item()
                ms = triton.testing.do_bench(lambda: v(x), warmup=50, rep=200, return_mode="median")
            except Exception as e:
                print(json.dumps({"tag": tag, "variant": name, "dtype": dtype, "shape": list(shape), "error": str(e)[:200]}), flush=True)
                continue
            print(json.dumps({"tag": tag, "variant": name, "dtype": dtype, "shape": list(shape), "us": round(ms * 1e3, 3), "err": err}), flush=True)
