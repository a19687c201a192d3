"""How many processes a case is sampled in: one, or several where the process itself moves the number.

A launch-bound kernel's warm or cold time is mostly the GPU's cost of taking
each launch off its stream, and that cost is a property of the process: on the
H100, medians of the same 2 us kernel in fresh processes spread by 4-12%
(standard deviation about 0.1 us, whatever the kernel), while the samples of
one process agree within 0.3% (results-proofs/launch-bound-spread). Graph replay does not have it. Samples
from one process then give an interval that is far too narrow: a rerun lands
outside it. So a launch-bound case is sampled in ``LAUNCH_BOUND_PROCESSES``
processes, one sample each (warm: one sample of ``number`` back-to-back calls;
cold and host mode: the median of the process's samples), and asv's interval
of the median is computed over process values, as it should be, then widened
to the spread between processes pooled over the run's cases
(:mod:`kernelscope.asv.intervals`): three values say little of their own.

Everything else takes all its samples in one process: at 20 us a call the same
0.1 us is 0.5%, inside the 2% that reruns are held to.

Host mode has a second reason: a call's cost on the host moves from one
process to the next, and within one, far more than a GPU's does (a Numba call
read 200-350 us across processes and 116-656 us across one process's samples
on the H100; a Triton call 16.5-28.8 us across three processes).
Where that cost is a large share of the GPU's time it shows in (or sets) the
loop's time, and one process's samples gave intervals that a rerun on the
same box missed: 7 of 7 flags of a same-commit rerun of Square and Softmax
were such host-mode cases (softmax-numba 8192x8192 read 349 us, then 212;
results-proofs/rerun-noise/h100-c426785). So host mode samples a case one
value per process also when the host's cost of a call is at least
``HOST_BOUND_SHARE`` of the GPU's time (:func:`host_bound`).

Which cases are launch-bound is decided per process, from the warm plan's
GPU time per call (measured in setup); the asv side
(:mod:`kernelscope.asv.rounds`) runs a case in further rounds only
while it has fewer than ``LAUNCH_BOUND_PROCESSES`` samples.
"""

from __future__ import annotations

LAUNCH_BOUND_S = 20e-6  # GPU time per call under which a warm or cold case is sampled one value per process
# Three processes: replaying asv's statistics on 180 measured process medians of four
# launch-bound cases (scripts/rounds_sim.py), a rerun's median fell inside the first run's
# 99% interval in 94% of pairs (half-width about 13%); 4-6 processes did no better, 8
# reached 96% for more than three times the added processes.
LAUNCH_BOUND_PROCESSES = 3
# Host mode: a host's cost of a call at least this share of the GPU's time per call is sampled per process.
# At half, a host whose cost doubles for a while (seen within one process) already sets the loop's time.
HOST_BOUND_SHARE = 0.5


def launch_bound(per_call_s: float, device: str) -> bool:
    """Whether a case is sampled one value per process: a GPU call under ``LAUNCH_BOUND_S``.

    The CPU path has no launch queue whose state a process could set; its cases keep one process.
    """
    return device == "cuda" and per_call_s < LAUNCH_BOUND_S


def host_bound(host_per_call_s: float, per_call_s: float, device: str) -> bool:
    """Whether host mode samples a case one value per process: launch-bound, or the host's cost of a call
    (``host_per_call_s``, the warm plan's) is at least ``HOST_BOUND_SHARE`` of the GPU's (``per_call_s``)."""
    return launch_bound(per_call_s, device) or (device == "cuda" and host_per_call_s >= HOST_BOUND_SHARE * per_call_s)


def sampled_per_process(samples: int | None) -> bool:
    """Whether a stored warm or cold result's samples came one per process: one process takes at least 6."""
    return bool(samples) and samples <= LAUNCH_BOUND_PROCESSES


def launch_bound_result(mode: str, time_s: float | None, gpu: str | None, samples: int | None = None) -> bool:
    """Whether a stored warm, cold or host GPU result is a launch-bound one: what the site marks.

    Under ``LAUNCH_BOUND_S``, or sampled one value per process, which only
    launch-bound cases are (``samples <= LAUNCH_BOUND_PROCESSES``: one process
    takes at least 6): the rule reads the warm time per call, and a multi-kernel
    variant's cold time can pass 20 us where its warm one does not. Results
    stored before the rule took all their samples in one process, and their
    intervals are too narrow. Host mode's launch-bound cases are one value per
    process too (since its version 2), and so are its host-bound ones (since
    version 3, :func:`host_bound`); a host time says nothing of the GPU's, so
    for host mode only the sample count tells.
    """
    if not gpu or time_s is None:
        return False
    if mode == "host":
        return sampled_per_process(samples)
    return mode in ("warm", "cold") and (time_s < LAUNCH_BOUND_S or sampled_per_process(samples))
