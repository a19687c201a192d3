"""How well the suite's clocks agree with their peers, and the gate: pure functions of the records.

Per mode (warm ~ Timer, cold ~ do_bench, graph ~ do_bench_cudagraph): the
cases with both readings, the share within 1% and within 2% of the peer, and
the worst case. The gate: every case whose suite time in a mode is
:data:`JUDGED_MIN_S` or more is within :data:`GATE_PCT` of that mode's peer,
except where the peer's clock takes in host time that exceeds the GPU time it
runs behind (:func:`host_bound`): those are listed with the reason and the
numbers, and their graph pair is judged whatever its time.

Why a peer can read the host: ``Timer`` is a host clock around back-to-back
calls and one synchronize, so when a call costs the host more than the GPU
(a Numba launch, a Python-heavy call), it reads the host's time per call. A
short burst of calls can cost the host less a call than a long loop does
(the H100's square-numba-flat at 8192x8192: 151 us a call over 20 calls,
under the GPU's 180, yet Timer's loop of 1,000 read 224), so the suite's
own host mode, a loop as long as Timer's blocks are in effect, decides too:
a loop slower than the GPU work is not GPU-bound, whatever the burst said.
Host mode and Timer are both host loops, so their pair is judged. The
host's cost of a call can drift within the process by more than the
tolerance (the H100's Numba calls read 334-433 us a call across
one host-mode run's samples and 359-635 us across five runs a few seconds
apart, results-proofs/host-mode-vs-timer/timer_probe.py), so Timer's readings are taken in pairs
with host mode's samples, as many, of as many calls (``timer_paired``), and
such a pair's difference is the median of the pairs' ratios (:func:`pair_diff`);
records from before that pairing excuse such a pair while Timer's reading lies
inside the span of host mode's own samples (:func:`host_drift`).
``do_bench`` puts each call between events behind its L2 flush; when the
host takes longer to launch the call than the GPU takes to run the flush, the
start event is reached before the call is launched, and the GPU idles between
the events for the difference (the H100's square-numba-coalesced at 4096x4096:
151 us of host per call, a 91 us flush, 70 us of kernel; do_bench read 144). Graph replay launches nothing
from the host: its pair is never excused. The suite holds the stream with a
spin kernel for both warm and cold mode, so its own readings stay the GPU's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelscope.evidence.peers.data import MEASURED, MODES, PEER_OF, SHORT_TITLES, Record

JUDGED_MIN_S = 50e-6  # the gate judges a mode of a case whose suite time is at least this
GATE_PCT = 2.0  # ... within this of its peer
HOST_GATE_PCT = 3.0  # host mode against Timer: two host loops, one of 20 ms samples, one of long blocks
SHARES_PCT = (1.0, 2.0)  # the summary's bands


def diff_pct(suite: float | None, peer: float | None) -> float | None:
    """(suite / peer - 1) x 100: positive when the suite reads longer than its peer."""
    if suite is None or peer is None or peer <= 0:
        return None
    return (suite / peer - 1.0) * 100.0


def pair_diff(rec: Record, mode: str) -> float | None:
    """The suite's difference from its peer in ``mode``, in %: of the two medians, except for host mode's
    readings taken in pairs with Timer's, where it is the median of the pairs' ratios (``host_pair_ratio``,
    :func:`kernelscope.evidence.peers.measure.host_and_timer`): the two clocks compared on the same host, block by block."""
    if by_pair_ratios(rec, mode):
        return (rec.details["host_pair_ratio"] - 1.0) * 100.0
    return diff_pct(rec.clock(mode), rec.clock(PEER_OF[mode]))


def by_pair_ratios(rec: Record, mode: str) -> bool:
    """Whether :func:`pair_diff` reads this pair by the median of its pairs' ratios: host mode, both clocks read,
    the ratios kept."""
    return (mode == "host" and rec.details.get("host_pair_ratio") is not None and rec.clock(mode) is not None
            and rec.clock(PEER_OF[mode]) is not None)


def diffs(rec: Record) -> dict[str, float | None]:
    """Mode -> the suite's difference from its peer, in % (:func:`pair_diff`)."""
    return {mode: pair_diff(rec, mode) for mode in MODES}


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us"


