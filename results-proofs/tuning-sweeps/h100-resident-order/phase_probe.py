"""softmax-numba's resident plan, its phases timed apart: the whole launch (passes=3), pass 1 alone (read, keep,
partials; no barrier) and pass 2 alone (combine, write; on stale partials, so its output is not checked)."""
import json, numpy as np, torch, triton
from kernelscope.backends.numba import direct
from kernelscope.backends.numba import softmax as nb
from kernelscope.catalog import OPS
real = direct.launch
state = {"passes": 3}
def launch(kernel, grid, block, *args, **kw):
    if len(args) == 10 and state["passes"] != 3:
        args = (*args[:-1], np.int64(state["passes"]))
    return real(kernel, grid, block, *args, **kw)
direct.launch = launch
a = torch.empty(2**28, device="cuda"); b = torch.empty_like(a)
copy_us = triton.testing.do_bench(lambda: b.copy_(a), warmup=50, rep=300, return_mode="median") * 1e3
copy_gbps = 2 * a.numel() * 4 / copy_us / 1e3; del a, b
for shape in ((64, 262144), (8, 1048576), (128, 262144)):
    x = OPS["softmax"].make_input(shape, "float32", "cuda", 5); y = torch.empty_like(x)
    ref = torch.softmax(x.double(), -1)
    nb.launch_softmax(x, y, path="resident"); torch.cuda.synchronize()
    err = ((y.double() - ref).abs() / ref.abs().clamp_min(1e-30)).max().item()
    row = {"shape": "x".join(map(str, shape)), "copy_gbps": round(copy_gbps), "max_rel_err": err}
    for passes in (3, 1, 2):
        state["passes"] = passes
        us = triton.testing.do_bench(lambda: nb.launch_softmax(x, y, path="resident"), warmup=50, rep=300,
                                     return_mode="median") * 1e3
        row[f"passes{passes}_us"] = round(us, 2)
    state["passes"] = 3
    print(json.dumps(row), flush=True)
    del x, y, ref
