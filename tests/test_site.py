"""The results site: what it computes from results/, and that it builds from any results."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelscope.catalog import OPS, VARIANTS
from kernelscope.ops import parse_shape
from kernelscope.results import compare, export, history
from kernelscope.site import chart_data, pages
from kernelscope.site.data import SiteData, largest_shape
from kernelscope.site.macros import Macros
from kernelscope.site.sources import SourceNotFound, source, variant_sources

from sitebuild import RESULTS, ROOT, SYNTHETIC, build, with_second_machine

pytestmark = pytest.mark.skipif(not (RESULTS / "benchmarks.json").exists(), reason="no committed results")


@pytest.fixture(scope="module")
def data():
    return SiteData(RESULTS, ROOT)


# --- what the pages compute ----------------------------------------------------------------------------------------

def test_commits_tied_on_date_follow_git_order():
    records = [{"commit": "b", "date": 5}, {"commit": "a", "date": 5}, {"commit": "c", "date": 1}]
    assert history.commit_order(records, {"a": 0, "b": 1}) == ["c", "a", "b"]
    assert history.commit_order(records, {"a": 1, "b": 0}) == ["c", "b", "a"]


def test_snapshot_is_the_newest_commit_that_measured_what_was_asked():
    rows = [{"commit": "old", "machine": "m", "op": "square", "mode": "cold"},
            {"commit": "old", "machine": "m", "op": "square", "mode": "warm"},
            {"commit": "new", "machine": "m", "op": "square", "mode": "warm"}]
    assert history.snapshot(rows, ["old", "new"], machine="m", mode="warm")[0] == "new"
    assert history.snapshot(rows, ["old", "new"], machine="m", mode="cold")[0] == "old"
    assert history.snapshot(rows, ["old", "new"], machine="other")[0] is None
    assert history.last_two(rows, ["old", "new"], machine="m") == ("old", "new")


def test_overview_cell_is_the_fastest_variant_of_its_backend_at_the_largest_size(data):
    machine = data.reference_machine
    cells = chart_data.overview_best(data, machine)
    assert len(cells) == len(OPS) * 5
    for cell in cells:
        snap = data.snapshot(machine, op=cell["op"], mode="warm")
        candidates = [r for r in snap.rows if r["backend"] == cell["backend"] and r["size"] == largest_shape(cell["op"])
                      and r["status"] == "measured"]
        if candidates:
            assert cell["row"]["time_s"] == min(r["time_s"] for r in candidates)
        else:
            assert cell["row"] is None and cell["why"]
    empty = {(c["op"], c["backend"]): c["why"] for c in cells if c["row"] is None}
    assert empty[("mean", "numba")] == "no variant in the catalog"


def test_chart_points_are_the_exported_rows_of_the_current_commit(data):
    machine = data.reference_machine
    points = [p for p in chart_data.op_points(data, "softmax")
              if p["current"] and p["mode"] == "warm" and p["machine"] == machine]
    commit, rows = history.snapshot(export.rows(RESULTS), data.order, machine=machine, op="softmax", mode="warm")
    assert {p["commit"] for p in points} == {commit[:8]}
    by_key = {(r["variant"], r["size"]): r for r in rows}
    assert len(points) == len(by_key)
    for p in points:
        r = by_key[(p["variant"], p["size"])]
        assert p["time_us"] == pytest.approx(r["time_s"] * 1e6)
        assert p["gbps"] == pytest.approx(r["bytes"] / r["time_s"] / 1e9)
        assert p["gbps_low"] <= p["gbps"] <= p["gbps_high"]


def test_roofline_points_sit_under_both_roofs(data):
    rows = chart_data.roofline_points(data, data.reference_machine)
    points = [r for r in rows if r["kind"] == "point"]
    assert {p["variant"] for p in points} >= {"square-torch", "softmax-manual", "gelu-triton", "mean-cuda"}
    roof = max(r["gflops"] for r in rows if r["kind"] == "roof")
    for p in points:
        shape = parse_shape(p["size"])
        assert p["intensity"] == pytest.approx(OPS[p["op"]].flops(shape) / OPS[p["op"]].bytes_for(shape, "float32"))
        assert p["gflops"] < roof
        bandwidth_roof = p["copy_gbps"] * p["intensity"]
        assert p["gflops"] <= 1.1 * bandwidth_roof  # a memory-bound op cannot beat the bandwidth roof by much


def test_regressions_flag_exactly_what_asv_compare_flags(data):
    asv = shutil.which("asv", path=str(Path(sys.executable).parent))
    if asv is None or not (ROOT / ".git").exists():
        pytest.skip("needs asv and the git history")
    machine = data.reference_machine
    commits = [c for c in data.order if any(r["commit"] == c and r["machine"] == machine for r in data.rows)]
    judged = lambda a, b: {r["benchmark"]: r["mark"] for r in compare.compare(  # noqa: E731
        compare.Run(RESULTS, a, machine), compare.Run(RESULTS, b, machine), measured_only=False)
        if r["mark"] in "+-!*"}
    # The newest pair of commits with a change asv can judge (a suite version change is marked x, not judged).
    a, b, ours = next((a, b, judged(a, b)) for a, b in reversed(list(zip(commits, commits[1:]))) if judged(a, b))
    out = subprocess.run([asv, "compare", a[:8], b[:8], "--machine", machine, "--only-changed", "--factor", "1.1"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    theirs = {m.group(2): m.group(1) for m in re.finditer(r"^\|\s*([+\-!*])\s*\|.*\|\s*(benchmarks\.\S+\(.*?\))\s*\|$",
                                                          out.stdout, re.M)}
    assert theirs, out.stdout
    assert ours == theirs


def test_machine_ratios_set_speedup_beside_the_bandwidth_ratio():
    rows = [{"machine": m, "op": "square", "variant": "v", "mode": "warm", "size": "64x64", "dtype": "float32",
             "backend": "torch", "numel": 4096, "time_s": t, "copy_gbps": bw, "commit": c}
            for m, t, bw, c in (("a", 2.0, 3000.0, "x"), ("b", 1.0, 4500.0, "y"))]
    (r,) = compare.machine_ratios(rows, "a", "b")
    assert r["speedup"] == 2.0 and r["bandwidth_ratio"] == 1.5


# --- sources and macros --------------------------------------------------------------------------------------------

def test_every_variant_has_a_source_to_show():
    for v in VARIANTS.values():
        refs = variant_sources(v)
        assert refs and all(r.path.exists() for r in refs), v.name
        for r in refs:
            if r.start:
                text = r.path.read_text().splitlines()[r.start - 1:r.end]
                assert any(v.impl.split(":")[1] in line or "torch_ops" in r.rel for line in text), v.name


def test_sources_find_symbols_and_refuse_missing_ones():
    ref = source("src/kernelscope/backends/cuda/square.cu", "square_vec4_kernel")
    lines = ref.path.read_text().splitlines()[ref.start - 1:ref.end]
    assert "__global__ void square_vec4_kernel" in "\n".join(lines) and lines[-1].strip() == "}"
    ref = source("src/kernelscope/timing/__init__.py", "HeldClock.__call__")
    assert "def __call__" in ref.path.read_text().splitlines()[ref.start - 1]
    assert '--8<-- "src/kernelscope/timing/__init__.py:' in ref.snippet()
    with pytest.raises(SourceNotFound, match="no_such_kernel"):
        source("src/kernelscope/backends/cuda/square.cu", "no_such_kernel")
    with pytest.raises(SourceNotFound, match="does not exist"):
        source("src/kernelscope/moved_away.py")


def test_macros_refuse_wrong_names_and_say_when_a_result_is_missing(data, tmp_path):
    m = Macros(data)
    with pytest.raises(KeyError, match="unknown variant 'square-nope'"):
        m.value("square-nope", "64x64")
    with pytest.raises(KeyError, match="not a benchmark size of square"):
        m.value("square-torch", "3x3")
    table = m.results_table(["square-torch"], sizes=["16384x16384"], modes=["warm", "graph"])
    assert "16384x16384" in table and "Measured on NVIDIA H100" in table
    nothing = Macros(SiteData(tmp_path, ROOT))
    assert nothing.value("square-torch", "64x64") == "*(no result yet)*"
    assert "No results yet" in nothing.results_table(["square-torch"], sizes=["64x64"])


def test_a_page_naming_an_unknown_variant_fails_the_build_with_the_page_and_the_name(data):
    from mkdocs.exceptions import PluginError

    from kernelscope.site.plugin import KernelscopePlugin

    plugin = KernelscopePlugin()
    plugin.macros = Macros(data)
    import jinja2

    plugin.jinja = jinja2.Environment(undefined=jinja2.StrictUndefined)
    page = SimpleNamespace(file=SimpleNamespace(generated_by=None, src_uri="concepts/x.md"))
    assert "µs" in plugin.on_page_markdown('{{ value("square-torch", "16384x16384") }}', page, None, None)
    with pytest.raises(PluginError, match=r"concepts/x\.md.*unknown variant 'square-typo'"):
        plugin.on_page_markdown('{{ value("square-typo", "64x64") }}', page, None, None)
    with pytest.raises(PluginError, match=r"concepts/x\.md.*'no_such_macro' is undefined"):
        plugin.on_page_markdown("{{ no_such_macro() }}", page, None, None)


# --- the whole build -----------------------------------------------------------------------------------------------

def test_site_from_the_committed_results(built_site, data):
    for path in pages.PAGES:
        html = (built_site / path.replace(".md", "").replace("index", "") / "index.html").read_text()
        assert "No results yet" not in html, path
    square = (built_site / "results" / "square" / "index.html").read_text()
    for v in VARIANTS.values():
        if v.op == "square":
            assert v.name in square
    assert "square_vec4_kernel" in square  # kernel sources are included from the .cu file
    stamp = f"commit <code>{data.snapshot(data.reference_machine, op='square', mode='warm').run.short}</code>"
    assert stamp in square
    for vendor in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
        assert (built_site / "assets" / "vendor" / vendor).stat().st_size > 50_000
    for page in built_site.rglob("*.html"):  # nothing the page loads lives off the site's host
        text = page.read_text()
        assert not re.search(r"""(src|href)=["']https?://(?!127\.0\.0\.1)[^"']+\.(js|css|woff2?)""", text), page
        assert "fonts.googleapis" not in text, page
    overview = json.loads((built_site / "data" / "overview.json").read_text())
    assert {c["op"] for c in overview} == set(OPS)


def test_site_builds_without_results_and_says_so(tmp_path):
    empty = tmp_path / "results"
    empty.mkdir()
    site = build(tmp_path / "site", empty)
    for path in ("results/index.html", "results/square/index.html", "results/history/index.html",
                 "results/regressions/index.html", "results/machines/index.html"):
        assert "No results yet" in (site / path).read_text(), path
    assert "no result yet" in (site / "concepts" / "timing" / "index.html").read_text()


def test_two_machines_get_a_switch_and_a_comparison(tmp_path):
    site = build(tmp_path / "site", with_second_machine(tmp_path / "results"))
    overview = (site / "results" / "index.html").read_text()
    assert overview.count("tabbed-labels") >= 1 and SYNTHETIC in overview and "nvidia-h100-80gb-hbm3" in overview
    machines = (site / "results" / "machines" / "index.html").read_text()
    assert "One machine so far" not in machines and "Copy bandwidth ratio" in machines
    ratios = json.loads((site / "data" / f"machines-{SYNTHETIC}.json").read_text())
    assert ratios and all(r["speedup"] == pytest.approx(1 / 0.7) for r in ratios)
    assert all(r["bandwidth_ratio"] == pytest.approx(4300 / 3004) for r in ratios)