def host_bound(rec: Record, mode: str) -> str | None:
    """Why the peer of ``mode`` reads the host's time for this case (with the numbers), or None.

    Judged on a GPU only: on the CPU every clock is the host's, and calls finish when they return.
    """
    h = rec.host_per_call_s
    if rec.device != "cuda" or mode in ("graph", "host"):
        return None
    if mode == "warm":
        gpu, loop = rec.clock("warm"), rec.clock("host")
        if gpu is not None and h is not None and h > gpu:
            return (f"a call costs {us(h)} on the host and {us(gpu)} on the GPU (warm): Timer's host clock around "
                    "back-to-back calls reads the host")
        if gpu is not None and loop is not None and loop > gpu * (1 + GATE_PCT / 100):
            return (f"a loop of calls takes {us(loop)} a call (host mode) against {us(gpu)} of GPU work (warm): "
                    "the host does not keep the queue full, so Timer's host clock reads the loop, not the GPU")
    if h is None:
        return None
    if mode == "cold":
        gpu, flush = rec.clock("cold"), rec.flush_s
        if gpu is not None and flush is not None and h > flush:
            return (f"a call costs {us(h)} on the host, more than do_bench's L2 flush ({us(flush)}) takes on the GPU: "
                    f"after the flush the GPU waits {us(h - flush)} for the launch of the call ({us(gpu)}, cold), "
                    "between do_bench's events")
    return None


def host_drift(rec: Record, mode: str) -> str | None:
    """Why the host pair cannot agree to the tolerance here (the host's cost drifts in the process), or None.

    Only for host mode, only for a record whose Timer readings were not paired with host mode's samples
    (crosscheck before the pairing), and only while Timer's reading lies inside the span of host mode's own
    samples: a Timer outside that span still fails the pair. Paired readings see the same drift, so they are
    judged.
    """
    lo, hi, peer = rec.details.get("host_min_s"), rec.details.get("host_max_s"), rec.clock("timer")
    if mode != "host" or rec.details.get("timer_paired") or lo is None or hi is None or peer is None or lo <= 0:
        return None
    spread = (hi / lo - 1.0) * 100.0
    if spread <= HOST_GATE_PCT or not lo <= peer <= hi:
        return None
    return (f"the host's cost of a call drifts within the process: host mode's own samples span {us(lo)} to "
            f"{us(hi)} ({spread:.0f}%), and Timer's {us(peer)} lies inside that span")


def excuse(rec: Record, mode: str) -> str | None:
    """Why this pair is listed instead of judged (:func:`host_bound`, :func:`host_drift`), or None."""
    return host_bound(rec, mode) or host_drift(rec, mode)


@dataclass
class ModeSummary:
    mode: str
    peer: str
    compared: int = 0  # cases with both readings
    within: dict[str, int] = field(default_factory=dict)  # "1" / "2" -> cases within that many %
    worst: dict | None = None  # {"variant", "size", "diff_pct", "suite_s", "peer_s"}
    judged: int = 0  # of the compared, suite time >= JUDGED_MIN_S and not excused
    judged_within: dict[str, int] = field(default_factory=dict)
    judged_worst: dict | None = None
    excused: int = 0  # compared cases excused (:func:`excuse`): the peer read the host, or the host drifted

    def share(self, pct: float, judged: bool = False) -> float | None:
        n = self.judged if judged else self.compared
        counts = self.judged_within if judged else self.within
        return counts.get(_band(pct), 0) / n if n else None


def _band(pct: float) -> str:
    return f"{pct:g}"


def _where(rec: Record) -> dict:
    """The case a summary's or gate's entry is of (data.case_name spells it)."""
    return {"variant": rec.variant, "size": rec.size, "dtype": rec.dtype}


def _case(rec: Record, mode: str, d: float) -> dict:
    return {**_where(rec), "diff_pct": d,
            "suite_s": rec.clock(mode), "peer_s": rec.clock(PEER_OF[mode])}


def summarize(records: list[Record]) -> dict[str, ModeSummary]:
    """Mode -> its agreement with its peer over the measured records."""
    out = {}
    for mode in MODES:
        s = ModeSummary(mode, PEER_OF[mode])
        for rec in records:
            if rec.status != MEASURED:
                continue
            d = pair_diff(rec, mode)
            if d is None:
                continue
            s.compared += 1
            for pct in SHARES_PCT:
                s.within[_band(pct)] = s.within.get(_band(pct), 0) + (abs(d) <= pct)
            if s.worst is None or abs(d) > abs(s.worst["diff_pct"]):
                s.worst = _case(rec, mode, d)
            if excuse(rec, mode):
                s.excused += 1
            elif rec.clock(mode) >= JUDGED_MIN_S:
                s.judged += 1
                for pct in SHARES_PCT:
                    s.judged_within[_band(pct)] = s.judged_within.get(_band(pct), 0) + (abs(d) <= pct)
                if s.judged_worst is None or abs(d) > abs(s.judged_worst["diff_pct"]):
                    s.judged_worst = _case(rec, mode, d)
        out[mode] = s
    return out


