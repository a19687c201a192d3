#!/usr/bin/env python3
"""Every page of a built site as a reader sees it: a full-page screenshot and its length in screens.

    python3 scripts/site_screens.py site/ --out .artifacts/pages          # after `make site`
    python3 scripts/site_screens.py site/ --out DIR --only results/ --json

Serves the built site on 127.0.0.1, opens each page (every index.html under it)
in headless Chromium at 1400x900, waits for its charts, and writes DIR/<page>.png
and DIR/screens.json: per page, its height in 900-pixel screens (collapsed blocks
as they load) and how many charts it drew. Look at the screenshots before you
describe a page. Needs playwright (pip) and chromium (Debian's package, or
KERNELSCOPE_CHROMIUM).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from kernelscope.site.serving import CHROMIUM_FLAGS, serving

WIDTH, HEIGHT = 1400, 900


def pages_of(site: Path) -> list[str]:
    """Every page's path as served ('' for the home page, 'results/square/', ...), sorted."""
    found = [p.parent.relative_to(site).as_posix() for p in site.rglob("index.html")]
    return sorted("" if p == "." else p + "/" for p in found if not p.startswith(("assets", "search")))


def screens(page) -> float:
    """The page's height in screens of the viewport."""
    return round(page.evaluate("() => document.documentElement.scrollHeight") / HEIGHT, 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("site", type=Path, help="a built site folder (mkdocs build writes site/)")
    ap.add_argument("--out", type=Path, default=Path(".artifacts/pages"), help="where the screenshots go")
    ap.add_argument("--only", nargs="*", default=None, help="page path prefixes to take (default: every page)")
    ap.add_argument("--json", action="store_true", help="print the per-page record as JSON")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("KERNELSCOPE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        ap.error("no chromium on PATH (apt-get install chromium, or set KERNELSCOPE_CHROMIUM)")
    if not (args.site / "index.html").exists():
        ap.error(f"{args.site}: no index.html; build the site first (make site)")
    paths = [p for p in pages_of(args.site) if args.only is None or any(p.startswith(o) for o in args.only)]
    args.out.mkdir(parents=True, exist_ok=True)
    records = []
    with serving(args.site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        page = context.new_page()
        for i, path in enumerate(paths, 1):
            page.goto(f"{url}/{path}", wait_until="networkidle")
            charts = page.locator("vegachart")
            drawn = 0
            for j in range(charts.count()):
                if charts.nth(j).is_visible():
                    charts.nth(j).locator("svg").wait_for(timeout=10_000)
                    drawn += 1
            name = (path.strip("/").replace("/", "_") or "home") + ".png"
            page.screenshot(path=str(args.out / name), full_page=True)
            records.append({"page": path, "screens": screens(page), "charts": drawn, "png": name})
            print(f"[{i}/{len(paths)}] {path or '/'}: {records[-1]['screens']} screens, {drawn} charts",
                  file=sys.stderr, flush=True)
        browser.close()
    (args.out / "screens.json").write_text(json.dumps(records, indent=1) + "\n")
    if args.json:
        print(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
