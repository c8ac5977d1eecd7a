"""The small chapter-facing helpers: glue values, result paths, device names."""

import numpy as np

from howmany import devices, page, paths


def test_plain_turns_numpy_scalars_into_python_ones():
    assert type(page.plain(np.float32(1.5))) is float and page.plain(np.float32(1.5)) == 1.5
    assert type(page.plain(np.int64(3))) is int
    assert type(page.plain(np.bool_(True))) is bool
    assert page.plain("text") == "text"


def test_glue_returns_the_plain_value():
    assert type(page.glue("test_page_key", np.int32(7))) is int


def test_glue_math_glues_the_equation_in_book_notation():
    from howmany import bounds

    text = page.glue_math("test_page_math", bounds.latex(bounds.sym.C))
    assert r"\ln|V|" in text and r"\varepsilon" in text and r"\log" not in text


def test_data_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))
    assert paths.data_dir() == tmp_path
    monkeypatch.delenv("HOWMANY_DATA")
    assert paths.data_dir() == paths.repo_root() / "data"


def test_an_explicit_device_passes_through():
    assert devices.resolve_device("cpu") == "cpu"
    assert devices.resolve_device("cuda:1") == "cuda:1"
    assert devices.resolve_device("auto") in ("cpu", "cuda")
