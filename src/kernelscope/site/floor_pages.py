"""The softmax page's "Floors" section, from ``evidence/<machine>/floors.json``.

Per hard case where the probe timed the kernels' plans (the wide rows):
the copy of the input at that very size, then each plan of softmax-cuda and softmax-triton-tuned as checked and timed, beside
the same plan with its exps made free. A kernel's free-exps time is how fast its
way of moving the row's bytes goes with no math; where even that is under a
target, no tuning of the math reaches it, and the section says so against
the wide rows' targets (floors.WIDE_ROW_TARGETS). Every number is floors.json's
(:mod:`kernelscope.evidence.floors`).
"""

from __future__ import annotations

import ast
import re

from kernelscope.evidence import floors
from kernelscope.site.markdown import indent, table

FLOORS_COMMAND = "python3 scripts/gpu/floors.py --kernels"
BACKENDS = {"cuda": "softmax-cuda", "triton": "softmax-triton-tuned"}  # the probe's row prefixes


def _plan(text: str) -> str:
    """A plan as the probe named it, softmax_plan's overrides (a dict's repr, which Markdown's attr_list would take
    for attributes) spelled as keyword arguments: "persist {'persistent': True}" -> "persist (persistent=True)"."""
    found = re.search(r"\{.*\}$", text)
    if not found:
        return text
    try:
        overrides = ast.literal_eval(found.group(0))
    except (ValueError, SyntaxError):
        return text.replace("{", "(").replace("}", ")")
    words = ", ".join(f"{k}={v}" for k, v in overrides.items())
    return f"{text[:found.start()].rstrip()} ({words})"


def _plan_of(config: str) -> str:
    """A kernel row's plan, without its backend or the probe's "(default)" mark, as _plan spells it."""
    return _plan(config.partition(" ")[2].removesuffix(floors.DEFAULT))


def _what(config: str) -> str:
    backend = config.partition(" ")[0]
    if backend in BACKENDS:
        return f"`{BACKENDS[backend]}` {_plan_of(config)}" + (" **(its plan)**" if config.endswith(floors.DEFAULT)
                                                              else "")
    return config + " *(floor)*" if config.startswith("copy") else config


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}%"


def case_table(case: floors.Case, suite: dict | None = None, suite_commit: str = "") -> str:
    """One case in full: its verdicts against the target, its fastest free-exps plans, and every row (each
    plan timed, and timed with free exps); ``suite``: (variant, shape, dtype) -> the suite's committed % of copy
    (its run of ``suite_commit``), which judges a variant's own plan."""
    rows = [[_what(ln.config), f"{ln.time_us:.2f} µs", _pct(ln.pct_copy), _pct(ln.free_pct)] for ln in case.lines]
    out = [f"**{case.shape}, {case.dtype}**"]
    verdicts = _verdicts(case, suite)
    if verdicts:
        judged = ("the suite's committed run where this page has one, else this run of the probe"
                  if any(v.suite_pct is not None for _, v in verdicts) else "this run of the probe")
        out.append(f"Against the wide rows' target here, {verdicts[0][1].target:.0f}% of the copy, judged on {judged}: "
                   + "; ".join(_verdict_words(name, v, suite_commit) for name, v in verdicts) + ".")
    bests = [(name, floors.best(case, backend, free=True)) for backend, name in BACKENDS.items()]
    said = [f"`{name}` {ln.free_pct:.1f}%, {_plan_of(ln.config)}" for name, ln in bests if ln is not None]
    if said and case.copy is not None:
        out.append(f"Fastest way of moving these rows with free exps: {'; '.join(said)}. "
                   f"The copy at this size: {case.copy.pct_copy:.1f}%.")
    out.append(table(["what", "time", "% of copy", "with its exps free"], rows, ["l", "r", "r", "r"]))
    return "\n\n".join(out)


def _verdicts(case: floors.Case, suite: dict | None) -> list[tuple[str, floors.Verdict]]:
    suite = suite or {}
    found = [(name, floors.verdict(case, backend, suite.get((name, case.shape, case.dtype))))
             for backend, name in BACKENDS.items()]
    return [(name, v) for name, v in found if v is not None]


STATE_WORDS = {"met": "**meets it**", "open": "not yet", "out of reach": "**out of reach**"}


