"""The reference list's labels read like the author-year citations."""

import re
from pathlib import Path

import pytest

pybtex = pytest.importorskip("pybtex")
from pybtex.database import parse_string  # noqa: E402
from pybtex.plugin import find_plugin  # noqa: E402

from howmany import bibstyle  # noqa: E402

BIB = Path(__file__).resolve().parents[1] / "references.bib"


def _entries(text: str):
    return list(parse_string(text, "bibtex").entries.values())


@pytest.mark.parametrize("authors, label", [
    ("Meyer", "Meyer, 2026"),
    ("Meyer and Tan", "Meyer and Tan, 2026"),
    ("Meyer and Michelessa and Chaux and Tan", "Meyer et al., 2026"),
    ("Kuratov, Yuri and Arkhipov, Mikhail and Bulatov, Aydar", "Kuratov et al., 2026"),
])
def test_label_counts_authors(authors, label):
    (entry,) = _entries(f"@misc{{k, author = {{{authors}}}, year = {{2026}}, title = {{T}}}}")
    assert bibstyle.author_year_label(entry) == label


def test_a_corporate_author_is_named_without_its_braces():
    (entry,) = _entries("@misc{k, author = {{Hugging Face transformers contributors}}, "
                        "year = {2025}, title = {T}}")
    assert bibstyle.author_year(entry) == ("Hugging Face transformers contributors", "2025")
    assert bibstyle.author_year_label(entry) == "Hugging Face transformers contributors, 2025"


def test_equal_labels_get_letters():
    bib = "".join(f"@misc{{k{i}, author = {{Meyer and Tan and Chaux}}, year = {{2026}}, title = {{T{i}}}}}"
                  for i in range(2))
    assert list(bibstyle.AuthorYearLabels().format_labels(_entries(bib))) == [
        "Meyer et al., 2026a", "Meyer et al., 2026b"]


def test_book_bibliography_formats_with_the_registered_style():
    bibstyle.setup(app=None)
    style = find_plugin("pybtex.style.formatting", bibstyle.STYLE_NAME)()
    data = parse_string(BIB.read_text(), "bibtex")
    labels = {e.key: e.label for e in style.format_bibliography(data)}
    assert labels["meyer2026howmany"] == "Meyer et al., 2026"
    assert all(re.fullmatch(r".+, \d{4}[a-z]?", lab) for lab in labels.values()), labels
