"""The results site: what it computes from results/, and that it builds from any results."""

import gzip
import html as html_lib
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
from kernelscope.profiling import crosscheck
from kernelscope.results import compare, export, history
from kernelscope.site import chart_data, charts, pages, profiles
from kernelscope.site.data import SiteData, largest_shape
from kernelscope.site.macros import Macros
from kernelscope.site.sources import SourceNotFound, source, variant_sources

from profile_fixture import POW_KERNEL
from sitebuild import RESULTS, ROOT, SYNTHETIC, bfloat16_site, build, profiled_site, run_build, with_second_machine

pytestmark = pytest.mark.skipif(not (RESULTS / "benchmarks.json").exists(), reason="no committed results")


@pytest.fixture(scope="module")
def data(committed_site_data):
    return committed_site_data


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


def test_a_run_of_some_variants_does_not_take_the_page_from_the_run_that_measured_them_all():
    def run(commit, *variants):
        return [{"commit": commit, "machine": "m", "op": "softmax", "mode": "warm", "variant": v} for v in variants]

    order = ["full1", "full2", "one", "gone"]
    rows = run("full1", "a", "b", "c") + run("full2", "a", "b", "c") + run("one", "a")
    # `asv run -b` of variant a alone: the page stays on full2, every variant from one commit
    assert history.snapshot(rows, order, machine="m", op="softmax")[0] == "full2"
    assert {r["commit"] for r in history.current(rows, order)} == {"full2"}
    assert history.snapshot(rows, order, variant="a")[0] == "one"  # asked for a alone: its newest run
    # a full run after a variant left the catalog measures one fewer: it is whole among the catalog's variants
    rows += run("gone", "a", "b")
    assert history.snapshot(rows, order, {"a", "b"}, machine="m")[0] == "gone"
    assert history.snapshot(rows, order, machine="m")[0] == "full2"  # counting c, "gone" is a part of full2's run
    # a new variant's first run counts in full
    assert history.snapshot(rows + run("new", "a", "b", "d"), order + ["new"], {"a", "b", "d"})[0] == "new"


def test_overview_cell_is_the_fastest_variant_of_its_backend_at_the_largest_size(data):
    machine = data.reference_machine
    cells = chart_data.overview_best(data, machine)
    assert len(cells) == len(OPS) * 5
    for cell in cells:
        snap = data.snapshot(machine, op=cell["op"], mode="warm")
        candidates = [r for r in snap.rows if r["backend"] == cell["backend"] and r["size"] == largest_shape(cell["op"])
                      and r["status"] == "measured" and r["dtype"] == "float32"]  # the overview compares float32
        if candidates:
            assert cell["row"]["time_s"] == min(r["time_s"] for r in candidates)
        else:
            assert cell["row"] is None and cell["why"]
    for c in cells:  # an empty cell says why: nothing in the catalog, or nothing measured there yet
        if c["row"] is None:
            in_catalog = any(v.op == c["op"] and v.backend == c["backend"] for v in VARIANTS.values())
            assert c["why"] == ("not measured at this size" if in_catalog else "no variant in the catalog")


def test_chart_points_are_the_exported_rows_of_the_current_commit(data):
    machine = data.reference_machine
    points = [p for p in chart_data.op_points(data, "softmax")
              if p["current"] and p["mode"] == "warm" and p["machine"] == machine]
    exported = [r for r in data.rows if r["status"] == export.MEASURED]  # export.rows(RESULTS), read once a run
    commit, rows = history.snapshot(exported, data.order, machine=machine, op="softmax", mode="warm")
    assert {p["commit"] for p in points} == {commit[:8]}
    by_key = {(r["variant"], r["size"], r["dtype"]): r for r in rows}
    assert len(points) == len(by_key)
    for p in points:
        r = by_key[(p["variant"], p["size"], p["dtype"])]
        assert p["time_us"] == pytest.approx(r["time_s"] * 1e6)
        assert p["gbps"] == pytest.approx(r["bytes"] / r["time_s"] / 1e9)
        assert p["gbps_low"] <= p["gbps"] <= (p["gbps_high"] if r["ci_low"] > 0 else float("inf"))
        assert (p["gbps_high"] is None) == (r["ci_low"] <= 0) == (p["ci_low_us"] is None)


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