def summary_table(cases: list[floors.Case], suite: dict | None = None) -> str:
    """A line a case: the target, the copy, and per tuned kernel where it stands, its own plan's reading (the suite's
    where there is one) and its fastest plan with free exps."""
    rows = []
    for case in cases:
        verdicts = dict(_verdicts(case, suite))
        cells = []
        for backend, name in BACKENDS.items():
            v, fastest = verdicts.get(name), floors.best(case, backend, free=True)
            free = f"free exps {fastest.free_pct:.1f}%" if fastest is not None else ""
            if v is None:
                cells.append(free or "—")
                continue
            mine = v.suite_pct if v.suite_pct is not None else v.plan.pct_copy
            cells.append(f"{STATE_WORDS.get(v.state, v.state)}: {mine:.1f}%" + (f", {free}" if free else ""))
        target = next((f"{v.target:.0f}%" for v in verdicts.values()), "—")
        copy = _pct(case.copy.pct_copy) if case.copy is not None else "—"
        rows.append([f"**{case.shape}, {case.dtype}**", target, copy, *cells])
    return table(["case", "target", "copy", *(f"`{name}`: its plan" for name in BACKENDS.values())], rows,
                 ["l", "r", "r", "l", "l"])


def _verdict_words(name: str, v: floors.Verdict, suite_commit: str = "") -> str:
    mine = f"its plan reads {v.plan.pct_copy:.1f}% in the probe"
    if v.suite_pct is not None:
        mine += f" and {v.suite_pct:.1f}% in the suite's run" + (f" of `{suite_commit[:8]}`" if suite_commit else "")
    if v.state == "met":
        return f"`{name}` **meets it**, {mine}"
    fastest = _plan_of(v.fastest_free.config) if v.fastest_free else ""
    if v.state == "open":
        return f"`{name}` does not yet, {mine}, and {fastest} reads {v.fastest_free.free_pct:.1f}% with free exps"
    free = f", the fastest with free exps ({fastest}) {v.fastest_free.free_pct:.1f}%" if v.fastest_free else ""
    return f"`{name}` **out of reach for every plan measured**: {mine}{free}"


def op_section(data: dict | None, op: str, suite: dict | None = None, suite_commit: str = "") -> str:
    """This op's floors on the machine whose floors.json ``data`` is (None: none measured there yet); ``suite``
    and ``suite_commit``: the suite's newest warm readings there, as case_table takes them."""
    if data is None:
        return ""
    # cases with a kernel's plan in them: the mean's torch.sum is no floor of a mean kernel (mean-cuda reads faster)
    mine = [c for c in floors.cases(data) if c.op == op and any(ln.config.partition(" ")[0] in BACKENDS
                                                                   for ln in c.lines)]
    if not mine:
        return ""
    return "\n\n".join([
        "## Floors\n",
        "A softmax reads every element and writes it once, and no element of a row can be written before the whole "
        "row has been read. The copy of the input at each size is the least such a kernel moves. Each plan of the "
        "tuned kernels was checked against the reference, timed with the warm clock, then timed again with every "
        "exp made free (an identity in Triton, a subtract in CUDA C++): the same loads, stores, reductions and "
        "cluster exchanges, no exp math. A plan's free-exps time is as fast as its way of moving the row can go. "
        "Per case, in % of the copy bandwidth: where each tuned kernel's own plan stands against the wide rows' "
        "target (read in the suite's committed run where this page has one, else in the probe), and its fastest "
        "plan with free exps; *out of reach*: under the target even then.",
        f"Measured on {data['gpu']} at `{data['commit'][:8]}` ({data['date'][:10]}), `{data['command']}`; "
        f"% of the copy bandwidth measured in the same process ({data['copy_gbps']:.0f} GB/s on 1 GiB). "
        f"`evidence/{data['machine']}/{floors.FILE}` holds every row.",
        summary_table(mine, suite),
        f'??? abstract "Each case in full: the verdicts, and every plan timed and with its exps free '
        f'({sum(len(c.lines) for c in mine)} rows)"\n\n'
        + indent("\n\n".join(case_table(c, suite, suite_commit) for c in mine)),
        '??? note "Why even free exps stay under the copy"\n\n' + indent(
            "What keeps even that under the copy is the row's dependency. A block cannot write any of its row before "
            "the whole row is read, so within a row its loads and stores do not overlap; other rows' blocks must "
            "fill the gaps. A row wider than one SM holds is spread over a cluster of blocks, a cluster must fit in "
            "one GPC, and so only some of the large clusters fit on the GPU at once "
            "(`scripts/gpu/tune_wide_rows.py` prints the driver's count): rows go in rounds, the last one "
            "part-empty. Triton 3.6, the GPU boxes' version, compiled none of the cluster forms tried "
            "(`results-proofs/triton-clusters/ctas_probe.py`), so its rows wider than a program's registers are read "
            "twice, once from DRAM and once more from L2 or DRAM."),
    ])