@dataclass
class Gate:
    passed: bool
    judged: int  # (case, mode) pairs judged
    failures: list[dict] = field(default_factory=list)  # {"variant", "size", "mode", "why"}
    exceptions: list[dict] = field(default_factory=list)  # {"variant", "size", "mode", "reason", "diff_pct"}
    why: str = ""  # one line: the verdict's reason

    def as_dict(self) -> dict:
        return {"passed": self.passed, "judged": self.judged, "failures": self.failures,
                "exceptions": self.exceptions, "why": self.why}


def _missing(rec: Record, clock: str) -> str:
    why = rec.skipped.get(clock) or rec.errors.get(clock) or "not measured"
    return f"no {SHORT_TITLES[clock]} reading: {why}"


def tolerance(mode: str, base_pct: float = GATE_PCT) -> float:
    """How close a mode must be to its peer: ``base_pct``, and at least HOST_GATE_PCT for host mode."""
    return max(base_pct, HOST_GATE_PCT) if mode == "host" else base_pct


def gate(records: list[Record], min_s: float = JUDGED_MIN_S, tolerance_pct: float = GATE_PCT) -> Gate:
    """Every mode of every case at ``min_s`` or more within ``tolerance_pct`` of its peer, but the excused.

    A case counts in a mode when the suite's time there is ``min_s`` or more
    (a mode the suite could not time counts when another of the case's modes
    does). An excused pair (:func:`excuse`) is an exception, listed with its reason; its
    case's graph pair is then judged at any time. A judged pair without a peer
    reading fails: the gate passes only on what was measured, and only when
    something was judged at all. Host mode's tolerance is :func:`tolerance`'s.
    """
    failures, exceptions, judged, host_judged = [], [], 0, 0
    for rec in records:
        if rec.status == "failed":
            failures.append({**_where(rec), "mode": "*", "why": rec.reason})
            continue
        if rec.status != MEASURED:
            continue
        suite_times = [t for t in (rec.clock(m) for m in MODES) if t is not None]
        big = any(t >= min_s for t in suite_times)
        excused = False
        for mode in MODES:
            if mode not in rec.seconds:  # a file from before the suite had this mode
                continue
            suite, peer = rec.clock(mode), rec.clock(PEER_OF[mode])
            in_gate = suite >= min_s if suite is not None else big
            if mode == "graph" and excused:
                in_gate = True  # an excused case must still agree where no host is involved
            if not in_gate:
                continue
            reason = excuse(rec, mode)
            d = pair_diff(rec, mode)
            if reason:
                excused = True
                exceptions.append({**_where(rec), "mode": mode,
                                   "peer": PEER_OF[mode], "reason": reason, "diff_pct": d})
                continue
            judged += 1
            host_judged += mode == "host"
            if suite is None:
                failures.append({**_where(rec), "mode": mode, "why": _missing(rec, mode)})
            elif peer is None:
                failures.append({**_where(rec), "mode": mode,
                                 "why": _missing(rec, PEER_OF[mode])})
            elif abs(d) > tolerance(mode, tolerance_pct):
                paired = " (the median of the pairs' ratios)" if by_pair_ratios(rec, mode) else ""
                failures.append({**_where(rec), "mode": mode,
                                 "why": f"{mode} {us(suite)} against {SHORT_TITLES[PEER_OF[mode]]} {us(peer)}: "
                                        f"{d:+.2f}%{paired}, outside {tolerance(mode, tolerance_pct):g}%"})
    if failures:
        cases = sum(f["mode"] == "*" for f in failures)
        pairs = len(failures) - cases
        why = ", ".join(part for part in (
            f"{pairs} of {judged} judged pairs outside {tolerance_pct:g}% or unmeasured" if pairs else "",
            f"{cases} case{'s' if cases > 1 else ''} failed" if cases else "") if part)
    elif not judged:
        why = f"nothing judged: no case ran {us(min_s)} or more in a mode with a peer reading to compare"
    else:
        why = f"all {judged} judged pairs within {tolerance_pct:g}%" + (
            f" (host mode's against Timer: {tolerance('host', tolerance_pct):g}%)" if host_judged else "")
    return Gate(passed=judged > 0 and not failures, judged=judged, failures=failures, exceptions=exceptions, why=why)
