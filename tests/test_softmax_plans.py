"""softmax-triton-tuned's and softmax-numba's launch plans, held to a record of them.

The fixture (tests/fixtures/softmax_plans.json) holds every plan the two backends' plan functions return over a
dense grid of shapes, in float32 and bfloat16, on the H100 and H200 presets and on the interpreters' stand-ins,
with the overrides the tuning scripts sweep, and what `kernelscope plan` says of each default plan. A change to
how a plan is chosen that is meant to leave every launch as it was must leave this test passing. Where a plan is
meant to change, write the fixture anew from the code and review its diff:

    .venv/bin/python tests/test_softmax_plans.py
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "softmax_plans.json"

ROWS = [1, 2, 3, 4, 5, 8, 31, 32, 64, 100, 127, 128, 131, 132, 133, 200, 255, 256, 263, 264, 265, 300, 512, 1000,
        1024, 2048, 4096, 8192, 16384, 65536]
COLS = [1, 2, 3, 4, 12, 13, 15, 16, 17, 24, 25, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 511, 512,
        513, 1000, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 8191, 8192, 8193, 12288, 12289, 16383,
        16384, 16385, 20000, 24576, 29040, 29041, 32767, 32768, 32769, 50257, 51200, 51201, 58080, 58081, 65535,
        65536, 65537, 70000, 100000, 131072, 200000, 262144, 262145, 1048576, 4194304]
# the rows of the overrides' tables and of `kernelscope plan`'s (their plans' rows are the other tables')
ROWS_SWEPT = [1, 4, 64, 131, 132, 264, 512, 4096]
DTYPES = {"float32": 4, "bfloat16": 2}

# softmax_plan overrides (scripts/gpu/tune_triton.py's sweeps and floors.py's plans)
TRITON_OVERRIDES = [
    {"persistent": True}, {"persistent": False}, {"pipelined": True}, {"tiles_max_cols": 0},
    {"max_row_block": 65536}, {"narrow_cols": 1024}, {"few_warps_cols": 2048}, {"few_warps": 8},
    {"persistent": True, "persist_programs_per_sm": 1}, {"persistent": True, "persist_programs_per_sm": 3},
    {"persistent": True, "persist_stages": 6, "persist_programs_per_sm": 1},
    {"persistent": True, "split_warps": 32, "chunk": 8192, "persist_programs_per_sm": 1},
    {"persistent": True, "persist_group": 1, "persist_vectorize": False}, {"persistent": True, "persist_group": 2},
    {"persistent": True, "l2_hints": False}, {"pipelined": True, "pipe_group_bytes": 8 << 20},
    {"pipelined": True, "chunk": 8192}, {"group_bytes": 32 << 20, "persistent": False},
    {"chunk": 8192, "split_warps": 8, "persistent": False},
]
# softmax_launch overrides (scripts/gpu/tune_numba.py's sweep)
NUMBA_OVERRIDES = [
    {"path": "regs"}, {"path": "row"}, {"path": "split"}, {"path": "regs", "vector": False},
    {"path": "regs", "cols_per_thread": 16, "max_threads": 1024}, {"path": "regs", "min_blocks": 2},
    {"path": "regs", "fast_exp": False}, {"path": "regs", "max_threads": 32},
    {"unroll": 4, "cols_per_thread": 8, "path": "row"}, {"recompute": True, "path": "row"},
    {"max_threads": 1024, "unroll": 16, "path": "row"}, {"unroll": 4}, {"l2_share": 100.0},
    {"chunk": 4096, "split_threads": 128}, {"max_cached_cols": 4096},
    {"path": "row", "online": True}, {"path": "row", "online": True, "fast_exp": True},
    {"path": "row", "fast_exp": True}, {"path": "split", "fast_exp": True},
    {"path": "split", "fast_exp": True, "l2_share": 0.75}, {"path": "split", "reverse": True, "l2_share": 100.0},
    {"hints": False}, {"path": "split", "hints": False}, {"path": "split", "vector": True},
    {"vector": True, "chunk": 4096, "split_threads": 128},
    {"path": "regs", "max_threads": 512, "cols_per_thread": 99},
]


def _entry(call) -> object:
    """What a plan function returns, as JSON: its fields, or the error it raises."""
    from kernelscope.backends.launches import LaunchPlan

    try:
        plan = call()
    except ValueError as exc:
        return {"error": str(exc)}
    if isinstance(plan, LaunchPlan):  # its source files are test_plan.py's to check
        return {"strategy": plan.strategy, "fields": plan.fields,
                "launches": [{k: v for k, v in launch.as_dict().items() if k != "source"}
                             for launch in plan.launches]}
    return asdict(plan)


def _tables() -> dict[str, list[list[object]]]:
    from kernelscope import backends

    backends.configure_interpreters()
    from kernelscope.backends.device import PRESETS
    from kernelscope.backends.numba import softmax as nsoftmax
    from kernelscope.backends.triton import softmax as tsoftmax

    def grid(call, rows_of=ROWS):
        return [[_entry(lambda: call(rows, cols)) for cols in COLS] for rows in rows_of]

    tables = {}
    gpus = {**PRESETS, "interpreter": None}
    for dtype, itemsize in DTYPES.items():
        for gpu, facts in gpus.items():
            tables[f"triton launch {gpu} {dtype}"] = grid(
                lambda r, c: tsoftmax.softmax_launch(r, c, itemsize, facts))
        for gpu, facts in PRESETS.items():
            tables[f"triton plan_of {gpu} {dtype}"] = grid(
                lambda r, c: tsoftmax.softmax_plan_of((r, c), dtype, facts), ROWS_SWEPT)
            tables[f"numba plan_of {gpu} {dtype}"] = grid(
                lambda r, c: nsoftmax.softmax_plan_of((r, c), dtype, facts), ROWS_SWEPT)
            for o in TRITON_OVERRIDES:
                tables[f"triton plan {gpu} {dtype} {json.dumps(o, sort_keys=True)}"] = grid(
                    lambda r, c: tsoftmax.softmax_plan(r, c, itemsize, facts.sm_count, l2_bytes=facts.l2_bytes, **o),
                    ROWS_SWEPT)
    for gpu, facts in gpus.items():
        tables[f"numba launch {gpu} {{}}"] = grid(lambda r, c: nsoftmax.softmax_launch(r, c, facts))
        for o in NUMBA_OVERRIDES:
            tables[f"numba launch {gpu} {json.dumps(o, sort_keys=True)}"] = grid(
                lambda r, c: nsoftmax.softmax_launch(r, c, facts, **o), ROWS_SWEPT)
    return json.loads(json.dumps(tables))  # tuples as lists, as the fixture holds them


def record() -> dict:
    """The fixture: each distinct plan once ("plans"), each table a grid of indices into them (rows x cols; ROWS, or
    ROWS_SWEPT)."""
    plans, index, tables = [], {}, {}
    for name, table in _tables().items():
        grid = []
        for row in table:
            line = []
            for entry in row:
                key = json.dumps(entry, sort_keys=True)
                if key not in index:
                    index[key] = len(plans)
                    plans.append(entry)
                line.append(index[key])
            grid.append(line)
        tables[name] = grid
    return {"rows": ROWS, "rows_swept": ROWS_SWEPT, "cols": COLS, "plans": plans, "tables": tables}


def dump(fixture: dict) -> str:
    """The fixture as JSON, a plan or a row of a table a line (a changed plan is a changed line in its diff)."""
    def lines(items):
        return ",\n".join(items)

    tables = lines(f"{json.dumps(name)}: [\n{lines(json.dumps(row) for row in grid)}]"
                   for name, grid in fixture["tables"].items())
    head = ",\n".join(f"{json.dumps(k)}: {json.dumps(fixture[k])}" for k in ("rows", "rows_swept", "cols"))
    plans = lines(json.dumps(p, sort_keys=True) for p in fixture["plans"])
    return f"{{{head},\n\"plans\": [\n{plans}],\n\"tables\": {{\n{tables}}}}}\n"


def test_every_softmax_plan_is_the_recorded_one():
    recorded = json.loads(FIXTURE.read_text())
    assert (recorded["rows"], recorded["rows_swept"], recorded["cols"]) == (ROWS, ROWS_SWEPT, COLS)
    current = _tables()
    assert sorted(current) == sorted(recorded["tables"])
    for name, table in current.items():
        assert len(table) == len(recorded["tables"][name]), name
        rows_of = ROWS if len(table) == len(ROWS) else ROWS_SWEPT
        for rows, row, indices in zip(rows_of, table, recorded["tables"][name]):
            for cols, entry, i in zip(COLS, row, indices):
                assert entry == recorded["plans"][i], (name, rows, cols)


if __name__ == "__main__":
    FIXTURE.write_text(dump(record()))
    print(f"wrote {FIXTURE}")
