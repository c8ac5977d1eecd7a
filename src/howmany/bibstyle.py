"""The book's citation style, author–year, in the HTML and in the Colab notebooks.

The chapters cite author–year (``bibtex_reference_style: author_year`` renders
``{cite}`meyer2026howmany``` as "Meyer et al., 2026"), but pybtex's default ``alpha`` style labels
the reference list ``[MMCT26]``. This module registers a pybtex formatting style ``authoryear``
whose labels read like the citations: "Meyer et al., 2026" (one author: "Meyer, 2026"; two:
"Meyer and Tan, 2026"); equal labels get a, b, ... after the year. ``_config.yml`` loads it with
``sphinx: extra_extensions: [howmany.bibstyle]`` and selects it with ``bibtex_default_style``.
The Colab notebooks (``howmany.colab``), which Sphinx never sees, cite with ``Citations``: the
same ``author_year`` and a reference list of the works a notebook cites.

Explained in: book/bibliography.md
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as _UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle as _AuthorYearSorting

from .myst_inline import MystError

STYLE_NAME = "authoryear"  # the name _config.yml gives to ``bibtex_default_style``


def _last_names(entry) -> list[str]:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    return [" ".join(p.prelast_names + p.last_names) for p in people]


def author_year(entry) -> tuple[str, str]:
    """Who and when of one entry: ("Last", year), ("Last and Other", year) or ("Last et al.",
    year); the braces that keep a corporate author's name whole are dropped.

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
    return who.replace("{", "").replace("}", ""), year


def author_year_label(entry) -> str:
    """The label of one entry in the reference list: "Last, Year", "Last and Other, Year" or
    "Last et al., Year" (``author_year``).

    Explained in: book/bibliography.md
    """
    return "{}, {}".format(*author_year(entry))


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


def bibliography(root: Path) -> dict:
    """``{key: pybtex Entry}`` of the book's ``references.bib`` (empty without one)."""
    from pybtex.database import parse_file

    path = root / "references.bib"
    return dict(parse_file(str(path)).entries) if path.exists() else {}


class Citations:
    """Formats ``{cite}`` roles author–year and remembers what a notebook cited."""

    def __init__(self, bib: dict):
        self.bib, self.cited = bib, []

    def __call__(self, keys: list[str], role: str) -> str:
        for key in keys:
            if key not in self.bib:
                raise MystError(f"citation key {key!r} is not in references.bib")
            if key not in self.cited:
                self.cited.append(key)
        labels = [author_year(self.bib[k]) for k in keys]
        if role in ("cite:t", "cite:ts", "cite:ct", "cite:cts"):
            return "; ".join(f"{a} ({y})" for a, y in labels)
        return "(" + "; ".join(f"{a}, {y}" for a, y in labels) + ")"

    def reference_list(self) -> str:
        """The cited works, sorted by author and year, as a Markdown section."""
        from pybtex.database import BibliographyData
        from pybtex.plugin import find_plugin

        style = find_plugin("pybtex.style.formatting", "plain")()
        backend = find_plugin("pybtex.backends", "markdown")()
        keys = sorted(self.cited, key=lambda k: author_year(self.bib[k]))
        data = BibliographyData({k: self.bib[k] for k in keys})
        items = {e.key: e.text.render(backend).replace("\n", " ")
                 for e in style.format_entries(data.entries.values())}
        return "## References\n\n" + "\n".join(
            "- **{}, {}.** {}".format(*author_year(self.bib[k]), items[k]) for k in keys)


def setup(app) -> dict:
    """Sphinx entry point: register the ``authoryear`` pybtex styles."""
    register_plugin("pybtex.style.labels", STYLE_NAME, AuthorYearLabels)
    register_plugin("pybtex.style.formatting", STYLE_NAME, AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
