"""The method page's canary section (kernelscope.site.canary_pages) from evidence/<machine>/canary.json."""

import json

import pytest

from kernelscope.evidence import canary
from kernelscope.site import canary_pages
from kernelscope.site.evidence import EvidenceData, EvidenceError

BENCH = "benchmarks.Square.time_warm('square-triton-flat1024', '{}', 'float32')"


def _row(level, size, ratio, mark, halfwidth, variant="square-triton-flat1024", canary_row=True):
    return {"level": level, "benchmark": BENCH.format(size), "class": "Square", "method": "time_warm", "mode": "warm",
            "variant": variant, "size": size, "dtype": "float32", "canary": canary_row,
            "injected_pct": 10.0 * (level + 1) if canary_row else 0.0, "base_s": 1e-3, "canary_s": 1e-3 * ratio,
            "ratio": ratio, "base_halfwidth_pct": halfwidth, "mark": mark}


def evidence_file():
    flagged = [BENCH.format("16384x16384")]
    return {"schema": canary.SCHEMA, "machine": "nvidia-h100-80gb-hbm3", "commit": "0123456789abcdef" * 2 + "01234567",
            "date": "2026-11-26T00:00:00+00:00", "command": "bash scripts/gpu/canary.sh", "factor": 1.05,
            "levels": [
                {"inject": "square-triton-flat1024:0.10", "injected": {"square-triton-flat1024": 10.0}, "commit": "a" * 40,
                 "command": "asv continuous", "exit_code": 1, "flagged": flagged, "missed": [BENCH.format("64x64")],
                 "false_alarms": []},
                {"inject": "square-triton-flat1024:0.20", "injected": {"square-triton-flat1024": 20.0}, "commit": "b" * 40,
                 "command": "asv continuous", "exit_code": 1, "flagged": flagged + [BENCH.format("64x64")],
                 "missed": [], "false_alarms": ["benchmarks.Square.time_warm('square-torch', '64x64', 'float32')"]}],
            "rows": [_row(0, "16384x16384", 1.0996, "+", 0.1), _row(0, "64x64", 1.02, "", 8.0),
                     _row(0, "4096x4096", 1.009, "", 0.1), _row(1, "4096x4096", 1.08, "", 0.1),
                     _row(1, "64x64", 1.21, "+", 8.0), _row(1, "16384x16384", 1.199, "+", 0.1),
                     _row(1, "64x64", 1.3, "+", 5.0, variant="square-torch", canary_row=False)]}


def test_each_slowed_size_is_shown_against_its_interval_with_asvs_verdict():
    text = canary_pages.detection_section({"nvidia-h100-80gb-hbm3": evidence_file()})
    assert "| size | +10% | +20% |" in text
    # sizes in order of elements; a 2% change inside an 8% interval is noise, not a miss
    assert text.index("| 64x64 |") < text.index("| 16384x16384 |")
    assert "| 64x64 | 1.020 (±8.0%): inside the interval | 1.210 (±8.0%): **caught** |" in text
    assert "| 16384x16384 | 1.100 (±0.1%): **caught** | 1.199 (±0.1%): **caught** |" in text
    # past the interval but under asv's factor (1.05): not flagged by design; past both and unflagged: a miss
    assert "| 4096x4096 | 1.009 (±0.1%): under the factor | 1.080 (±0.1%): **missed** |" in text
    assert "exit 1; 1 benchmark flagged slower, 1 slowed one missed (past the factor and the interval, not flagged), " \
           "0 others flagged" in text
    assert "1 other flagged: `benchmarks.Square.time_warm('square-torch', '64x64', 'float32')`" in text
    assert "square-torch" not in text.split("| size |")[1]  # the false alarm is listed, not tabled as a canary


def test_no_canary_says_how_to_make_one():
    assert "bash scripts/gpu/canary.sh" in canary_pages.detection_section({})


def test_the_site_reads_each_machines_canary_and_names_a_file_it_cannot(tmp_path):
    (tmp_path / "nvidia-h100-80gb-hbm3").mkdir()
    (tmp_path / "nvidia-h100-80gb-hbm3" / canary.FILE).write_text(json.dumps(evidence_file()))
    assert EvidenceData(tmp_path).canaries["nvidia-h100-80gb-hbm3"]["factor"] == 1.05
    (tmp_path / "nvidia-h100-80gb-hbm3" / canary.FILE).write_text(json.dumps({**evidence_file(), "schema": 99}))
    with pytest.raises(EvidenceError, match="canary.json.*schema 99"):
        EvidenceData(tmp_path)
