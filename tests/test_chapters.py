"""Every chapter of the book executes in the smoke profile (the CI half of `make test`).

Each chapter runs through papermill exactly as `make book` runs it, with PROFILE="smoke", in a
temporary folder; results and figures go to a temporary store, never into data/.
"""

import json
import os
import time

import pytest

from howmany import bookbuild, profiles
from howmany.utils import repo_root

ROOT = repo_root()
# A chapter must run within the smoke profile's minutes; the factor absorbs a busy shared machine
# (set HOWMANY_CHAPTER_SLACK=1 for the strict budget).
SLACK = float(os.environ.get("HOWMANY_CHAPTER_SLACK", "2"))
CHAPTERS = [p for p in bookbuild.pages(ROOT) if p.is_notebook] if ROOT else []


def test_toc_lists_chapters():
    assert CHAPTERS, "the table of contents names at least one executable chapter"


@pytest.mark.chapter
@pytest.mark.parametrize("page", CHAPTERS, ids=[p.source.stem for p in CHAPTERS])
def test_chapter_runs_in_smoke_profile(page, tmp_path):
    out = tmp_path / f"{page.source.stem}.ipynb"
    t0 = time.perf_counter()
    bookbuild.execute(page.source, out, "smoke", cwd=tmp_path)
    minutes = (time.perf_counter() - t0) / 60
    print(f"{page.source.stem}: {minutes:.2f} min")
    nb = json.loads(out.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and c["source"]]
    assert code and all(c.get("execution_count") for c in code), "every code cell executed"
    assert not [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    budget = profiles.get("smoke").max_chapter_minutes * SLACK
    assert minutes <= budget, f"{page.source.stem} took {minutes:.2f} min in smoke (budget {budget})"


def test_bad_profile_is_one_clear_line(tmp_path):
    page = CHAPTERS[0]
    with pytest.raises(ValueError, match="valid profiles are smoke, default, full"):
        bookbuild.execute(page.source, tmp_path / "x.ipynb", "nonsense")
