"""Author–year labels for the book's reference list (a Sphinx extension for sphinxcontrib-bibtex).

The chapters cite author–year (``bibtex_reference_style: author_year`` renders
``{cite}`meyer2026howmany``` as "Meyer et al., 2026"), but pybtex's default ``alpha`` style labels
the reference list ``[MMCT26]``. This module registers a pybtex formatting style ``authoryear``
whose labels read like the citations: "Meyer et al., 2026" (one author: "Meyer, 2026"; two:
"Meyer and Tan, 2026"); equal labels get a, b, ... after the year. ``_config.yml`` loads it with
``sphinx: extra_extensions: [howmany.bibstyle]`` and selects it with ``bibtex_default_style``.

Explained in: book/bibliography.md
"""

from __future__ import annotations

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as _UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle as _AuthorYearSorting

STYLE_NAME = "authoryear"  # the name _config.yml gives to ``bibtex_default_style``


def _last_names(entry) -> list[str]:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    return [" ".join(p.prelast_names + p.last_names) for p in people]


def author_year_label(entry) -> str:
    """The label of one entry: "Last, Year", "Last and Other, Year" or "Last et al., Year".

    Explained in: book/bibliography.md
    """
    names, year = _last_names(entry), entry.fields.get("year", "n.d.")
    if not names:
        who = entry.fields.get("title", entry.key).split(":")[0]
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {year}"


class AuthorYearLabels(BaseLabelStyle):
    """pybtex label style: :func:`author_year_label`, with a, b, ... on repeated labels."""

    def format_labels(self, sorted_entries):
        labels = [author_year_label(e) for e in sorted_entries]
        total, seen = Counter(labels), Counter()
        for label in labels:
            if total[label] == 1:
                yield label
            else:
                seen[label] += 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]


class AuthorYearStyle(_UnsrtStyle):
    """pybtex formatting style: unsrt entries, author–year labels, sorted by author and year."""

    default_label_style = AuthorYearLabels
    default_sorting_style = _AuthorYearSorting


def setup(app) -> dict:
    """Sphinx entry point: register the ``authoryear`` pybtex styles."""
    register_plugin("pybtex.style.labels", STYLE_NAME, AuthorYearLabels)
    register_plugin("pybtex.style.formatting", STYLE_NAME, AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
