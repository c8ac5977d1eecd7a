"""Every chapter runs as its Colab notebook, top to bottom, in the smoke profile.

This is the CI half of `make test`, and one execution per chapter does two jobs:

* the chapter runs through papermill exactly as `make book` runs it (PROFILE="smoke", in a
  temporary folder; results and figures go to a temporary store, never into data/);
* it runs *as its Colab notebook*: the first cell is the install cell students get, with the
  `google.colab` guard lifted and the GitHub URL pointed at a local clone of this checkout, so
  the package the chapter imports is the one that cell installed (checked by a last probe cell);
  then the executed notebook is converted to plain Markdown and no MyST may remain.
"""

import re
import shutil
import subprocess
import time

import nbformat
import pytest

from howmany import bookbuild, colab
from howmany.paths import repo_root

ROOT = repo_root()
# How long a chapter takes is measured by benchmarks/bench_chapters.py, not here.
CHAPTERS = [p for p in bookbuild.pages(ROOT) if p.is_notebook] if ROOT else []
# What must not survive conversion: roles, directive fences, (label)= targets, glue options.
MYST_LEFT = re.compile(r"\{[A-Za-z][\w:+.-]*\}`|^\s*(`{3,}|:{3,})\{|^\s*\([^()\s]+\)=\s*$"
                       r"|^\s*:(label|name|caption|class):", re.M)
PROBE = "import howmany\nprint('HOWMANY_FROM', howmany.__file__)"


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(scope="session")
def local_clone(tmp_path_factory):
    """This checkout as it is now (tracked and untracked, not ignored) committed in a new repo."""
    repo = tmp_path_factory.mktemp("clone") / "howmany"
    files = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for rel in filter(None, files.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / rel)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "snapshot")
    return repo, _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="session")
def book_info():
    return colab.book_info(ROOT, bookbuild.pages(ROOT))


def _point_at_clone(source: str, info, clone, target, data_dir) -> str:
    """The install cell as Colab runs it, but from the local clone into a private folder."""
    swaps = [('"google.colab" in sys.modules', "True"),
             (f"git+{info.repo_url}@", f"git+file://localhost{clone}@"),
             (f"clone -q {info.repo_url} ", f"clone -q {clone} "),
             (colab.COLAB_DATA, str(data_dir)),
             ("%pip install -q ", f"%pip install -q --no-deps --target {target} ")]
    for old, new in swaps:
        assert old in source, f"the install cell no longer contains {old!r}"
        source = source.replace(old, new)
    return source


def test_toc_lists_chapters():
    assert CHAPTERS, "the table of contents names at least one executable chapter"


@pytest.mark.chapter
@pytest.mark.parametrize("page", CHAPTERS, ids=[p.source.stem for p in CHAPTERS])
def test_chapter_runs_as_colab_notebook(page, tmp_path, local_clone, book_info, monkeypatch):
    clone, commit = local_clone
    target = tmp_path / "site"
    target.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(target))  # the kernel sees only what the cell installs
    plain = nbformat.read(bookbuild.to_notebook(page.source, tmp_path / "plain.ipynb"), 4)
    nb = colab.convert(plain, docname=page.docname, info=book_info, commit=commit, root=ROOT,
                       markdown=False)
    nb.cells[0].source = _point_at_clone(nb.cells[0].source, book_info, clone, target,
                                         tmp_path / "howmany")
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    nbformat.write(nb, tmp_path / "colab.ipynb")

    t0 = time.perf_counter()
    bookbuild.execute(None, tmp_path / "run.ipynb", "smoke", cwd=tmp_path,
                      notebook=tmp_path / "colab.ipynb")
    minutes = (time.perf_counter() - t0) / 60
    print(f"{page.source.stem}: {minutes:.2f} min")
    done = nbformat.read(tmp_path / "run.ipynb", as_version=4)
    code = [c for c in done.cells if c.cell_type == "code" and c.source]
    assert code and all(c.get("execution_count") for c in code), "every code cell executed"
    assert not [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    probe = "".join(o.get("text", "") for o in done.cells[-1].outputs)
    assert f"HOWMANY_FROM {target}" in probe, probe

    done.cells.pop()
    out = colab.convert(done, docname=page.docname, info=book_info, commit=commit, root=ROOT)
    text = "\n".join(c.source for c in out.cells if c.cell_type == "markdown")
    left = sorted({m[0] for m in MYST_LEFT.finditer(text)})
    assert not left, f"MyST left in the Colab notebook of {page.source.stem}: {left}"
    assert f"@{commit}" in out.cells[0].source and "google.colab" in out.cells[0].source
    assert not any(o.get("name") == "stderr" for c in out.cells for o in c.get("outputs", []))


def test_bad_profile_is_one_clear_line(tmp_path):
    page = CHAPTERS[0]
    with pytest.raises(ValueError, match="valid profiles are smoke, default, full"):
        bookbuild.execute(page.source, tmp_path / "x.ipynb", "nonsense")
