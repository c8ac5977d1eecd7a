"""The book pipeline: a failing chapter is named with its cell; staging never duplicates pages."""

import shutil
import textwrap

import pytest

from howmany import bookbuild, bookstage

HEADER = textwrap.dedent("""\
    ---
    jupytext:
      text_representation: {extension: .md, format_name: myst}
    kernelspec: {display_name: Python 3, language: python, name: python3}
    ---
    """)


def _mini_book(root, body: str):
    (root / "book").mkdir(parents=True)
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: P\n    chapters:\n"
        "      - file: book/ch\n")
    (root / "_config.yml").write_text("title: t\n")
    (root / "references.bib").write_text("")
    (root / "book" / "intro.md").write_text("# Intro\n")
    (root / "book" / "ch.md").write_text(HEADER + body)


def test_pages_reads_the_toc_in_order(repo_root):
    pages = bookbuild.pages(repo_root)
    assert pages[0].docname == "book/intro" and not pages[0].is_notebook
    assert all(p.source.exists() for p in pages)


def test_failing_chapter_names_chapter_and_cell(tmp_path):
    body = ("```{code-cell} ipython3\n:tags: [parameters]\nPROFILE = 'default'\n```\n\n"
            "```{code-cell} ipython3\nraise ValueError('boom in the second cell')\n```\n")
    _mini_book(tmp_path, body)
    with pytest.raises(bookbuild.ChapterFailed) as err:
        bookbuild.run_chapters(tmp_path, "smoke", tmp_path / "out", log=lambda *a, **k: None)
    msg = str(err.value)
    assert "ch.md" in msg and "cell" in msg and "boom in the second cell" in msg