def test_stamps_name_each_runs_ops_when_a_pages_numbers_span_runs():
    from kernelscope.site.data import Run

    runs = {c: Run("m", c, None, at) for c, at in (("aaaa1111" + "0" * 32, 1000), ("bbbb2222" + "0" * 32, 2000))}
    data = SimpleNamespace(rows=[{"machine": "m", "commit": c} for c in runs], run=lambda machine, c: runs[c])
    # a newer run of part of the suite (square, softmax) beside an older one that still gives mean its numbers
    rows = [{"commit": "bbbb2222", "op": "square"}, {"commit": "aaaa1111", "op": "mean"},
            {"commit": "bbbb2222", "op": "softmax"}]
    lines = pages.stamps(data, "m", rows).splitlines()
    assert len(lines) == 2
    assert "<code>bbbb2222</code>" in lines[0] and lines[0].endswith(": square, softmax.</p>")
    assert "<code>aaaa1111</code>" in lines[1] and lines[1].endswith(": mean.</p>")
    assert pages.stamps(data, "m", rows[:1]) == pages.stamp(runs["bbbb2222" + "0" * 32])  # one run: as before


def test_regressions_flag_exactly_what_asv_compare_flags(data):
    asv = shutil.which("asv", path=str(Path(sys.executable).parent))
    if asv is None or not (ROOT / ".git").exists():
        pytest.skip("needs asv and the git history")
    machine = data.reference_machine
    commits = [c for c in data.order if any(r["commit"] == c and r["machine"] == machine for r in data.rows)]
    env = "syssite-py3.12"  # asv compares one environment at a time; the site merges a commit's environments
    judged = lambda a, b: {r["benchmark"]: r["mark"] for r in compare.compare(  # noqa: E731
        compare.Run(RESULTS, a, machine, env), compare.Run(RESULTS, b, machine, env), measured_only=False)
        if r["mark"] in "+-!*"}
    # The newest pair of commits with a change asv can judge (a suite version change is marked x, not judged).
    a, b, ours = next((a, b, judged(a, b)) for a, b in reversed(list(zip(commits, commits[1:]))) if judged(a, b))
    # Not --only-changed: asv hides the fixed ('*') marks there, and a pair with a fix is judged whole.
    out = subprocess.run([asv, "compare", a[:8], b[:8], "--machine", machine, "-E", "syssite:3.12", "--factor", "1.1"],
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


def test_an_op_package_shows_its_init_then_each_variant_s_modules_and_every_module_somewhere():
    # Triton's and Numba's softmax: a package, a module a kernel family. Each variant shows the package's
    # __init__.py, the module defining its function and the package modules that one imports (and its plan
    # function's); together the op's variants show every file of the package.
    def files(name):
        return [r.rel.rsplit("/", 1)[1] for r in variant_sources(VARIANTS[name])]

    assert files("softmax-triton-row") == ["__init__.py", "lecture.py"]
    assert files("softmax-triton-online") == ["__init__.py", "online.py"]
    tuned = files("softmax-triton-tuned")
    assert tuned[:2] == ["__init__.py", "launch.py"] and tuned[-1] == "plan_of.py" and "plan.py" in tuned
    for backend in ("triton", "numba"):
        package = ROOT / "src" / "kernelscope" / "backends" / backend / "softmax"
        shown = {r.path for v in VARIANTS.values() if v.op == "softmax" and v.backend == backend
                 for r in variant_sources(v)}
        assert shown == set(package.glob("*.py")), backend
        assert all(r.start is None for v in VARIANTS.values() if v.backend == backend for r in variant_sources(v))


def test_sources_find_symbols_and_refuse_missing_ones():
    ref = source("src/kernelscope/backends/cuda/square.cu", "square_vec4_kernel")
    lines = ref.path.read_text().splitlines()[ref.start - 1:ref.end]
    assert "__global__ void square_vec4_kernel" in "\n".join(lines) and lines[-1].strip() == "}"
    ref = source("src/kernelscope/backends/cuda/softmax_common.cuh", "softmax_exp")  # a __device__ function, in a header
    lines = ref.path.read_text().splitlines()[ref.start - 1:ref.end]
    assert lines[0].startswith("//") and "float softmax_exp(float x, float m)" in "\n".join(lines)
    assert lines[-1] == "}" and "softmax_exp2(" in lines[-2]
    ref = source("src/kernelscope/backends/cuda/softmax_common.cuh", "exp_in_place")  # its template line too
    assert ref.path.read_text().splitlines()[ref.start - 1].startswith("//")
    assert "template <typename Exp, int E>" in ref.path.read_text().splitlines()[ref.start - 1:ref.end]
    ref = source("src/kernelscope/backends/numba/vector.py", "load_f32x4_streaming")  # in an if/else: the def
    assert "def load_f32x4_streaming" in "\n".join(ref.path.read_text().splitlines()[ref.start - 1:ref.end])
    ref = source("src/kernelscope/timing/warm.py", "HeldClock.__call__")
    assert "def __call__" in ref.path.read_text().splitlines()[ref.start - 1]
    assert '--8<-- "src/kernelscope/timing/warm.py:' in ref.snippet()
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
    softmax = (built_site / "results" / "softmax" / "index.html").read_text()
    for kernel in ("softmax_warp_kernel", "softmax_exact_kernel", "softmax_loop_kernel", "softmax_ring_kernel"):
        assert kernel in softmax, kernel  # ... and from the headers of its own that it includes
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
    site = build(tmp_path / "site", empty, search_index=True)  # small pages: the one build that indexes them
    assert json.loads((site / "search" / "search_index.json").read_text())["docs"]
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
    # the H100's copy as measured with its newest run (3000-3004 GB/s in its runs so far), not a datasheet's 3350
    assert all(4300 / 3010 <= r["bandwidth_ratio"] <= 4300 / 2990 for r in ratios)


# --- profiles: the artifacts of `kernelscope profile`, from the test fixture -----------------------------------------

@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """(site, profiles folder): the committed results and the fixture's profiles (tests/profile_fixture.py)."""
    return profiled_site(tmp_path_factory)


def _html(site: Path, page: str) -> str:
    return (site / page / "index.html").read_text()


def _specs(html: str) -> list[dict]:
    """The Vega-Lite specs of a built page (mkdocs-charts-plugin leaves them as JSON in <vegachart> elements)."""
    return [json.loads(html_lib.unescape(s)) for s in re.findall(r"<vegachart[^>]*>(.*?)</vegachart>", html, re.S)]


def _code(html: str) -> str:
    """The text of a highlighted code block: the highlighter's spans dropped, nothing added."""
    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


def _text(html: str) -> str:
    """What a reader sees of a page: tags dropped, entities read, whitespace collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_hints_are_laid_out_as_nsight_compute_prints_them():
    from kernelscope.profiling.artifacts import Hint

    text = gzip.decompress((ROOT / "tests" / "fixtures" / "ncu" / "h100-details.txt.gz").read_bytes()).decode()
    hint = Hint("Occupancy", "AchievedOccupancy", "OPT", "The difference between calculated theoretical (100.0%) "
                "and measured achieved occupancy (80.6%) can be the result of warp scheduling overheads.", "local",
                19.4)
    first, second, *_ = profiles.hint_text(hint).splitlines()
    assert first.strip() in {line.strip() for line in text.splitlines()}  # "OPT   Est. Local Speedup: 19.4%"
    assert first == "OPT   Est. Local Speedup: 19.4%" and second.startswith("      The difference between")
    info = profiles.hint_text(Hint("SOL", "SOLBottleneck", "INF", "This workload is utilizing greater than 80.0%"))
    assert info == "INF   This workload is utilizing greater than 80.0%"
    assert profiles.short_kernel(POW_KERNEL) == "vectorized_elementwise_kernel"
    assert profiles.short_kernel("square_flat_kernel") == "square_flat_kernel"
    assert profiles.short_kernel("kernelscope::backends::numba::square::square_coalesced_kernel[abi:v1,cw51]"
                                 "(Array<float, (int)2>)") == "square_coalesced_kernel"
    assert profiles.fmt_dims((16384, 1, 1)) == "16,384" and profiles.fmt_dims((256, 256, 1)) == "256 x 256"


def test_variant_page_shows_the_fixtures_ncu_numbers_hints_and_trace(profiled):
    site, folder = profiled
    page = _text(_html(site, "results/profiles/square-torch"))
    for expected in ("41.86 µs", "80.92%", "4.94%", "80.6%", "100%", "16,384", "7.76", "1,970 MHz",
                     "OPT Est. Local Speedup: 19.4%", "AchievedOccupancy", "INF This workload is utilizing",
                     "Profiled on NVIDIA H100 80GB HBM3", "commit 76c6eb7e", "4096x4096", "Perfetto",
                     "Open trace file", "chrome://tracing", "PyTorch eager launches ATen's precompiled kernels"):
        assert expected in page, expected
    html = _html(site, "results/profiles/square-torch")
    assert 'href="https://ui.perfetto.dev"' in html
    machine = "nvidia-h100-80gb-hbm3"
    # the trace is shipped with the site, byte for byte, and the page links it for download
    shipped = site / "profiles" / machine / "square-torch" / "trace.json.gz"
    assert shipped.read_bytes() == (folder / machine / "square-torch" / "trace.json.gz").read_bytes()
    assert json.loads(gzip.decompress(shipped.read_bytes()))["traceEvents"]
    link = re.search(r'<a (?:download="[^"]+" )?href="([^"]+trace\.json\.gz)"[^>]*>', html)
    assert link and "download=" in link.group(0), "no download link to the trace"
    href = link.group(1)
    assert (site / "results" / "profiles" / "square-torch" / href).resolve() == shipped.resolve()
    assert (site / "profiles" / machine / "square-torch" / "ncu.txt.gz").exists()
    # the profiler's table as printed
    assert "Self CUDA time total" in page and "aten::square" in page


def test_compiled_code_is_highlighted_in_tabs_and_long_code_is_collapsed(profiled):
    site, _ = profiled
    triton = _html(site, "results/profiles/square-triton-flat1024")
    assert 'class="language-ptx highlight"' in triton and 'class="language-gas highlight"' in triton  # SASS
    for tab in ("PTX", "SASS"):
        assert re.search(rf"<label[^>]*>{tab}</label>", triton), tab
    ptx = triton.split('class="language-ptx highlight"')[1].split("</code>")[0]
    assert ptx.count("<span class=") > 100 and ".visible .entry square_flat_kernel(" in _code(ptx)
    assert "@%p1 ld.global.b32 { %r1 }, [ %rd1 + 0 ];" in _code(ptx)  # highlighted, not mangled
    assert "226 lines" in ptx
    sass = triton.split('class="language-gas highlight"')[1].split("</code>")[0]
    assert "@!P6 LDG.E R6, desc[UR4][R8.64] ;" in _code(sass)
    assert re.search(r'<span class="c[m1]?">/\*0160\*/</span>', sass)  # cuobjdump's offsets read as comments
    cuda = _html(site, "results/profiles/square-cuda-vec4")
    assert re.search(r"<label[^>]*>ptxas report</label>", cuda) and "Used 32 registers" in _text(cuda)
    long_ptx = cuda.split("<details")[1].split("</details>")[0]  # 295 lines of PTX: collapsed
    assert "language-ptx" in long_ptx and "295 lines" in long_ptx
    compiled = _html(site, "results/profiles/gelu-compile")
    assert "Inductor" in compiled and 'class="language-python highlight"' in compiled
    assert "triton_poi_fused_add_mul_pow_tanh_0" in _text(compiled)
    skipped = _text(_html(site, "results/profiles/softmax-torch"))
    assert "ncu not found on PATH" in skipped


def test_op_page_links_each_profiled_variant_and_marks_lecture_and_tuned(profiled, data):
    site, _ = profiled
    html = _html(site, "results/square")
    assert 'id="profiles"' in html
    for variant in ("square-torch", "square-triton-flat1024", "square-cuda-vec4"):
        assert f'href="../profiles/{variant}/"' in html, variant
        assert (site / "results" / "profiles" / variant / "index.html").exists()
    section = _text(html.split('id="profiles"')[1].split('id="variants"')[0])
    assert "41.86 µs" in section and "756.20 µs" in section and "not profiled" in section
    variants = html.split('id="variants"')[1].split('id="kernel-sources"')[0]
    kinds = {}
    for row in re.findall(r"<tr>(.*?)</tr>", variants, re.S):
        cells = [_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells:
            kinds[cells[0]] = cells[2]
    assert set(kinds) == {v.name for v in VARIANTS.values() if v.op == "square"}
    for name, kind in kinds.items():
        v = VARIANTS[name]
        assert kind == ("lecture" if v.lecture else "tuned" if getattr(v, "tuned", False) else ""), name
    numbers = html.split('id="numbers"')[1].split('id="first-call')[0]  # badges beside the names in the tables
    measured = {r["variant"] for r in data.rows if r["op"] == "square"}
    for v in VARIANTS.values():
        if v.name in measured and (v.lecture or getattr(v, "tuned", False)):
            kind = "lecture" if v.lecture else "tuned"
            badge = rf'<code>{re.escape(v.name)}</code>\s*<span class="ks-kind ks-kind-{kind}"'
            assert re.search(badge, numbers), v.name


def test_profiles_overview_lists_every_kernel_and_the_crosscheck(profiled):
    site, _ = profiled
    page = _text(_html(site, "results/profiles"))
    assert "partial_sums_kernel" in page and "finish_mean_kernel" in page  # both launches of one call
    assert "345.68 µs" in page  # their sum, set against the warm median
    cases = crosscheck.rows(profiled[1], RESULTS, ROOT)  # the table `kernelscope` prints, on the page
    judged = [c for c in cases if c["judged"]]
    assert len(judged) == 2 and f"{sum(c['within'] for c in judged)} of {len(judged)}" in page
    for c in cases:
        if c["diff_pct"] is not None:
            assert f"{c['diff_pct']:+.2f}%" in page, c["variant"]
    vec4 = next(c for c in cases if c["variant"] == "square-cuda-vec4")  # its suite time: the newest committed run
    assert "756.20 µs" in page and f"{vec4['suite_us']:.2f} µs" in page
    assert ("✓ within 3%" if vec4["within"] else "✗ outside") in page
    assert "under 100 us: not judged" in page


def test_demos_page_shows_the_measured_demonstrations(profiled):
    site, folder = profiled
    page = _text(_html(site, "results/demos"))
    for expected in ("5.83 µs", "717.69 µs", "713.14 µs", "122x", "aten::square → aten::pow", "aten::mul",
                     "MulFunctor", "matches the reference up to 1,024 columns", "wrong from 2,048 columns",
                     "use_device=\"cuda\"", "Self CUDA time total"):
        assert expected in page, expected
    points = json.loads((site / "data" / "demos.json").read_text())
    assert [p["cols"] for p in points] == [256, 512, 1024, 2048, 4096, 8192, 16384]
    assert all(p["passed"] == (p["reported_gbps"] <= p["copy_gbps"]) for p in points)  # the fixture's story
    (spec,) = _specs(_html(site, "results/demos"))
    assert spec["data"]["url"].endswith("data/demos.json") and spec["layer"][1]["encoding"]["color"]["field"] == "check"
    profilers = _text(_html(site, "concepts/profilers"))
    assert "a host clock without synchronizing read 5.83 µs per call" in profilers
    assert "no profiles yet" not in profilers


def test_site_without_profiles_says_so_and_gives_the_command(tmp_path_factory):
    site = bfloat16_site(tmp_path_factory)  # built with no profiles folder
    for page in ("results/profiles", "results/demos", "results/square"):
        text = _text(_html(site, page))
        assert "No profiles yet" in text and "kernelscope profile --ncu --demos" in text, page
    assert not (site / "profiles").exists()
    assert "no profiles yet" in _text(_html(site, "concepts/profilers"))


def test_a_broken_profile_fails_the_build_naming_the_file(tmp_path):
    from profile_fixture import write

    folder = write(tmp_path / "profiles")
    bad = folder / "nvidia-h100-80gb-hbm3" / "square-torch" / "profile.json"
    bad.write_text("{not json")
    proc = run_build(tmp_path / "site", RESULTS, folder)
    assert proc.returncode != 0 and "square-torch/profile.json" in proc.stderr


# --- a second dtype ------------------------------------------------------------------------------------------------

def test_a_second_dtype_gets_its_own_tables_and_a_switch_only_where_it_was_timed(tmp_path_factory):
    # the H200's runs without their bfloat16 classes: a machine timed in float32 alone
    site = bfloat16_site(tmp_path_factory)
    square = _html(site, "results/square")
    text = _text(square)
    f32, bf16 = text.index("Median time [99% interval] (float32)"), text.index("Median time [99% interval] (bfloat16)")
    assert f32 < bf16  # float32 first
    switches = {s["title"]["text"]: next(p for p in s["params"] if p["name"] == "dtype") for s in _specs(square)}
    h100 = next(p for title, p in switches.items() if "nvidia-h100" in title)
    assert h100["value"] == "float32" and h100["bind"]["options"] == ["float32", "bfloat16"]
    assert all("bind" not in p for title, p in switches.items() if "nvidia-h200" in title)  # timed in float32 only
    mean = _html(site, "results/mean")
    mean_dtypes = [p for s in _specs(mean) for p in s.get("params", []) if p["name"] == "dtype"]
    assert "(bfloat16)" not in mean and mean_dtypes and all("bind" not in p for p in mean_dtypes)
    points = json.loads((site / "data" / "square.json").read_text())
    bf = [p for p in points if p["dtype"] == "bfloat16" and p["variant"] == "square-torch"
          and p["size"] == "16384x16384" and p["mode"] == "warm" and p["current"]]
    assert bf and bf[0]["gbps"] == pytest.approx(OPS["square"].bytes_for((16384, 16384), "bfloat16")
                                                 / (bf[0]["time_us"] * 1e-6) / 1e9)
    roofline = json.loads((site / "data" / "roofline.json").read_text())
    assert {p["dtype"] for p in roofline if p["kind"] == "point"} == {"float32"}


def test_roofline_points_carry_their_kind_and_the_chart_shapes_by_it(data):
    points = [p for p in chart_data.roofline_points(data, data.reference_machine) if p["kind"] == "point"]
    for p in points:
        v = VARIANTS[p["variant"]]
        assert p["variant_kind"] == ("lecture" if v.lecture else "tuned" if getattr(v, "tuned", False) else "other")
    spec = charts.roofline("data/roofline.json", [data.reference_machine], "t")
    shapes = [layer["encoding"]["shape"] for layer in spec["layer"] if "shape" in layer.get("encoding", {})]
    assert shapes and shapes[0]["field"] == "variant_kind"


def test_launch_bound_results_are_marked_with_where_their_interval_comes_from(data, built_site):
    points = chart_data.op_points(data, "square")
    marked = [p for p in points if p["launch_bound"]]
    # warm and cold: under 20 us or sampled per process; host mode (a host time says nothing of the GPU's):
    # only when sampled per process
    assert marked and all(p["mode"] in ("warm", "cold") and (p["time_us"] < 20 or p["samples"] <= 3)
                          or p["mode"] == "host" and p["samples"] <= 3 for p in marked)
    assert not any(p["launch_bound"] for p in points if p["mode"] == "graph"
                   or (p["time_us"] >= 20 and p["samples"] > 3) or (p["mode"] == "host" and p["samples"] > 3))
    assert any(p["mode"] == "host" for p in marked)
    per_process = [p for p in marked if p["samples"] <= 3]
    one_process = [p for p in marked if p["samples"] > 3]  # stored before the per-process rule
    assert per_process and all(p["interval_note"] == f"launch-bound: {p['samples']} processes, one value each"
                                 for p in per_process)
    assert one_process and all("too narrow" in p["interval_note"] for p in one_process)
    # The sweep draws them hollow, and the op page's tables mark them and say why.
    spec = charts.size_sweep("data/square.json", ["warm"], ["m"], ["float32"], "t")
    point_layer = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
    assert point_layer["encoding"]["fillOpacity"]["condition"] == {"test": "datum.launch_bound", "value": 0}
    square = (built_site / "results" / "square" / "index.html").read_text()
    assert square.count(pages.LAUNCH_BOUND_MARK) >= len([p for p in per_process if p["current"] and p["mode"] == "warm"
                                                         and p["dtype"] == "float32"])
    from kernelscope.timing.processes import LAUNCH_BOUND_PROCESSES

    assert f"one value from each of {LAUNCH_BOUND_PROCESSES} processes" in html_lib.unescape(square)


def test_regressions_mark_launch_bound_flags_and_discount_one_process_intervals(data, built_site):
    from kernelscope.timing.processes import launch_bound_result

    page = html_lib.unescape(re.sub("<[^>]+>", "", (built_site / "results" / "regressions" / "index.html").read_text()))
    machine = data.reference_machine
    a, b = history.last_two(data.rows, data.order, machine=machine)
    rows = compare.compare(compare.Run(RESULTS, a, machine), compare.Run(RESULTS, b, machine), measured_only=False)
    bound = [r for r in rows if r["mark"] in "+-" and launch_bound_result(
        compare.parse_benchmark(r["benchmark"])["mode"], r["b"], "gpu")]
    for r in bound:
        assert ", ".join(compare.parse_benchmark(r["benchmark"])["params"]) + " " + pages.LAUNCH_BOUND_MARK in page
    older = {(r["benchmark"], r["variant"], r["size"], r["dtype"]): r["samples"] for r in data.rows
             if r["machine"] == machine and r["commit"] == a}
    one_process = [r for r in bound if (older.get((r["benchmark"].partition("(")[0],
                                                   *compare.parse_benchmark(r["benchmark"])["params"])) or 0) > 3]
    assert ("whose interval is too narrow to judge by" in page) == bool(one_process)


def test_regressions_count_no_launch_bound_flag_between_two_boxes(data, built_site):
    page = html_lib.unescape(re.sub("<[^>]+>", "", (built_site / "results" / "regressions" / "index.html").read_text()))
    for machine in data.machines:
        a, b = history.last_two(data.rows, data.order, machine=machine)
        rows = compare.compare(compare.Run(RESULTS, a, machine), compare.Run(RESULTS, b, machine), measured_only=False)
        hosts = [{r["host"] for r in data.rows if r["machine"] == machine and r["commit"] == c and r["host"]}
                 for c in (a, b)]
        if len(hosts[0]) == 1 and hosts[0] == hosts[1] and not any(h.startswith("unrecorded-") for h in hosts[0]):
            continue  # one box ran both: everything is judged
        bound = [r for r in rows if r["mark"] in "+-" and pages._launch_bound(r)]
        counted = [r for r in rows if r["mark"] in "+-" and not pages._launch_bound(r)]
        section = page.partition(f"From {a[:8]}")[2].partition("The whole comparison")[0]
        assert f"{sum(r['mark'] == '+' for r in counted)} slower" in section, section
        assert (f"{len(bound)} launch-bound case" in section and "apart by what two boxes read" in section) == bool(bound)


def test_regressions_mark_flags_whose_samples_mostly_read_a_low_clock(data, built_site):
    from kernelscope.results.export import mostly_low_clock

    page = html_lib.unescape(re.sub("<[^>]+>", "", (built_site / "results" / "regressions" / "index.html").read_text()))
    machine = data.reference_machine
    a, b = history.last_two(data.rows, data.order, machine=machine)
    rows = compare.compare(compare.Run(RESULTS, a, machine), compare.Run(RESULTS, b, machine), measured_only=False)
    low = {(r["commit"], r["benchmark"], r["variant"], r["size"], r["dtype"]) for r in data.rows
           if r["machine"] == machine and mostly_low_clock(r)}
    marked = 0
    for r in (r for r in rows if r["mark"] in "+-"):
        params = compare.parse_benchmark(r["benchmark"])["params"]
        is_low = any((c, r["benchmark"].partition("(")[0], *params) in low for c in (a, b))
        cell = ", ".join(params)
        assert (f"{cell} {pages.LOW_CLOCK_MARK}" in page or f"{cell} {pages.LAUNCH_BOUND_MARK} {pages.LOW_CLOCK_MARK}"
                in page) == is_low, r["benchmark"]
        marked += is_low
    assert (f"{pages.LOW_CLOCK_MARK} {marked} of these flags" in page) == bool(marked)


def test_regressions_mark_the_flags_of_torch_compile_variants(data, built_site):
    # Inductor's compile-time autotuning may choose another launch configuration in another run (softmax-compile
    # at 64x64: XBLOCK 8 or 32): each flag of a torch.compile variant carries the mark, and the note says why
    page = html_lib.unescape(re.sub("<[^>]+>", "", (built_site / "results" / "regressions" / "index.html").read_text()))
    section = page.partition(data.reference_machine)[2]
    machine = data.reference_machine
    a, b = history.last_two(data.rows, data.order, machine=machine)
    rows = compare.compare(compare.Run(RESULTS, a, machine), compare.Run(RESULTS, b, machine), measured_only=False)
    marked = 0
    for r in (r for r in rows if r["mark"] in "+-"):
        params = compare.parse_benchmark(r["benchmark"])["params"]
        compiled = bool(params) and params[0] in VARIANTS and VARIANTS[params[0]].backend == "torch-compile"
        row = next(line for line in section.splitlines() if line.strip().startswith(", ".join(params)))
        marks = row.strip()[len(", ".join(params)):].split()  # the row's marks, the box mark among them
        assert (pages.COMPILE_MARK in marks) == compiled, (r["benchmark"], row)
        marked += compiled
    assert (f"{pages.COMPILE_MARK} {marked} of these flags are of a torch.compile variant" in section) == bool(marked)


def test_mostly_low_clock_needs_more_than_half_the_samples():
    from kernelscope.results.export import mostly_low_clock

    assert mostly_low_clock({"throttled": 16, "samples": 30}) and not mostly_low_clock({"throttled": 15, "samples": 30})
    assert not mostly_low_clock({"throttled": None, "samples": 30}) and not mostly_low_clock({"throttled": 3})


def test_an_interval_below_zero_reads_one_sided():
    # asv's 99% interval of three process values, one 5x the others (H100, e972512d, gelu-torch 64x64 warm)
    from kernelscope.site.data import fmt_ci

    assert fmt_ci({"ci_low": -1.7215e-05, "ci_high": 2.7655e-05}) == "under 27.7 µs"
    assert fmt_ci({"ci_low": 2.2e-06, "ci_high": 2.6e-06}) == "[2.2 µs, 2.6 µs]"


def test_op_pages_show_where_the_time_goes_host_warm_and_graph_for_one_variant(data, built_site):
    spec = charts.regimes("data/square.json", ["square-torch", "square-numba-flat"], ["m"], ["float32"], "t")
    variant = next(p for p in spec["params"] if p["name"] == "variant")
    assert variant["value"] == "square-torch" and variant["bind"]["options"] == ["square-torch", "square-numba-flat"]
    assert "datum.variant === variant" in spec["transform"][0]["filter"]
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == ["host", "warm", "graph"]
    assert spec["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    page = (built_site / "results" / "square" / "index.html").read_text()
    assert "Where the time goes" in page and "launch-bound on the host" in page
    # the chart offers exactly the variants with host-mode results on the machine it shows, in catalog order
    machine = data.reference_machine
    timed = {r["variant"] for r in data.rows if r["machine"] == machine and r["op"] == "square"
             and r["mode"] == "host" and r["status"] == "measured"}
    at = page.index('"name": "variant "')
    offered = json.loads(page[page.rindex('"options": ', 0, at) + len('"options": '):at].rstrip().rstrip(","))
    assert offered and set(offered) == timed and offered == [v for v in VARIANTS if v in timed]


def _history_row(commit, time_s, variant="gelu-cuda-vec4", version="3", size="16384x16384"):
    return {"machine": "m", "commit": commit, "variant": variant, "mode": "warm", "size": size,
            "dtype": "float32", "time_s": time_s, "version": version}


def test_history_steps_are_moves_past_a_reruns_tolerance_at_the_newest_version():
    rows = [_history_row("c0", 500e-6, version="2"), _history_row("c1", 770e-6), _history_row("c2", 765e-6),
            _history_row("c3", 720e-6), _history_row("c4", 721e-6), _history_row("c3", 100e-6, variant="gelu-torch")]
    found = history.steps(rows, ["c0", "c1", "c2", "c3", "c4"], machine="m", variant="gelu-cuda-vec4", mode="warm",
                          size="16384x16384", dtype="float32")
    assert [s["commit"] for s in found] == ["c1", "c2", "c3", "c4"]  # c0 measured another version
    assert [s["ratio"] is not None for s in found] == [False, False, True, False]
    assert found[2]["ratio"] == pytest.approx(720 / 765)


def test_the_history_page_tells_which_commits_moved_the_tuned_variants():
    size = largest_shape("gelu")
    rows = [_history_row("c1", 770e-6, size=size), _history_row("c2", 720e-6, size=size),
            _history_row("c1", 713e-6, variant="gelu-torch", size=size),
            _history_row("c2", 650e-6, variant="gelu-torch", size=size)]  # a lecture variant: not in the story
    data = SimpleNamespace(rows=rows, order=["c1", "c2"], subjects={"c2": "one lap of tiles"},
                           run=lambda machine, commit: SimpleNamespace(date=1764547200000))  # 2025-12-01
    story = pages.tuning_story(data, "m", "gelu")
    assert "`gelu-cuda-vec4`" in story and "gelu-torch" not in story
    assert "770 µs at `c1`" in story and "720 µs at `c2`" in story and "-6.5%" in story
    assert "`c2` 1.07x" in story and "- `c2` (2025-12-01): one lap of tiles" in story  # 770 µs before: a speedup
    assert "No tuned gelu variant" in pages.tuning_story(data, "other-machine", "gelu")
