"""Host cost a call (the suite's host clock: timing.host.block_s) beside torch.utils.benchmark.Timer and the warm
GPU time (the suite's held clock), for the checked case of each variant and size; one JSON line a case.
PYTHONPATH picks the tree. A case is [op, variant, size] or [op, variant, size, dtype] (default float32)."""
import json, statistics, sys
import torch
from torch.utils.benchmark import Timer
from kernelscope.timing.cases import prepare
from kernelscope.timing import host
tag, cases = sys.argv[1], json.loads(sys.argv[2])
for op, name, size, *rest in cases:
    dtype = rest[0] if rest else "float32"
    try:
        case = prepare(op, name, size, dtype)
    except Exception as e:
        print(json.dumps({"tag": tag, "variant": name, "size": size, "dtype": dtype, "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)
        continue
    fn = case.call
    for _ in range(20):
        fn()
    number = host.plan_host(fn, "cuda")
    suite = statistics.median(host.time_host(fn, "cuda", 10, number))
    t = Timer("fn()", globals={"fn": fn}).blocked_autorange(min_run_time=0.2)
    # GPU time: a CUDA-event pair around many back-to-back calls behind a 1 ms sleep (queue held full)
    n = max(20, min(2000, number))
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gpu = []
    for _ in range(5):
        torch.cuda._sleep(int(2e6)); s.record()
        for _ in range(n):
            fn()
        e.record(); torch.cuda.synchronize(); gpu.append(s.elapsed_time(e) / n * 1e3)
    print(json.dumps({"tag": tag, "variant": name, "size": size, "dtype": dtype, "host_us": round(suite * 1e6, 2),
                      "timer_us": round(t.median * 1e6, 2), "gpu_us": round(min(gpu), 2)}), flush=True)
