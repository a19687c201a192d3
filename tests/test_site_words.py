"""The built site says nothing internal: no issue numbers, no words of how the work was organized.

Every page's visible text (its HTML without tags, scripts and styles; the search index is not read) is checked for
an issue reference (``#`` and digits in prose: a colour or an anchor sits inside a tag or a style, not in the
text) and for the words of the work's process rather than of kernelscope: session, lease, the device tool, the
carry. Evidence folders (``results-proofs/<question>/``) may be named where a page points at what they hold;
``results-proofs`` as the subject of a commit line ("results-proofs: ...") may not.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import pytest

from kernelscope.catalog import OPS
from kernelscope.site import pages
from kernelscope.site.data import clean_subject, fmt_ci, short_subject
from kernelscope.site.notes import over_copy_note

from sitebuild import RESULTS, profiled_site

pytestmark = pytest.mark.skipif(not (RESULTS / "benchmarks.json").exists(), reason="no committed results")

HIDDEN = re.compile(r"<(script|style|template)\b.*?</\1\s*>", re.S | re.I)
TAG = re.compile(r"<[^>]+>")
FORBIDDEN = {
    "an issue reference": re.compile(r"(?:^|(?<=[\s(\[]))#\d+\b"),  # not {lambda()#1}, "#888", href="#12"
    "session": re.compile(r"\bsessions?\b", re.I),
    "lease": re.compile(r"\bleas(?:e|es|ed)\b", re.I),
    "the device tool": re.compile(r"\bdevice tool\b", re.I),
    "the carry": re.compile(r"\bcarry-repo\b|\b(?:the|a|its) carry\b|\bcarry past\b", re.I),
    "results-proofs as a commit subject": re.compile(r"\bresults-proofs(?: README)?:"),
}


def visible_text(page: str) -> str:
    """A page's text as a reader sees it: scripts, styles and tags taken out, entities read."""
    return html_lib.unescape(TAG.sub(" ", HIDDEN.sub(" ", page)))


def offences(site: Path) -> list[str]:
    found = []
    for path in sorted(site.rglob("*.html")):
        if "search" in path.relative_to(site).parts:
            continue
        text = re.sub(r"\s+", " ", visible_text(path.read_text(encoding="utf-8")))
        for what, pattern in FORBIDDEN.items():
            for m in pattern.finditer(text):
                snippet = text[max(0, m.start() - 60):m.end() + 60]
                found.append(f"{path.relative_to(site)}: {what}: …{snippet}…")
    return found


def test_visible_text_has_no_issue_numbers_or_process_words(tmp_path_factory):
    site, _ = profiled_site(tmp_path_factory)
    found = offences(site)
    assert not found, f"{len(found)} internal words on the built site:\n" + "\n".join(found[:60])


def test_the_check_catches_what_it_should_and_only_that():
    page = ('<html><style>.a{color:#333}</style><body><a href="#12">x</a><p>colour <code>#fff</code></p>'
            '<script>var s = "session #4";</script><p>Against issue #15\'s target; one session, two leases; '
            "results-proofs: m3; past the device tool's limit; pushed the carry</p>"
            '<p>see <a href="x">results-proofs/softmax-floors/</a>; the grids carry ring1e</p></body></html>')
    text = re.sub(r"\s+", " ", visible_text(page))
    hits = {what for what, pattern in FORBIDDEN.items() if pattern.search(text)}
    assert hits == set(FORBIDDEN)
    clean = ('<style>.a{color:#333}</style><a href="#12">x</a><p>see results-proofs/softmax-floors/ '
             "(evidence); the grids carry ring1e; step 3</p>")
    assert not [what for what, pattern in FORBIDDEN.items() if pattern.search(visible_text(clean))]


def test_commit_subjects_lose_issue_numbers_and_process_lines_read_as_their_results():
    summary = lambda: "Results for 95 cases of square"  # noqa: E731
    assert clean_subject("Launch-bound cases sampled per process (#13 item 3)") == "Launch-bound cases sampled per process"
    assert clean_subject("tune_numba times the new candidates (#9)") == "tune_numba times the new candidates"
    assert clean_subject("#15: a fourth H100 box reads 87.0%") == "A fourth H100 box reads 87.0%"
    assert clean_subject("bench.sh: a step for the GPU tests") == "bench.sh: a step for the GPU tests"
    for internal in ("results-proofs: session 17 m3 (H100, b971f6a)", "the H200 lease that measured the candidates",
                     "a bundle pushed the carry past the device tool's 64 MiB"):
        assert clean_subject(internal, summary) == "Results for 95 cases of square"
    assert short_subject("word " * 40, 20) == "word word word word…"


def test_no_interval_reads_below_zero():
    row = {"time_s": 2e-6, "ci_low": -1e-6, "ci_high": 9e-6}
    assert pages.fmt_interval(row) == "[under 9]" and fmt_ci(row) == "under 9 µs"
    row = {"time_s": 2e-6, "ci_low": 1.5e-6, "ci_high": 2.5e-6}
    assert pages.fmt_interval(row) == "[1.5–2.5]" and fmt_ci(row) == "[1.5 µs, 2.5 µs]"


def test_a_reading_over_the_copy_is_explained_only_where_there_is_one():
    assert over_copy_note([{"pct_of_peak": 99.0}, {"pct_of_peak": None}, {"pct_of_peak": 100.3}]) == ""  # reads 100%
    note = over_copy_note([{"pct_of_peak": 99.0}, {"pct_of_peak": 103.2}])
    assert "103%" in note and "L2" in note and "method.md#percent-of-the-measured-copy-bandwidth" in note


def test_every_commit_a_chart_links_to_has_its_anchor_and_one_line(tmp_path_factory):
    site, _ = profiled_site(tmp_path_factory)
    page = (site / "results" / "commits" / "index.html").read_text(encoding="utf-8")
    linked = {p["href"].rpartition("#")[2] for f in (site / "data").glob("*.json") if f.stem in OPS
              for p in json.loads(f.read_text()) if "href" in p}
    assert linked and all(f'id="{c}"' in page for c in linked), sorted(c for c in linked if f'id="{c}"' not in page)
    assert page.count("<tr>") <= 2 + len(linked) * 2  # a table row a run, not a section a commit


if __name__ == "__main__":  # python tests/test_site_words.py SITE: the same check on a site built elsewhere
    import sys

    print("\n".join(offences(Path(sys.argv[1]))) or "clean")
