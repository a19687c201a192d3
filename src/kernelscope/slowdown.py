"""An injected slowdown, to show that the regression gate fires: what is injected, and where it is set.

The catalog reads this setting whenever a variant's function is resolved, so it
sits beside the catalog; the evidence that the gate catches the slowdown (the
canary commits that set it, and what ``asv continuous`` flagged) is
:mod:`kernelscope.evidence.canary`.

The setting is a comma-separated list of variant names, each with an optional
fraction::

    square-mul                          run the variant's function twice per call (twice the work, same answer)
    square-triton-flat1024:0.1          its one launch does 10% more work: the variant's canary kernel
                                        (``Variant.canary`` in the catalog) on ceil(blocks * 1.1) programs,
                                        the extra ones redoing the first blocks (same values, same answer)
    square-mul,square-triton-flat1024:0.2

A fraction slows the kernel itself, not the launch path: a second launch would
add far more than 10% where a kernel is launch-bound. A fraction is in (0, 1];
only a variant with a canary kernel in the catalog takes one.

Where it is set, last one wins:

1. ``INJECT`` below, the tracked default (empty: nothing is injected). ``asv
   continuous BASE CANARY`` compares two commits run in the same environment,
   so a slowdown to be caught there has to live in a commit: a canary commit
   changes this one line (``scripts/gpu/canary.sh`` makes such commits with
   ``python -m kernelscope.evidence.canary commit``).
2. the environment variable ``KERNELSCOPE_INJECT_SLOWDOWN``: when set, even to
   the empty string, it replaces the default (one run against another run of
   the same commit, ``kernelscope compare-runs``; or switching a canary commit's
   slowdown off).

The setting is read, and checked whole, whenever a variant's function is
resolved (``Variant.function``): a malformed entry, an unknown variant, a bad
fraction, or a fraction on a variant without a canary kernel raises
``ValueError`` naming the variant and the problem.
"""

from __future__ import annotations

import os
from fractions import Fraction
from functools import lru_cache
from typing import Mapping

INJECT = ""

ENV = "KERNELSCOPE_INJECT_SLOWDOWN"


def setting() -> str:
    """The setting in force: the environment variable when set, else the tracked default."""
    value = os.environ.get(ENV)
    return INJECT if value is None else value


def injected(variants: Mapping) -> dict[str, Fraction | None]:
    """The variants slowed down by the setting in force: a fraction of more work, or None: run twice.

    ``variants``: the catalog's (name -> Variant), which the setting is checked against.
    """
    return parse(setting(), variants)


def parse(value: str, variants: Mapping) -> dict[str, Fraction | None]:
    """``"a,b:0.1"`` -> ``{"a": None, "b": Fraction(1, 10)}``, every entry checked against ``variants``."""
    return _parse(value, tuple((name, v.canary is not None) for name, v in variants.items()))


@lru_cache(maxsize=16)
def _parse(value: str, variants: tuple[tuple[str, bool], ...]) -> dict[str, Fraction | None]:
    """``parse`` over (name, has a canary kernel) pairs: hashable, so a setting is checked once."""
    has_canary = dict(variants)
    where = f"{ENV}={value!r}" if os.environ.get(ENV) is not None else f"kernelscope.slowdown.INJECT = {value!r}"
    found: dict[str, Fraction | None] = {}
    for entry in value.split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, colon, raw = (part.strip() for part in entry.partition(":"))
        if name not in has_canary:
            raise ValueError(f"{where}: {name!r} is not a variant (known: {', '.join(has_canary)})")
        if name in found:
            raise ValueError(f"{where}: {name} is named twice")
        if not colon:
            found[name] = None
            continue
        try:
            fraction = Fraction(raw)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{where}: {name}: {raw!r} is not a fraction (0.1 is 10% more work)") from None
        if not 0 < fraction <= 1:
            raise ValueError(f"{where}: {name}: the fraction {raw} is outside (0, 1] (0.1 is 10% more work)")
        if not has_canary[name]:
            with_canary = [n for n, has in has_canary.items() if has]
            raise ValueError(f"{where}: {name} has no canary kernel, so it takes no fraction (run it twice: "
                             f"{name} without one; the variants with one: {', '.join(with_canary) or 'none'})")
        found[name] = fraction
    return found
