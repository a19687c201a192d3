"""The site as a reader meets it: served on 127.0.0.1, opened in headless Chromium.

The site served is the committed results with the test fixture's profiles
(tests/profile_fixture.py), so the profile and demo pages have content.

Each page must render every chart with marks for its data, show a tooltip
when a point is hovered, log no error (nor a Vega warning, which means a chart
lost data), and make no request off 127.0.0.1. Full-page screenshots are kept
in .artifacts/screenshots/ (or $KERNELSCOPE_ARTIFACTS) to be looked at. And
every page of the site, as it loads at 1400x900 (folded blocks folded), is
at most eight screens long: per-case evidence and tuning tables go behind a
fold or onto a page of their own, with what a reader should take away first.

Playwright drives Debian's chromium (no browser download); without it the
test is skipped with the reason, except in CI (CI=true), where a missing
browser is a failure: .ci/run installs it.
"""

import json
import os
import shutil
from pathlib import Path

import pytest

from kernelscope.site.serving import CHROMIUM_FLAGS as FLAGS, serving

from sitebuild import ROOT, bfloat16_site, profiled_site

CHROMIUM = os.environ.get("KERNELSCOPE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(os.environ.get("KERNELSCOPE_ARTIFACTS", ROOT / ".artifacts")) / "screenshots"
PAGES = ["results/", "results/square/", "results/mean/", "results/softmax/", "results/gelu/", "results/roofline/",
         "results/history/", "results/regressions/", "results/machines/", "results/profiles/",
         "results/profiles/square-torch/", "results/profiles/square-triton-flat1024/",
         "results/profiles/square-cuda-vec4/", "results/demos/", "concepts/timing/", "concepts/fusion/",
         "concepts/coalescing/", "concepts/profilers/"]

# The page budget: a page as it loads, at the reader's 1400x900, is at most this many screens long.
BUDGET_VIEWPORT = {"width": 1400, "height": 900}
BUDGET_SCREENS = 8
BUDGET_TABS = 4  # pages loading at once in the budget test

# One Chromium and one server for the module's tests: under pytest-xdist they run in one test process.
pytestmark = pytest.mark.xdist_group("browser")

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI needs chromium for the browser test: .ci/run installs Debian's package")
    pytest.skip("no chromium on PATH (apt-get install chromium); set KERNELSCOPE_CHROMIUM to use another",
                allow_module_level=True)


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    """The committed results with the fixture's profiles (shared with test_site.py's build)."""
    return profiled_site(tmp_path_factory)[0]


@pytest.fixture(scope="module")
def server(built_site):
    with serving(built_site) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _page(browser, server):
    """A page that records console errors, Vega warnings and any request not to the site's host."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.problems, pg.offhost = [], []

    def on_console(msg):
        if msg.type == "error" or (msg.type == "warning" and "WARN" in msg.text):
            pg.problems.append(f"console {msg.type}: {msg.text}")

    def route(r):
        if r.request.url.startswith(server + "/"):
            r.continue_()
        else:
            pg.offhost.append(r.request.url)
            r.abort()

    pg.on("console", on_console)
    pg.on("pageerror", lambda exc: pg.problems.append(f"page error: {exc}"))
    pg.route("**/*", route)
    return context, pg


@pytest.fixture
def page(browser, server):
    context, pg = _page(browser, server)
    yield pg
    context.close()


MARKS = ("svg g.role-mark.mark-symbol > path, svg g.role-mark.mark-rect > path, svg g.role-mark.mark-line > path, "
         "svg g.role-mark.mark-area > path")


def _marks(pg, chart) -> int:
    """Data marks (points, bars, cells, lines, areas) drawn in one chart: legend symbols not counted. vega-embed
    adds the svg before its marks, so this waits (up to 10 s) for the first one."""
    try:
        pg.wait_for_function("([el, sel]) => el.querySelectorAll(sel).length > 0", arg=[chart.element_handle(), MARKS],
                             timeout=10_000)
    except playwright.TimeoutError:
        return 0
    return chart.evaluate("(el, sel) => el.querySelectorAll(sel).length", MARKS)


def _hover_first_point(pg, chart) -> str:
    target = chart.locator("g.role-mark.mark-symbol > path, g.role-mark.mark-rect > path").first
    target.scroll_into_view_if_needed()
    box = target.bounding_box()
    pg.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    pg.wait_for_selector("#vg-tooltip-element.visible", timeout=5000)
    text = pg.inner_text("#vg-tooltip-element")
    pg.mouse.move(0, 0)
    return text


@pytest.mark.parametrize("path", PAGES)
def test_page_renders_its_charts_offline(page, server, built_site, path):
    page.goto(f"{server}/{path}", wait_until="load")
    charts = page.locator("vegachart")
    for i in range(charts.count()):
        chart = charts.nth(i)
        if not chart.is_visible():  # inside a tab not shown (another machine or mode)
            continue
        chart.locator("svg").wait_for(timeout=10_000)
        assert _marks(page, chart) > 0, f"{path}: chart {i} drew no marks"
    visible = [charts.nth(i) for i in range(charts.count()) if charts.nth(i).is_visible()]
    if visible:
        tooltip = _hover_first_point(page, visible[0])
        assert tooltip.strip(), f"{path}: hovering a point showed an empty tooltip"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / ((path.strip("/").replace("/", "_") or "home") + ".png")), full_page=True)
    assert page.offhost == [], f"{path}: requests left 127.0.0.1: {page.offhost}"
    assert page.problems == [], f"{path}: {page.problems}"


def test_size_sweep_draws_one_point_per_result_and_switches_mode(page, server, built_site):
    page.goto(f"{server}/results/square/", wait_until="load")
    sweep = page.locator("vegachart").first
    sweep.locator("svg").wait_for()
    points = json.loads((built_site / "data" / "square.json").read_text())
    machine = points[0]["machine"]

    def expected(mode):
        return sum(1 for p in points if p["machine"] == machine and p["mode"] == mode and p["current"]
                   and p["sweep"] and p["gbps"] is not None and p["dtype"] == "float32")

    def drawn():
        return sweep.evaluate("el => el.querySelectorAll('svg g.role-mark.mark-symbol > path').length")

    assert expected("warm") > 0
    page.wait_for_function(f"() => document.querySelector('vegachart svg')"
                           f".querySelectorAll('g.role-mark.mark-symbol > path').length === {expected('warm')}")
    assert drawn() == expected("warm")
    tooltip = _hover_first_point(page, sweep)
    assert "median time" in tooltip and "99% interval" in tooltip and "commit" in tooltip
    assert "warm" in tooltip
    sweep.locator("input[type=radio][value=graph]").check()
    page.wait_for_function(f"() => document.querySelector('vegachart svg')"
                           f".querySelectorAll('g.role-mark.mark-symbol > path').length === {expected('graph')}")
    assert "graph" in _hover_first_point(page, sweep)
    assert page.problems == [] and page.offhost == []


def test_a_legend_click_isolates_one_series(page, server):
    page.goto(f"{server}/results/gelu/", wait_until="load")
    sweep = page.locator("vegachart").first
    assert _marks(page, sweep) > 0  # vega-embed adds the svg before its marks
    opacities = "el => Array.from(el.querySelectorAll('svg g.role-mark.mark-symbol > path')).map(p => p.getAttribute('opacity') || '1')"
    assert set(sweep.evaluate(opacities)) == {"1"}
    sweep.locator("g.role-legend-symbol path, g.role-legend-label text").first.click()
    # until the click has faded a point (or 5 s): the assertion below then reads the chart as it settled
    try:
        page.wait_for_function(f"el => ({opacities})(el).some(o => parseFloat(o) < 0.5)", arg=sweep.element_handle(),
                               timeout=5000)
    except playwright.TimeoutError:
        pass
    faded = sweep.evaluate(opacities)
    assert "1" in faded and any(float(o) < 0.5 for o in faded)


def test_demos_chart_marks_the_impossible_numbers_where_the_check_fails(page, server, built_site):
    page.goto(f"{server}/results/demos/", wait_until="load")
    chart = page.locator("vegachart").first
    assert _marks(page, chart) > 0  # vega-embed adds the svg before its marks
    rows = json.loads((built_site / "data" / "demos.json").read_text())
    fills = chart.evaluate("el => Array.from(el.querySelectorAll('svg g.role-mark.mark-symbol > path'))"
                           ".map(p => p.getAttribute('fill'))")
    assert len(fills) == len(rows) > 0
    assert fills.count("#c62828") == sum(not r["passed"] for r in rows) > 0  # red: the output was wrong
    assert fills.count("#2e7d32") == sum(r["passed"] for r in rows) > 0
    assert chart.evaluate("el => el.querySelectorAll('svg g.role-mark.mark-rule > line, "
                          "svg g.role-mark.mark-rule > path').length") >= 1  # the copy bandwidth
    tooltip = _hover_first_point(page, chart)
    assert "reported bandwidth" in tooltip and "of copy bandwidth" in tooltip
    assert page.problems == [] and page.offhost == []


def _colours(pg, selector: str) -> int:
    """How many distinct text colours the highlighter gave the visible code block's tokens."""
    return pg.evaluate("""sel => { const code = document.querySelector(sel);
        return new Set(Array.from(code.querySelectorAll('span')).map(s => getComputedStyle(s).color)).size; }""",
                       selector)


def test_compiled_code_is_highlighted_and_its_tabs_switch(page, server):
    page.goto(f"{server}/results/profiles/square-triton-flat1024/", wait_until="load")
    ptx, sass = page.locator(".language-ptx.highlight code"), page.locator(".language-gas.highlight code")
    assert not ptx.is_visible() and not sass.is_visible()  # long code starts collapsed, SASS in its tab
    page.locator("details:has(.language-ptx) summary").click()
    ptx.wait_for(state="visible")
    assert _colours(page, ".language-ptx.highlight code") >= 4, "PTX is not highlighted"
    page.get_by_text("SASS", exact=True).click()
    page.locator("details:has(.language-gas) summary").click()
    sass.wait_for(state="visible")
    assert not ptx.is_visible()
    assert _colours(page, ".language-gas.highlight code") >= 3, "SASS is not highlighted"
    page.goto(f"{server}/results/profiles/square-cuda-vec4/", wait_until="load")
    page.get_by_text("ptxas report", exact=True).click()
    report = page.locator(".language-text.highlight code", has_text="Used 32 registers")
    assert report.is_visible()  # short: shown open
    assert page.problems == [] and page.offhost == []


@pytest.fixture(scope="module")
def bf16_server(tmp_path_factory):
    # test_site.py's site of a second dtype: the H100's charts, which the switch test reads, as with_bfloat16 made them
    site = bfloat16_site(tmp_path_factory)
    with serving(site) as url:
        yield url, site


def test_the_dtype_switch_redraws_the_sweep_in_bfloat16(browser, bf16_server):
    server, site = bf16_server
    context, pg = _page(browser, server)
    try:
        pg.goto(f"{server}/results/square/", wait_until="load")
        sweep = pg.locator("vegachart").first
        sweep.locator("svg").wait_for()
        points = json.loads((site / "data" / "square.json").read_text())
        machine = "nvidia-h100-80gb-hbm3"

        def expected(dtype):
            return sum(1 for p in points if p["machine"] == machine and p["mode"] == "warm" and p["current"]
                       and p["sweep"] and p["gbps"] is not None and p["dtype"] == dtype)

        assert expected("float32") > expected("bfloat16") > 0

        def drawn(n):  # vega-embed adds the svg before its marks: wait for the count, not for the svg
            pg.wait_for_function(f"() => document.querySelector('vegachart svg')"
                                 f".querySelectorAll('g.role-mark.mark-symbol > path').length === {n}")

        drawn(expected("float32"))
        sweep.locator("select").select_option("bfloat16")
        drawn(expected("bfloat16"))
        assert "bfloat16" in _hover_first_point(pg, sweep)
        assert pg.problems == [] and pg.offhost == []
    finally:
        context.close()


def _every_page(site: Path) -> list[str]:
    """Every page of a built site as served ('' for the home page, 'results/square/', ...), sorted."""
    found = [p.parent.relative_to(site).as_posix() for p in site.rglob("index.html")]
    return sorted("" if p == "." else p + "/" for p in found if not p.startswith(("assets", "search")))


def test_no_page_is_longer_than_eight_screens_as_it_loads(browser, server, built_site):
    """Every page, loaded at 1400x900 with its visible charts drawn and its folded blocks folded: the document's
    height is at most eight screens. A page over it names itself with its length."""
    pages = _every_page(built_site)
    assert len(pages) > len(PAGES)  # every page, the generated and the profile pages included
    context = browser.new_context(viewport=BUDGET_VIEWPORT)
    # A few pages load at once, each in its own tab: one page's wait for its network to go quiet (half a second
    # with no request) is spent loading the others; each is then measured as one page alone would be.
    tabs = [context.new_page() for _ in range(BUDGET_TABS)]
    over = []
    try:
        for start in range(0, len(pages), len(tabs)):
            batch = list(zip(tabs, pages[start:start + len(tabs)]))
            for pg, path in batch:
                pg.goto(f"{server}/{path}", wait_until="commit")
            for pg, path in batch:
                pg.wait_for_load_state("networkidle")
                charts = pg.locator("vegachart")
                for i in range(charts.count()):
                    if charts.nth(i).is_visible():
                        charts.nth(i).locator("svg").wait_for(timeout=10_000)
                height = pg.evaluate("() => document.documentElement.scrollHeight")
                if height > BUDGET_SCREENS * BUDGET_VIEWPORT["height"]:
                    over.append(f"{path or '/'} ({height / BUDGET_VIEWPORT['height']:.1f} screens)")
    finally:
        context.close()
    assert not over, (f"{len(over)} pages longer than {BUDGET_SCREENS} screens of {BUDGET_VIEWPORT['width']}x"
                      f"{BUDGET_VIEWPORT['height']} as they load: {', '.join(over)}; fold per-case evidence and tuning "
                      "tables (??? blocks) or move them to a page of their own, with a short summary first")


def test_the_overview_chooser_answers_from_the_built_answers(page, server, built_site):
    records = json.loads((built_site / "data" / "answers.json").read_text())
    page.goto(f"{server}/results/", wait_until="load")
    chooser = page.locator(".ks-chooser")
    chooser.locator(".ks-chooser-best").wait_for()

    def pick(name, value):
        chooser.locator(f"select[name={name}]").select_option(value)

    want = next(r for r in records if r["op"] == "softmax" and r["mode"] == "host" and r["ties"] and r["next"])
    for name in ("op", "size", "dtype", "machine", "mode"):  # each choice narrows the next one's options
        pick(name, want[name])
    answer = chooser.locator(".ks-chooser-answer").inner_text()
    assert f"Use {want['best']['variant']} {want['best']['time']}" in answer
    assert all(f"{t['variant']} {t['time']} ({t['slower']})" in answer for t in want["ties"])
    assert f"Next, told apart: {want['next']['variant']} {want['next']['time']} ({want['next']['slower']})" in answer
    pick("op", "mean")  # another op offers its own sizes, smallest first
    sizes = chooser.locator("select[name=size] option").all_inner_texts()
    mean = sorted({(r["numel"], r["size"]) for r in records if r["op"] == "mean"})
    assert sizes == [s for _, s in mean]
    assert page.problems == [] and page.offhost == []
