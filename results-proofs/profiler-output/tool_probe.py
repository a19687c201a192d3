"""What the GPU box's profiling tools print, captured once so the parsers are written (and tested) against it.

Run under Nsight Compute by tool_probe.sh: each region below is one NVTX range
named ``op:variant``, as `kernelscope profile` names them. Outside ncu it also
reports how Triton, Numba and Inductor expose their compiled code.
"""
import json
import os
import sys

import torch

from kernelscope.catalog import get
from kernelscope.profiling.torch_profiler import nvtx_range

out = os.environ.get("PROBE_OUT", "/tmp")
report = {}
for name in ("square-torch", "square-triton-flat1024", "softmax-triton-row", "square-numba-coalesced", "gelu-compile"):
    v = get(name)
    x = v.op_spec.make_input((4096, 4096), "float32", "cuda", 1)
    v(x)
    torch.cuda.synchronize()
    with nvtx_range(f"{v.op}:{v.name}"):
        v(x)
    torch.cuda.synchronize()

if os.environ.get("PROBE_INTROSPECT"):
    import importlib
    import triton
    from triton.runtime.jit import JITFunction
    mod = importlib.import_module("kernelscope.backends.triton.square")
    for attr, obj in vars(mod).items():
        if isinstance(obj, JITFunction):
            info = {"type": type(obj).__name__, "attrs": [a for a in dir(obj) if "cache" in a]}
            caches = getattr(obj, "device_caches", None)
            if caches:
                for dev, entry in caches.items():
                    info["device_key"] = repr(dev)
                    info["entry_types"] = [type(e).__name__ for e in (entry if isinstance(entry, tuple) else [entry])]
                    kc = entry[0] if isinstance(entry, tuple) else entry
                    for k, ck in list(kc.items())[:1]:
                        info["compiled_type"] = type(ck).__name__
                        info["asm_keys"] = list(ck.asm.keys())
                        info["n_regs"] = getattr(ck, "n_regs", None)
                        info["n_spills"] = getattr(ck, "n_spills", None)
                        md = ck.metadata
                        info["metadata"] = {k2: repr(getattr(md, k2)) for k2 in getattr(md, "_fields", [])}
                        try:
                            sass = ck.asm["sass"]
                            info["sass_head"] = sass[:400]
                        except Exception as e:
                            info["sass_error"] = repr(e)
                        info["ptx_head"] = ck.asm["ptx"][:300]
            report[attr] = info
    # Numba
    nmod = importlib.import_module("kernelscope.backends.numba.square")
    disp = nmod.square_coalesced_kernel
    try:
        asm = disp.inspect_asm()
        report["numba"] = {"keys": [repr(k) for k in asm], "ptx_head": next(iter(asm.values()))[:300],
                           "attrs": [a for a in dir(disp) if "inspect" in a or "regs" in a or "resource" in a]}
        for k in asm:
            try:
                report["numba"]["regs"] = disp.get_regs_per_thread(k)
                report["numba"]["shared"] = disp.get_shared_mem_per_block(k)
            except Exception as e:
                report["numba"]["regs_error"] = repr(e)
    except Exception as e:
        report["numba"] = {"error": repr(e)}
    # Inductor
    from torch._inductor.utils import run_and_get_code
    fn = torch.compile(lambda a: a * a + 1.0)
    _, codes = run_and_get_code(fn, torch.randn(1024, device="cuda"))
    report["inductor"] = {"n": len(codes), "head": codes[0][:1500]}
    # Triton clusters (num_ctas) for a wide row
    from kernelscope.backends.triton.softmax import softmax_row_kernel
    x = torch.randn(64, 65536, device="cuda")
    y = torch.empty_like(x)
    for ctas in (2, 4):
        try:
            softmax_row_kernel[(64,)](x, y, x.stride(0), y.stride(0), 65536, BLOCK_SIZE=65536, num_warps=16, num_ctas=ctas)
            torch.cuda.synchronize()
            report[f"num_ctas_{ctas}"] = float((y - torch.softmax(x, -1)).abs().max())
        except Exception as e:
            report[f"num_ctas_{ctas}"] = repr(e)[:500]
    json.dump(report, open(os.path.join(out, "introspect.json"), "w"), indent=1, default=str)
    print(json.dumps(report, indent=1, default=str)[:6000])
