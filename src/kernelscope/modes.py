"""The timing modes: what each one measures, the asv benchmark that stores it, and the clock that checks it.

One record per mode, read by the asv suite (method names, versions), the
results export (a stored benchmark's mode), the site (order and words), the
peer checks (each mode's independent clock) and the CLI (``--mode``). Adding a
mode is a record here and its timing function in ``kernelscope.timing``.

Kept free of torch: asv's own process and the site build read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    name: str  # as tables, the CLI and the export name it
    method: str  # the asv benchmark method that stores it
    version: str  # that method's asv version: a new one starts its history afresh
    words: str  # what it measures, in a line
    peer: str | None  # the independent clock the peer checks hold it against (kernelscope.evidence.peers)
    host_dependent: bool  # the box's CPU is part of the number: compared within one box only


# Versions: why each mode's history restarted where it did.
# warm and cold, 2: warm samples batch `number` calls; cold waits behind a spin kernel.
#   3: warm samples run behind a spin kernel that outlasts the host's enqueue (steady-state GPU
#   time, no host launch path); cold's spin is sized per variant.
# graph, 4: one output alive across the captured calls, not one per call (at 2^28 elements two
#   alternating 1 GiB outputs read up to 16% slow); `calls` no longer capped by the outputs' memory.
#   5: each replay waited for before the next is queued (timing.time_graph), as warm's samples and
#   do_bench_cudagraph's replays are. It did not remove the slow third of the replays at 2^28
#   elements that 4 also has (they were the first after a capture: 6).
#   6: the graph settles before its samples: replayed untimed for 25 ms (timing.settle_graph).
#   7: replays queued back to back again (as in 4), after the settle: 5's wait for each replay let
#   the SM clock sag between them (graph samples under 75% of the max clock in 115-217 cases of a
#   full H100 run, against 5 at version 4).
#   8: a sample whose probe read the clock under 75% of its maximum (the GPU waited for the host,
#   or throttled) is taken again behind a longer spin (timing.graph.keep_unthrottled): four 1-2 us
#   graph cases moved 12-18% between two same-commit runs on one H100.
# host, a benchmark of its own, so the other modes' history is untouched.
#   2: samples of 20 ms, not 2 (timing.host.HOST_TARGET_S), 10 of them; a launch-bound case one
#   value per process, as in warm and cold mode.
#   3: a host-bound case (the host's cost of a call at least half the GPU's) one value per process
#   too (timing.processes.host_bound): a same-commit rerun on one box flagged 7 such cases.
#   4: the garbage collector off during a sample, as in timeit and torch.utils.benchmark.Timer
#   (timing.host.block_s): the peer's method; worth 0-0.5% in the H100's timer probe.
# first_call, 4: each framework's one-time start in a process (Numba's typing and lowering
#   registries, Triton's hash of its own library, Inductor's lazy imports) happens in asv's
#   forkserver before it forks (preload), as its imports already did, so the first call is the
#   variant's own: JIT or cache load, trace, module load.
WARM = Mode("warm", "time_warm", "3", "back-to-back calls, launch queue held full, L2 warm", "timer", False)
COLD = Mode("cold", "track_cold", "3", "L2 flushed before each call, each call timed alone", "do_bench", False)
GRAPH = Mode("graph", "track_graph", "8", "CUDA-graph replay: the kernels without launch overhead",
             "do_bench_cudagraph", False)
# Timer is two modes' peer: a host loop of calls, it reads the GPU time where the loop keeps the
# queue full (warm's question) and the loop's time always (host mode's).
HOST = Mode("host", "track_host", "4",
            "a plain Python loop of calls, synchronized per sample: what a call costs its caller", "timer", True)
FIRST_CALL = Mode("first_call", "time_first_call", "4", "first call in a fresh process: JIT, compile, extension load",
                  None, True)

MODES = (WARM, COLD, GRAPH, HOST, FIRST_CALL)
BY_NAME = {m.name: m for m in MODES}
NAMES = tuple(BY_NAME)
TIMED = (WARM.name, COLD.name, GRAPH.name, HOST.name)  # a case's modes, in the order tables show them
# The asv method of each stored benchmark -> its mode; track_first_call is first-call results stored
# before the first-call benchmark's version 3.
BY_METHOD = {**{m.method: m.name for m in MODES}, "track_first_call": FIRST_CALL.name}
