"""The built pages read cleanly: no progress bars, warnings or raw MyST; MathJax loaded once.

These tests read an existing HTML build: `.ci/run` runs them after `make book` with
`HOWMANY_HTML=_build/html`; without that variable they are skipped.
"""

import os
import re
from pathlib import Path

import pytest

HTML = Path(os.environ["HOWMANY_HTML"]) if os.environ.get("HOWMANY_HTML") else None
pytestmark = pytest.mark.skipif(HTML is None, reason="set HOWMANY_HTML=_build/html after a build")
SCRIPT = re.compile(r"<script\b[^>]*\bsrc=\"(?P<src>[^\"]+)\"", re.I)
# Leftovers of a lab notebook a reader must not see.
LEFTOVERS = ("it/s]", "s/it]", "TqdmWarning", "{glue:", "{glue}", 'class="output stderr"',
             "site-packages/", "ipykernel_launcher")  # the last two: local paths


def _pages() -> list[Path]:
    pages = sorted(p for p in HTML.rglob("*.html")
                   if "_static" not in p.parts and "_sources" not in p.parts)
    assert pages, f"no HTML pages under {HTML}"
    return pages


def test_build_holds_every_chapter():
    assert (HTML / "index.html").exists() and (HTML / "book").is_dir()


@pytest.mark.parametrize("needle", LEFTOVERS)
def test_no_page_shows_build_leftovers(needle):
    bad = [str(p.relative_to(HTML)) for p in _pages() if needle in p.read_text(encoding="utf-8")]
    assert not bad, f"{needle!r} appears in {bad}"


def test_no_page_shows_a_progress_meter():
    """tqdm's meter, whatever its unit: ``| 3/50 [00:01<00:10, 4.1tok/s]``."""
    meter = re.compile(r"\d+/\d+ \[\d+:\d\d<")
    bad = [str(p.relative_to(HTML)) for p in _pages() if meter.search(p.read_text("utf-8"))]
    assert not bad, f"a progress meter appears in {bad}"


def test_mathjax_is_requested_once_per_page():
    for page in _pages():
        html = page.read_text(encoding="utf-8")
        srcs = [m["src"] for m in SCRIPT.finditer(html)]
        mathjax = [s for s in srcs if re.search(r"tex-(chtml|mml|svg)", s)]
        vendored = [s for s in srcs if "_static/mathjax/" in s]
        assert len(mathjax) <= 1, f"{page.name} loads MathJax {len(mathjax)} times: {mathjax}"
        assert vendored == [s for s in mathjax if "_static/mathjax/" in s], (
            f"{page.name} loads vendored MathJax parts as scripts: {vendored}")
        if 'class="math' in html:
            assert len(mathjax) == 1, f"{page.name} has math but does not load MathJax"
        for src in vendored:  # a local copy must exist where the page looks for it
            assert (page.parent / src.split("?")[0]).resolve().exists(), src


_NOT_PROSE = re.compile(r"<(script|style|pre|code)\b.*?</\1\s*>|\\\(.*?\\\)|\\\[.*?\\\]|\$\$.*?\$\$",
                        re.S | re.I)


def test_no_page_breaks_a_number_from_its_percent_sign():
    """"18 %" is bound by a no-break space (``howmany.typography``), in prose and in tables."""
    loose = re.compile(r"\d %(?![\w%])")
    bad = {}
    for page in _pages():
        text = re.sub(r"<[^>]+>", "", _NOT_PROSE.sub("", page.read_text(encoding="utf-8")))
        hits = [text[max(0, m.start() - 30):m.end() + 10] for m in loose.finditer(text)]
        if hits:
            bad[str(page.relative_to(HTML))] = hits[:3]
    assert not bad, f"a breakable space before % in {bad}"
