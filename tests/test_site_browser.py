"""The site as a reader meets it: served on 127.0.0.1, opened in headless Chromium.

Each page must render every chart with marks for its data, show a tooltip
when a point is hovered, log no error (nor a Vega warning, which means a chart
lost data), and make no request off 127.0.0.1. Full-page screenshots are kept
in .artifacts/screenshots/ (or $KERNELSCOPE_ARTIFACTS) to be looked at.

Playwright drives Debian's chromium (no browser download); without it the
test is skipped with the reason, except in CI (CI=true), where a missing
browser is a failure: .ci/run installs it.
"""

import functools
import http.server
import json
import os
import shutil
import socketserver
import threading
from pathlib import Path

import pytest

from sitebuild import ROOT

CHROMIUM = os.environ.get("KERNELSCOPE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(os.environ.get("KERNELSCOPE_ARTIFACTS", ROOT / ".artifacts")) / "screenshots"
# Flags for a closed network: without the background-networking ones Chromium dials Google's hosts.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-default-apps"]
PAGES = ["results/", "results/square/", "results/mean/", "results/softmax/", "results/gelu/", "results/roofline/",
         "results/history/", "results/regressions/", "results/machines/", "concepts/timing/", "concepts/fusion/",
         "concepts/coalescing/"]

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI needs chromium for the browser test: .ci/run installs Debian's package")
    pytest.skip("no chromium on PATH (apt-get install chromium); set KERNELSCOPE_CHROMIUM to use another",
                allow_module_level=True)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(built_site):
    httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=built_site))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
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
    yield pg
    context.close()


def _marks(pg, chart) -> int:
    """Data marks (points, bars, cells, lines, areas) drawn in one chart: legend symbols not counted."""
    return chart.evaluate("""el => el.querySelectorAll(
        'svg g.role-mark.mark-symbol > path, svg g.role-mark.mark-rect > path, svg g.role-mark.mark-line > path,'
        + ' svg g.role-mark.mark-area > path').length""")


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
    page.goto(f"{server}/{path}", wait_until="networkidle")
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
    page.goto(f"{server}/results/square/", wait_until="networkidle")
    sweep = page.locator("vegachart").first
    sweep.locator("svg").wait_for()
    points = json.loads((built_site / "data" / "square.json").read_text())
    machine = points[0]["machine"]

    def expected(mode):
        return sum(1 for p in points if p["machine"] == machine and p["mode"] == mode and p["current"]
                   and p["sweep"] and p["gbps"] is not None and p["dtype"] == "float32")

    def drawn():
        return sweep.evaluate("el => el.querySelectorAll('svg g.role-mark.mark-symbol > path').length")

    assert drawn() == expected("warm") > 0
    tooltip = _hover_first_point(page, sweep)
    assert "median time" in tooltip and "99% interval" in tooltip and "commit" in tooltip
    assert "warm" in tooltip
    sweep.locator("input[type=radio][value=graph]").check()
    page.wait_for_function(f"() => document.querySelector('vegachart svg')"
                           f".querySelectorAll('g.role-mark.mark-symbol > path').length === {expected('graph')}")
    assert "graph" in _hover_first_point(page, sweep)
    assert page.problems == [] and page.offhost == []


def test_a_legend_click_isolates_one_series(page, server):
    page.goto(f"{server}/results/gelu/", wait_until="networkidle")
    sweep = page.locator("vegachart").first
    sweep.locator("svg").wait_for()
    opacities = "el => Array.from(el.querySelectorAll('svg g.role-mark.mark-symbol > path')).map(p => p.getAttribute('opacity') || '1')"
    assert set(sweep.evaluate(opacities)) == {"1"}
    sweep.locator("g.role-legend-symbol path, g.role-legend-label text").first.click()
    page.wait_for_timeout(300)
    faded = sweep.evaluate(opacities)
    assert "1" in faded and any(float(o) < 0.5 for o in faded)