def test_parameter_reaches_the_chapter_and_stage_has_no_duplicates(tmp_path):
    body = ("```{code-cell} ipython3\n:tags: [parameters]\nPROFILE = 'default'\n```\n\n"
            "```{code-cell} ipython3\nassert PROFILE == 'smoke', PROFILE\n```\n")
    _mini_book(tmp_path, body)
    done = bookbuild.run_chapters(tmp_path, "smoke", tmp_path / "out", log=lambda *a, **k: None)
    stage = tmp_path / "stage"
    bookstage.stage(tmp_path, stage, done, offline_math=False)
    assert (stage / "book" / "ch.ipynb").exists() and not (stage / "book" / "ch.md").exists()
    assert (stage / "book" / "intro.md").exists()
    import nbformat

    nb = nbformat.read(stage / "book" / "ch.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "remove-cell" in injected[0].metadata["tags"]
    shutil.rmtree(stage)


def test_only_keeps_root_and_named_chapters():
    toc = {"root": "book/intro", "parts": [
        {"caption": "A", "chapters": [{"file": "book/a"}, {"file": "book/b"}]},
        {"caption": "B", "chapters": [{"file": "book/c"}]}]}
    out = bookstage._filter_toc(toc, {"book/b"})
    assert out["parts"] == [{"caption": "A", "chapters": [{"file": "book/b"}]}]


def test_an_unknown_chapter_in_only_is_one_line_naming_the_chapters(tmp_path, capsys):
    _mini_book(tmp_path, "# Ch\n")
    with pytest.raises(ValueError, match=r"no chapter named 'nope'; chapters: intro, ch$"):
        bookbuild.pages(tmp_path, ["ch", "nope"])
    assert [p.docname for p in bookbuild.pages(tmp_path, ["ch"])] == ["book/intro", "book/ch"]
    assert [p.docname for p in bookbuild.pages(tmp_path, ["book/ch"])] == ["book/intro", "book/ch"]
    for action in ("build", "execute", "notebooks"):
        assert bookbuild.main([action, "--root", str(tmp_path), "--only", "nope",
                               "--out", str(tmp_path / "out")]) == 1
        err = capsys.readouterr().err.strip()
        assert err == "error: no chapter named 'nope'; chapters: intro, ch", err
    assert not (tmp_path / "out").exists()


def test_stderr_goes_to_the_log_not_the_page(tmp_path):
    body = ("```{code-cell} ipython3\n:tags: [parameters]\nPROFILE = 'default'\n```\n\n"
            "```{code-cell} ipython3\nimport os, sys, warnings\n"
            "warnings.warn('a TqdmWarning-like note')\nprint('50it/s]', file=sys.stderr)\n"
            "print('kept', os.environ['TQDM_DISABLE'])\n```\n")
    _mini_book(tmp_path, body)
    done = bookbuild.run_chapters(tmp_path, "smoke", tmp_path / "out", log=lambda *a, **k: None)
    import nbformat

    nb = nbformat.read(done["book/ch"], as_version=4)
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert outputs and all(o.get("name") != "stderr" for o in outputs)
    assert "kept 1" in "".join(o.get("text", "") for o in outputs)
    log = done["book/ch"].with_suffix(".log").read_text()
    assert "a TqdmWarning-like note" in log and "50it/s]" in log


def test_stage_never_auto_includes_a_vendored_mathjax(tmp_path):
    _mini_book(tmp_path, "# Ch\n")
    (tmp_path / "_static" / "mathjax").mkdir(parents=True)
    (tmp_path / "_static" / "mathjax" / "tex-chtml.js").write_text("//")
    (tmp_path / "_static" / "custom.css").write_text("")
    bookstage.stage(tmp_path, tmp_path / "stage", {"book/ch": tmp_path / "book" / "ch.md"},
                    offline_math=True)
    assert (tmp_path / "stage" / "_static" / "custom.css").exists()
    assert not list((tmp_path / "stage").rglob("*.js"))


def test_notebooks_reuse_the_last_build_and_convert_glue(tmp_path):
    import os

    import nbformat

    from howmany import colab

    body = ("```{code-cell} ipython3\n:tags: [parameters]\nPROFILE = 'default'\n```\n\n"
            "```{code-cell} ipython3\nfrom howmany import page\npage.glue('x', 2 / 3)\n```\n\n"
            "Two thirds: {glue:text}`x:.2f`.\n")
    _mini_book(tmp_path, body)
    build = tmp_path / "_build"
    bookbuild.run_chapters(tmp_path, "smoke", build / "executed", log=lambda *a, **k: None)
    logs = []
    out = colab.write_notebooks(tmp_path, tmp_path / "nb", "smoke", build_dir=build,
                                commit="c0ffee", log=lambda m, **k: logs.append(m))
    assert not logs, "the executed notebook of the last build is reused"
    nb = nbformat.read(out[0], as_version=4)
    assert "Two thirds: 0.67." in [c.source for c in nb.cells]
    os.utime(tmp_path / "book" / "ch.md")  # a newer source: executed again
    colab.write_notebooks(tmp_path, tmp_path / "nb", "smoke", build_dir=build, commit="c0ffee",
                          log=lambda m, **k: logs.append(m))
    assert logs and logs[0].startswith("executing")


def test_captioned_figures_get_their_caption_as_alt_text_unless_they_set_one():
    import nbformat

    from howmany.bookstage import alt_texts

    fig = {"figure": {"caption": "Median $n_{50}$ against $\\varepsilon^2$,\n  one curve", "name": "f"}}
    own = {"figure": {"caption": "c"}, "image": {"alt": "kept"}}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a", metadata={"mystnb": fig}),
                nbformat.v4.new_code_cell("b", metadata={"mystnb": own}),
                nbformat.v4.new_code_cell("c"), nbformat.v4.new_markdown_cell("d")]
    assert alt_texts(nb) == 1
    assert nb.cells[0].metadata["mystnb"]["image"]["alt"] == (
        "Median n 50 against varepsilon to the 2, one curve")
    assert nb.cells[1].metadata["mystnb"]["image"]["alt"] == "kept"
    assert "mystnb" not in nb.cells[2].metadata


def test_a_failed_strict_build_shows_its_warnings_even_far_above_the_tail(tmp_path, monkeypatch,
                                                                          capsys):
    class Failed:
        returncode = 1
        stdout = "book/x.ipynb:12: WARNING: glue key 'k' duplicate\n" + "writing output...\n" * 2000

    monkeypatch.setattr(bookbuild, "run_chapters", lambda *a, **k: {})
    monkeypatch.setattr(bookbuild, "ensure_mathjax", lambda root: None)
    monkeypatch.setattr(bookbuild, "stage", lambda *a, **k: None)
    monkeypatch.setattr(bookbuild.subprocess, "run", lambda *a, **k: Failed())
    with pytest.raises(RuntimeError, match="jupyter-book build failed"):
        bookbuild.build(tmp_path, "smoke", tmp_path / "_build", log=lambda *a, **k: None)
    assert "WARNING: glue key 'k' duplicate" in capsys.readouterr().out
