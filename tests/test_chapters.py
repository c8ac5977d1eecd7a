"""Every chapter of the book executes in the smoke profile (the CI half of `make test`).

Each chapter runs through papermill exactly as `make book` runs it, with PROFILE="smoke", in a
temporary folder; results and figures go to a temporary store, never into data/.
"""

import time

import pytest

from howmany import bookbuild
from howmany.utils import repo_root

ROOT = repo_root()
CHAPTERS = [p for p in bookbuild.pages(ROOT) if p.is_notebook] if ROOT else []


def test_toc_lists_chapters():
    assert CHAPTERS, "the table of contents names at least one executable chapter"


@pytest.mark.chapter
@pytest.mark.parametrize("page", CHAPTERS, ids=[p.source.stem for p in CHAPTERS])
def test_chapter_runs_in_smoke_profile(page, tmp_path):
    t0 = time.perf_counter()
    bookbuild.execute(page.source, tmp_path / f"{page.source.stem}.ipynb", "smoke", cwd=tmp_path)
    minutes = (time.perf_counter() - t0) / 60
    print(f"{page.source.stem}: {minutes:.2f} min")


def test_bad_profile_is_one_clear_line(tmp_path):
    page = CHAPTERS[0]
    with pytest.raises(ValueError, match="valid profiles are smoke, default, full"):
        bookbuild.execute(page.source, tmp_path / "x.ipynb", "nonsense")
