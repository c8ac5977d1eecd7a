"""Colab notebooks: book-wide numbering, citations, the install cell, metadata.

Each chapter's full conversion (executed in the smoke profile) is tested in test_chapters.py.
"""

import nbformat
import pytest

from howmany import bibstyle, bookbuild, colab


@pytest.fixture(scope="module")
def info(repo_root):
    return colab.book_info(repo_root, bookbuild.pages(repo_root))


def test_numbers_follow_the_toc_per_kind(info, repo_root):
    """Sphinx numfig without numbered sections: one counter per kind across the whole book."""
    by_kind = {}
    for target in info.targets.values():
        if target.number is not None:
            by_kind.setdefault(target.kind, []).append(target.number)
    assert by_kind["figure"] == sorted(by_kind["figure"])
    for kind, numbers in by_kind.items():
        assert len(set(numbers)) == len(numbers), f"{kind} numbered twice"
    order = [p.docname for p in bookbuild.pages(repo_root)]
    docs = [t.docname for t in sorted((t for t in info.targets.values() if t.kind == "figure"),
                                      key=lambda t: t.number)]
    assert docs == sorted(docs, key=order.index), "figures are numbered in toc order"


def test_every_page_has_a_title_and_sections_resolve(info, repo_root):
    for page in bookbuild.pages(repo_root):
        assert info.titles.get(page.docname), page.docname
    assert info.base_url.startswith("https://") and info.repo_url.startswith("https://github.com/")


def test_citations_are_author_year_with_a_reference_list(info):
    cite = bibstyle.Citations(info.bib)
    assert cite(["meyer2026howmany"], "cite") == "(Meyer et al., 2026)"
    assert cite(["meyer2026howmany"], "cite:t") == "Meyer et al. (2026)"
    assert cite(["kuratov2025cramming", "jelassi2024repeat"], "cite:p") == (
        "(Kuratov et al., 2025; Jelassi et al., 2024)")
    refs = cite.reference_list()
    assert refs.startswith("## References") and refs.count("\n- ") == 3
    assert refs.index("Jelassi") < refs.index("Kuratov") < refs.index("Meyer")


def test_install_cell_pins_the_commit_and_runs_only_on_colab():
    src = colab.install_cell("https://github.com/o/r", "0123abc")
    assert '%pip install -q "howmany @ git+https://github.com/o/r@0123abc"' in src
    assert 'if "google.colab" in sys.modules:' in src and "checkout -q 0123abc" in src


def test_convert_replaces_the_chapter_installer_and_captions_figures(info, repo_root):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('if "google.colab" in sys.modules:\n    %pip install -q x',
                                  metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_markdown_cell("See {numref}`fig-cramming-scaling`."),
        nbformat.v4.new_code_cell("x = 1", metadata={"mystnb": {"figure": {
            "name": "fig-cramming-scaling", "caption": "Slope {cite}`meyer2026howmany`."}}},
            outputs=[nbformat.v4.new_output("stream", name="stderr", text="50it/s]")]),
        nbformat.v4.new_code_cell("PROFILE = 'smoke'",
                                  metadata={"tags": ["injected-parameters", "remove-cell"]}),
        nbformat.v4.new_code_cell('TEXT = "long" if "google.colab" in sys.modules else "short"'),
    ])
    out = colab.convert(nb, docname="book/cramming", info=info, commit="c0ffee", root=repo_root)
    n = info.targets["fig-cramming-scaling"].number
    sources = [c.source for c in out.cells]
    assert "git+https://github.com/" in sources[0] and sum("pip install" in s for s in sources) == 1
    assert sources[1] == f"See Figure {n}."
    assert sources[3] == f"**Figure {n}.** Slope (Meyer et al., 2026)."
    assert out.cells[2].outputs == [] and "PROFILE = 'smoke'" not in sources
    assert sources[-1].startswith("## References")
    assert sources[4] == 'TEXT = "long" if "google.colab" in sys.modules else "short"'
    assert out.metadata["accelerator"] == "GPU" and out.metadata["colab"]["gpuType"] == "T4"
