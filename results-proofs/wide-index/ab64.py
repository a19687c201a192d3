"""GPU time (triton.testing.do_bench, median) of the tuned Triton variants at large sizes; PYTHONPATH picks the tree."""
import json, sys
import torch, triton
from kernelscope.catalog import VARIANTS
tag = sys.argv[1]
cases = [("square-triton-flat1024", (16384, 16384)), ("square-triton-direct", (16384, 16384)), ("gelu-triton", (16384, 16384)),
         ("mean-triton-tuned", (2**28,)), ("mean-triton-tuned", (2**24,)),
         ("softmax-triton-tuned", (16384, 16384)), ("softmax-triton-tuned", (4096, 4096)), ("softmax-triton-tuned", (16384, 1000)),
         ("softmax-triton-tuned", (512, 50257)), ("softmax-triton-tuned", (64, 262144)), ("softmax-triton-tuned", (8192, 8192)),
         ("softmax-triton-tuned", (1024, 1024))]
for name, shape in cases:
    v = VARIANTS[name]
    for dtype in ("float32", "bfloat16"):
        if dtype not in v.dtypes or (dtype == "bfloat16" and not name.startswith("softmax")):
            continue
        x = v.op_spec.make_input(shape, dtype, "cuda", 1234)
        out = torch.empty(v.op_spec.out_shape(shape), dtype=x.dtype, device="cuda")
        v(x, out); torch.cuda.synchronize()
        ms = triton.testing.do_bench(lambda: v(x, out), warmup=50, rep=300, return_mode="median")
        print(json.dumps({"tag": tag, "variant": name, "dtype": dtype, "shape": list(shape), "us": round(ms * 1e3, 3)}), flush=True)
        del x, out
