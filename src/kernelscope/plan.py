"""Which kernel, and which launch shape, a call of a tuned variant takes (``kernelscope plan``).

A variant with a plan names it in the catalog (``Variant.plan``, "module:function"):
a function of (shape, dtype, facts) that calls the very function the variant's
launch calls to pick its launch shape, with the GPU's facts given
(``backends.device``: a preset, or this machine's GPU as the backend's launch
reads it), and says what that launch is: the kernel's name in its source, the
grid, the block, the cluster and the plan's other fields (a
:class:`~kernelscope.backends.launches.LaunchPlan`). Nothing here chooses a
launch shape of its own.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from kernelscope.backends.device import PRESETS, THIS, DeviceFacts
from kernelscope.backends.launches import LaunchPlan  # what a plan function returns

# Each backend's reader of this machine's GPU: the facts its launches read ("module:function" of a device index).
THIS_READERS = {
    "cuda": "kernelscope.backends.cuda.kernels:gpu_facts",
    "triton": "kernelscope.backends.triton:gpu_facts_of",
    "numba": "kernelscope.backends.numba.softmax:gpu_facts",
}

# What a variant without a plan launches, by backend; other variants launch a fixed shape written in their launcher.
NO_PLAN = {
    "torch": "ATen's kernel; no kernelscope plan",
    "torch-compile": "Inductor's generated kernel (torch.compile); no kernelscope plan",
}


@dataclass(frozen=True)
class CallPlan:
    """A variant's plan at one shape and dtype on one GPU."""

    variant: str
    shape: tuple[int, ...]
    dtype: str
    gpu: str  # a preset's name, or "this"
    facts: DeviceFacts
    plan: LaunchPlan

    def as_dict(self) -> dict:
        return {"variant": self.variant, "shape": "x".join(map(str, self.shape)), "dtype": self.dtype,
                "gpu": self.gpu, "facts": self.facts.as_dict(), "strategy": self.plan.strategy,
                "launches": [launch.as_dict() for launch in self.plan.launches], "fields": dict(self.plan.fields)}


def _resolve(path: str):
    from kernelscope import backends

    backends.configure_interpreters()  # as the catalog imports a kernel module: the CPU interpreters where no GPU
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def this_gpu() -> tuple[int, str] | None:
    """(index, name) of this machine's current CUDA device, or None without one."""
    from kernelscope import backends

    if not backends.cuda_available():
        return None
    import torch

    index = torch.cuda.current_device()
    return index, torch.cuda.get_device_name(index)


def check_gpu(gpu: str) -> None:
    """A ValueError unless ``gpu`` is a preset, or this machine's GPU and there is one."""
    if gpu not in PRESETS and gpu != THIS:
        raise ValueError(f"unknown GPU {gpu!r}: pass {THIS}, {' or '.join(PRESETS)}")
    if gpu == THIS and this_gpu() is None:
        raise ValueError(f"no CUDA GPU here to read: pass --gpu {' or --gpu '.join(PRESETS)}")


def facts_for(backend: str, gpu: str) -> DeviceFacts:
    """The facts a plan of ``backend`` is given on ``gpu``: a preset's, or this GPU's as the backend's launch reads it."""
    check_gpu(gpu)
    if gpu in PRESETS:
        return PRESETS[gpu]
    return _resolve(THIS_READERS[backend])(this_gpu()[0])


def default_gpu() -> str:
    """``this`` where a GPU is present, else the h100 preset."""
    return THIS if this_gpu() is not None else "h100"


def no_plan(variant) -> str:
    """One line: what a variant without a plan launches."""
    return NO_PLAN.get(variant.backend, f"a fixed launch written in its launcher ({variant.impl}); "
                                         "no kernelscope plan")


