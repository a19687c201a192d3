"""The floors as data (kernelscope.evidence.floors) and the op pages' Floors section (site.floor_pages)."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelscope.evidence import floors
from kernelscope.site import floor_pages, pages
from kernelscope.site.data import SiteData
from kernelscope.site.evidence import EvidenceData, EvidenceError

ROOT = Path(__file__).resolve().parents[1]
# what the floors script printed on an H100 at d28e6fb, unedited (results-proofs/softmax-floors/h100-d28e6fb/floors.txt)
PRINTED = ROOT / "tests" / "fixtures" / "floors" / "h100-d28e6fb.txt"


def _row(config, pct, shape="64x262144", dtype="float32", op="softmax"):
    return {"op": op, "shape": shape, "dtype": dtype, "config": config, "time_us": 100.0 / pct, "gbps": 30.0 * pct,
            "pct_copy": pct}


def evidence_file():
    rows = [_row("copy (read + write)", 94.0),
            _row("copy (read + write)", 93.0),  # the kernels' table times the copy again: the first one is kept
            _row("cuda loop threads=512 cluster=16 (default)", 78.0), _row("cuda loop threads=512 cluster=16 (default)"
                                                                          " free exps", 78.6),
            _row("cuda ring1 threads=512 cluster=16", 77.1), _row("cuda ring1 threads=512 cluster=16 free exps", 78.9),
            _row("cuda pipe threads=512 cluster=16", 71.5),  # refused its free twin: none
            _row("triton split (default)", 63.1), _row("triton split (default) free exps", 63.5),
            _row("triton persist {'persistent': True, 'persist_programs_per_sm': 1}", 50.8),
            _row("torch.sum (read)", 75.9, shape="16777216", op="mean"), _row("torch.mean", 75.8, shape="16777216",
                                                                             op="mean")]
    return floors.stamp("nvidia-h100-80gb-hbm3", "NVIDIA H100 80GB HBM3", "d" * 40,
                        "python3 scripts/gpu/floors.py --kernels", 3002.0, rows)


def test_a_free_exps_row_joins_its_plan_and_the_first_copy_is_the_floor():
    softmax, mean = floors.cases(evidence_file())
    assert (softmax.op, softmax.shape, mean.op) == ("softmax", "64x262144", "mean")
    assert softmax.copy.pct_copy == 94.0 and [ln.config for ln in softmax.lines].count("copy (read + write)") == 1
    loop = softmax.lines[1]
    assert (loop.pct_copy, loop.free_pct, loop.default) == (78.0, 78.6, True)
    assert softmax.lines[3].free_pct is None  # the pipe plan has no free twin
    # the fastest with free exps is not the fastest with its exps: ring1 moves the row faster, does its math slower
    assert floors.best(softmax, "cuda").config.startswith("cuda loop")
    assert floors.best(softmax, "cuda", free=True).config == "cuda ring1 threads=512 cluster=16"
    assert floors.best(softmax, "numba") is None
    assert mean.copy.config == "torch.sum (read)"


def test_a_plan_meets_the_target_or_some_plan_could_or_none_can():
    case = floors.Case("softmax", "512x50257", "bfloat16", [
        floors.Line("copy (read + write)", 86.0, 1.0),
        floors.Line("cuda ring1e threads=512 cluster=2 (default)", 79.9, 1.0, free_pct=80.4),
        floors.Line("cuda ring1 threads=512 cluster=2", 79.2, 1.0, free_pct=81.5),
        floors.Line("triton tiles (default)", 63.6, 1.0, free_pct=71.1)])
    cuda, triton = floors.verdict(case, "cuda"), floors.verdict(case, "triton")
    assert (cuda.target, cuda.state, cuda.fastest_free.config) == (80.0, "open", "cuda ring1 threads=512 cluster=2")
    assert triton.state == "out of reach" and triton.plan.pct_copy == 63.6
    assert "does not yet, its plan reads 79.9% in the probe, and ring1 threads=512 cluster=2 reads 81.5% with free " \
        "exps" in floor_pages._verdict_words("softmax-cuda", cuda)
    # the suite's committed reading of the same case, where there is one, decides: the targets are the suite's
    suite = floors.verdict(case, "cuda", suite_pct=80.9)
    assert suite.state == "met" and suite.plan.pct_copy == 79.9
    assert "**meets it**, its plan reads 79.9% in the probe and 80.9% in the suite's run of `abcdef12`" in \
        floor_pages._verdict_words("softmax-cuda", suite, "abcdef12" * 5)
    case.lines[1].pct_copy = 80.0  # the target itself counts as met
    assert floors.verdict(case, "cuda").state == "met"
    assert floors.verdict(case, "cuda", suite_pct=79.8).state == "open"  # the probe's 80.0 is not the suite's
    assert floors.verdict(case, "numba") is None  # no plan of it
    assert floors.verdict(floors.Case("softmax", "64x262144", "float16", case.lines), "cuda") is None  # no target


def test_the_probes_printed_rows_are_read_back_as_it_printed_them():
    rows = floors.printed_rows(PRINTED.read_text())
    assert len(rows) > 100
    first = rows[0]
    assert (first["op"], first["shape"], first["dtype"], first["config"]) == ("softmax", "512x50257", "float32",
                                                                              "copy (read + write)")
    assert {r["op"] for r in rows} == {"softmax", "mean"}
    loop = next(r for r in rows if r["config"] == "cuda loop threads=512 cluster=16 (default) free exps")
    assert loop["shape"] == "64x262144" and 70 < loop["pct_copy"] < 90
    assert floors.printed_rows("== a title line\nkernelscope: building ...\n") == []


def test_wrap_stamps_a_runs_rows_with_its_machine(tmp_path):
    (tmp_path / "floors.txt").write_text(PRINTED.read_text())
    (tmp_path / "machine.json").write_text(json.dumps({"machine": "nvidia-h100-80gb-hbm3", "gpu": "NVIDIA H100",
                                                       "copy_gbps": "3002"}))
    data = floors.wrap(tmp_path, "a" * 40, "the command")
    assert (data["schema"], data["machine"], data["copy_gbps"], data["commit"]) == (1, "nvidia-h100-80gb-hbm3",
                                                                                   3002.0, "a" * 40)
    assert floors.check(data) is data
    (tmp_path / "floors.txt").write_text("nothing printed\n")
    with pytest.raises(ValueError, match="no rows"):
        floors.wrap(tmp_path, "a" * 40, "the command")


def test_the_softmax_page_shows_each_case_with_its_free_exps(tmp_path):
    text = floor_pages.op_section(evidence_file(), "softmax")
    assert text.startswith("## Floors") and "**64x262144, float32**" in text
    assert "| `softmax-cuda` loop threads=512 cluster=16 **(its plan)** |" in text
    assert "| 78.0% | 78.6% |" in text and "| 71.5% | — |" in text
    assert ("Fastest way of moving these rows with free exps: `softmax-cuda` 78.9%, ring1 threads=512 cluster=16; "
            "`softmax-triton-tuned` 63.5%, split. The copy at this size: 94.0%.") in text
    # the wide rows' target (85% in float32): neither plan reaches it, and neither does any plan with free exps
    assert ("Against the wide rows' target here, 85% of the copy, judged on this run of the probe: `softmax-cuda` **out "
            "of reach for every plan measured**: its plan reads 78.0% in the probe, the fastest with free exps (ring1 "
            "threads=512 cluster=16) 78.9%; "
            "`softmax-triton-tuned` **out of reach for every plan measured**: its plan reads 63.1% in the probe, the "
            "fastest with free exps (split) 63.5%.") in text
    # beside the suite's committed run (the page's warm tables), that run judges each variant's own plan
    judged = floor_pages.op_section(evidence_file(), "softmax", {("softmax-cuda", "64x262144", "float32"): 77.5},
                                    "e" * 40)
    assert ("85% of the copy, judged on the suite's committed run where this page has one, else this run of the "
            "probe: `softmax-cuda` **out of reach for every plan measured**: its plan reads 78.0% in the probe and "
            "77.5% in the suite's run of `eeeeeeee`") in judged
    # softmax_plan's overrides as keywords: a {...} at a cell's end is an attribute list to Markdown's attr_list
    assert "| `softmax-triton-tuned` persist (persistent=True, persist_programs_per_sm=1) |" in text
    assert "{" not in text
    assert "at `dddddddd`" in text and "evidence/nvidia-h100-80gb-hbm3/floors.json" in text
    # the mean's torch.sum is timed beside it, but is no floor of a mean kernel: no section
    assert floor_pages.op_section(evidence_file(), "mean") == ""
    assert floor_pages.op_section(evidence_file(), "square") == "" and floor_pages.op_section(None, "softmax") == ""


def test_the_site_reads_floors_per_machine_and_names_a_file_it_cannot(tmp_path):
    folder = tmp_path / "nvidia-h100-80gb-hbm3"
    folder.mkdir()
    (folder / floors.FILE).write_text(json.dumps(evidence_file()))
    assert EvidenceData(tmp_path).floors["nvidia-h100-80gb-hbm3"]["copy_gbps"] == 3002.0
    (folder / floors.FILE).write_text(json.dumps({**evidence_file(), "schema": 99}))
    with pytest.raises(EvidenceError, match="floors.json.*schema 99"):
        EvidenceData(tmp_path)


@pytest.mark.skipif(not (ROOT / "results" / "benchmarks.json").exists(), reason="no committed results")
def test_the_committed_floors_reach_the_softmax_page():
    data = SiteData(ROOT / "results", ROOT, evidence_dir=ROOT / "evidence")
    assert "nvidia-h100-80gb-hbm3" in data.evidence.floors
    page = pages.op_page(data, "softmax")
    assert "## Floors" in page and "with its exps free" in page and "**64x262144, float32**" in page
    # the page's own warm run judges each variant's plan, named by its commit
    commit = data.snapshot("nvidia-h100-80gb-hbm3", op="softmax", mode="warm").run.commit
    assert f"in the suite's run of `{commit[:8]}`" in page


def test_the_machines_page_lists_what_else_was_measured_on_a_machine(tmp_path):
    folder = tmp_path / "nvidia-h100-80gb-hbm3"
    folder.mkdir()
    (folder / floors.FILE).write_text(json.dumps(evidence_file()))
    data = SimpleNamespace(evidence=EvidenceData(tmp_path))
    text = pages.evidence_list(data, "nvidia-h100-80gb-hbm3")
    assert "Also measured on it (`evidence/nvidia-h100-80gb-hbm3/`)" in text
    assert "- the wide rows' floors, each plan with free exps, at `dddddddd`" in text
    assert "[softmax](softmax.md#floors)" in text and "Peer timers" not in text  # no peers.json there
    assert pages.evidence_list(data, "nvidia-h200") == ""
