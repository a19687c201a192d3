"""Which variant to use: the fastest, its ties by asv compare's rule, and the next one apart, per size and mode."""

import json
from pathlib import Path

import pytest

from kernelscope.results import compare
from kernelscope.site import answer_pages, answers
from kernelscope.site.data import MODES
from sitebuild import RESULTS, profiled_site


def _row(variant, time_s, ci=None, **kw):
    low, high = ci if ci else (time_s * 0.99, time_s * 1.01)
    return {"machine": "gpu", "op": "square", "mode": "warm", "dtype": "float32", "size": "64x64", "status": "measured",
            "variant": variant, "time_s": time_s, "ci_low": low, "ci_high": high, "commit": "c" * 40,
            "benchmark": "benchmarks.Square.time_warm", **kw}


def test_a_variant_within_asv_s_factor_ties_even_where_it_differs_significantly():
    best, close = _row("square-a", 100e-6), _row("square-b", 105e-6)  # intervals apart, but only 5% slower
    got = answers.answer([close, best], {})
    assert got.best is best and got.ties == (close,) and got.after is None and got.variants == 2


def test_a_slower_variant_whose_interval_overlaps_the_best_ties_and_the_first_one_apart_is_next():
    best = _row("square-a", 100e-6, (90e-6, 140e-6))
    wide = _row("square-b", 130e-6, (100e-6, 200e-6))  # 30% slower, but the intervals overlap
    apart = _row("square-c", 150e-6)  # 50% slower, intervals apart
    later = _row("square-d", 300e-6)
    got = answers.answer([later, apart, wide, best], {})
    assert got.best is best and got.ties == (wide,) and got.after is apart
    assert got.margin == pytest.approx(1.5)


def test_failed_rows_are_not_answers_and_the_rule_reads_the_samples_where_the_files_have_them():
    best, other = _row("square-a", 100e-6, (50e-6, 400e-6)), _row("square-b", 130e-6, (50e-6, 400e-6))
    failed = _row("square-c", None, (None, None), status="failed")
    assert answers.answer([failed], {}) is None
    assert answers.answer([best, other, failed], {}).ties == (other,)  # overlapping intervals
    # The same medians with raw samples that do not overlap: Mann-Whitney tells them apart, as asv compare does.
    stats = {"ci_99_a": 50e-6, "ci_99_b": 400e-6, "repeat": 10}
    cases = {answers.case_key(best): (100e-6, stats, [100e-6 + i * 1e-7 for i in range(10)], "1"),
             answers.case_key(other): (130e-6, stats, [130e-6 + i * 1e-7 for i in range(10)], "1")}
    assert answers.answer([best, other], cases).after is other


def test_the_case_key_is_the_name_asv_unrolls():
    assert answers.case_key(_row("square-a", 1e-6)) == "benchmarks.Square.time_warm('square-a', '64x64', 'float32')"
    host = _row("square-a", 1e-6, benchmark="benchmarks.SquareHost.track_host", host="box-1")
    assert answers.case_key(host) == "benchmarks.SquareHost.track_host('square-a', '64x64', 'float32', 'box-1')"


@pytest.fixture(scope="module")
def data(committed_site_data):
    return committed_site_data


def test_every_current_case_is_answered_by_the_rule_on_the_stored_samples(data):
    found = answers.answers(data)
    groups = {}
    for r in data.current:
        if r["mode"] in MODES and r.get("size") and r["status"] == "measured" and r.get("time_s"):
            groups.setdefault((r["machine"], r["op"], r["mode"], r["dtype"], r["size"]), []).append(r)
    assert {(a.machine, a.op, a.mode, a.dtype, a.size) for a in found} == set(groups)
    assert {a.mode for a in found} == set(MODES)  # host mode answered too
    files = {}
    for a in found:
        rows = groups[(a.machine, a.op, a.mode, a.dtype, a.size)]
        assert a.best["time_s"] == min(r["time_s"] for r in rows) and a.variants == len(rows)
        run = (a.machine, a.best["commit"])
        files.setdefault(run, compare.unrolled(compare.Run(Path(RESULTS), run[1], run[0])))
        best = files[run][answers.case_key(a.best)]
        assert best[2], "the stored results keep raw samples: the rule runs on them"
        assert not any(answers.apart(best, files[run][answers.case_key(t)]) for t in a.ties)
        if a.after is not None:
            assert answers.apart(best, files[run][answers.case_key(a.after)])
            assert all(t["time_s"] <= a.after["time_s"] for t in a.ties)
    # The question a small tensor brings: host mode's answer is not always warm mode's.
    small = {(a.machine, a.op, a.dtype, a.size): a.best["variant"] for a in found if a.mode == "warm"}
    assert any(small.get((a.machine, a.op, a.dtype, a.size)) != a.best["variant"] for a in found if a.mode == "host")


def test_the_op_pages_and_the_overview_give_the_answers(tmp_path_factory, data):
    site = profiled_site(tmp_path_factory)[0]
    records = json.loads((site / "data" / "answers.json").read_text())
    assert records == json.loads(json.dumps(answer_pages.records(data)))
    overview = (site / "results" / "index.html").read_text()
    assert 'class="ks-chooser"' in overview and "../data/answers.json" in overview
    assert (site / "assets" / "chooser.js").exists()
    page = (site / "results" / "softmax" / "index.html").read_text()
    assert page.count('id="which-variant-at-which-size') == len(data.machines)  # one section a machine's tab
    for a in answers.answers_for(data, data.machines[0], "softmax"):
        if a.mode == "warm" and a.dtype == "float32":
            short = answer_pages.short_name(a.best["variant"], "softmax")
            assert f"<td>{a.size}</td>\n<td><strong><code>{short}</code></strong></td>" in page, a.size