def plan_of(variant, shape: tuple[int, ...], dtype: str, gpu: str) -> CallPlan:
    """``variant``'s plan at ``shape`` and ``dtype`` on ``gpu``; a ValueError naming the variant and the problem."""
    if variant.plan is None:
        raise ValueError(f"{variant.name}: {no_plan(variant)}")
    op = variant.op_spec
    if len(shape) != op.ndim:
        raise ValueError(f"{variant.name}: expected a {op.ndim}-D shape, got {'x'.join(map(str, shape))}")
    why = variant.unsupported(shape, dtype)
    if why:
        raise ValueError(why)
    facts = facts_for(variant.backend, gpu)
    return CallPlan(variant.name, tuple(shape), dtype, gpu, facts, _resolve(variant.plan)(tuple(shape), dtype, facts))


def planned_variants() -> list:
    """The variants that name a plan, in catalog order."""
    from kernelscope.catalog import VARIANTS

    return [v for v in VARIANTS.values() if v.plan is not None]


def all_plans(gpu: str, dtypes: tuple[str, ...] | None = None) -> tuple[list[CallPlan], list[tuple[str, str]]]:
    """Every planned variant's plan at each of its op's benchmark sizes, in its benchmarked dtypes (or those of
    ``dtypes`` it takes), and the (variant, why) of those left out: a variant whose plan fails at one of its sizes
    is left out whole (tests/test_plan.py keeps none)."""
    check_gpu(gpu)
    found, left_out = [], []
    for v in planned_variants():
        chosen = [d for d in (dtypes or v.bench_dtypes) if d in v.dtypes]
        try:
            found += [plan_of(v, shape, d, gpu) for shape in v.op_spec.bench_shapes for d in chosen]
        except ValueError as exc:
            left_out.append((v.name, str(exc)))
    return found, left_out


# --- text ----------------------------------------------------------------------------------------

def gpu_line(p: CallPlan) -> str:
    if p.gpu in PRESETS:
        return f"{p.gpu} (preset {p.facts.name}): {p.facts.summary()}"
    here = this_gpu()
    return f"this ({here[1] if here else p.facts.name}, as its launch reads it): {p.facts.summary()}"


def _value(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (tuple, list)):
        return " + ".join(map(str, v))
    return str(v)


def describe(p: CallPlan) -> str:
    """One call's plan as indented lines."""
    rows = [("variant", p.variant), ("shape", f"{'x'.join(map(str, p.shape))} {p.dtype}"), ("gpu", gpu_line(p))]
    if p.plan.strategy is not None:
        rows.append(("strategy", p.plan.strategy))
    several = len(p.plan.launches) > 1
    for i, launch in enumerate(p.plan.launches, 1):
        tag = f" {i}" if several else ""
        count = f" (x{launch.count} a call)" if launch.count > 1 else ""
        rows += [(f"kernel{tag}", f"{launch.kernel}{count}  [{launch.source}]"), (f"grid{tag}", launch.grid_text()),
                 (f"block{tag}", f"{launch.block} threads"),
                 (f"cluster{tag}", f"{launch.cluster} blocks" if launch.cluster > 1 else "1 (no cluster)")]
    rows += [(k, _value(v)) for k, v in p.plan.fields.items()]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def table_rows(plans: list[CallPlan]) -> list[list[str]]:
    """One row per launch: variant, shape, dtype, strategy, kernel, grid, block, cluster, the plan's fields."""
    rows = []
    for p in plans:
        details = ", ".join(f"{k} {_value(v)}" for k, v in p.plan.fields.items())
        for i, launch in enumerate(p.plan.launches):
            first = i == 0
            rows.append([p.variant if first else "", "x".join(map(str, p.shape)) if first else "",
                         p.dtype if first else "", (p.plan.strategy or "") if first else "",
                         launch.kernel + (f" x{launch.count}" if launch.count > 1 else ""), launch.grid_text(True),
                         str(launch.block), str(launch.cluster), details if first else ""])
    return rows


TABLE_HEADER = ["variant", "shape", "dtype", "strategy", "kernel", "grid", "block", "cluster", "plan"]
