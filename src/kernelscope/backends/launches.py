"""What a variant's plan function returns: the kernels a call launches, and how (``kernelscope plan``).

A tuned variant's launcher picks its launch shape with a pure function of
(shape, dtype, facts) (:mod:`kernelscope.backends.device`); its plan function,
beside the launcher in its backend's module, calls that same function and says
what the call launches as a :class:`LaunchPlan` of :class:`Launch` es.
:mod:`kernelscope.plan` finds the plan functions through the catalog and shows
what they return; the backends import these two classes from here, so no
backend module imports :mod:`kernelscope.plan` back.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Launch:
    """One kernel a call launches."""

    kernel: str  # its name in its source file (a template's or a kernel factory's, without arguments)
    source: str  # that file, from the repository's root
    grid: tuple[int, ...] | None  # blocks (Triton: programs) of a launch; None: the GPU's occupancy decides (note)
    block: int  # threads a block (Triton: num_warps x 32)
    cluster: int = 1  # blocks a thread-block cluster
    count: int = 1  # launches of it a call
    note: str = ""  # how the grid follows where it is not one number, what the kernel is given
    most: int | None = None  # where grid is None: the most blocks it takes

    def grid_text(self, short: bool = False) -> str:
        if self.grid is None:
            return f"<= {self.most} (persistent)" if short else self.note
        text = " x ".join(map(str, self.grid))
        return f"{text} ({self.note})" if self.note and not short else text

    def as_dict(self) -> dict:
        return {"kernel": self.kernel, "source": self.source, "grid": None if self.grid is None else list(self.grid),
                "most": self.most, "block": self.block, "cluster": self.cluster, "count": self.count,
                "note": self.note}


@dataclass(frozen=True)
class LaunchPlan:
    """What a plan function returns: the strategy (None where the variant has one shape of launch), the launches in
    the order a call makes them, and the plan's other fields (elements a thread, stages, persistent or not, ...)."""

    strategy: str | None
    launches: tuple[Launch, ...]
    fields: dict = field(default_factory=dict)
