"""A number stays on one line with its sign: "18 %", "m = 2" and "16 + 96m" never break.

The book writes a space between a number and its unit ("18 %", "95 % interval", "38.7 min"),
around the equals sign of a short equation in prose ("m = 2") and around the sign of a short
sum ("16 + 96m"). A browser may break a line at any of those spaces and leave "%" or "2"
alone at the start of the next line. :func:`bind` turns exactly those spaces into no-break
spaces (U+00A0), which look the same and never break. It is applied once for the whole book, whether a number is typed in a chapter or
glued from ``data/``:

- in the HTML, by this module's Sphinx extension (:func:`setup`, listed in ``_config.yml``), to
  the text of every page after references are resolved, tables rendered from data included;
- in the Colab notebooks, by :mod:`howmany.colab`, to every Markdown cell it writes.

Code, literal output and math are left alone: there the space is the author's.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import re

NBSP = "\u00a0"
UNITS = ("%", "‰", "ms", "s", "min", "h", "KB", "MB", "GB", "KiB", "MiB", "GiB")
# A space after a digit and before a unit that ends there ("18 %", "615 s", not "3 strings").
_UNIT = re.compile(r"(?<=\d) (?=(?:" + "|".join(map(re.escape, UNITS)) + r")(?![\w%‰]))")
# "m = 2", "n ≥ 64": a one-letter name, a relation, a number.
_EQUATION = re.compile(r"(?<![\w.])(?P<name>[A-Za-z]) (?P<rel>[=≈≤≥<>]) (?=[−-]?\d)")
# "16 + 96m", "2 × 3": a number, an operation, a number.
_OPERATION = re.compile(r"(?<=\d) (?P<op>[+−×]) (?=\d)")
# Code spans and math in Markdown, kept as they are.
_MARKDOWN_KEEP = re.compile(r"(`+)(?:(?!\1).)*?\1|\$\$.*?\$\$|\$[^$\n]+\$", re.S)
# Text between tags, outside style sheets, scripts and code.
_HTML_TEXT = re.compile(r"(?:(?<=>)|^)[^<]+")
_HTML_KEEP = re.compile(r"<(style|script|code|pre)\b.*?</\1\s*>", re.S | re.I)
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.S | re.M)


def bind(text: str) -> str:
    """``text`` with a no-break space wherever a line must not break (see the module)."""
    text = _UNIT.sub(NBSP, text)
    text = _OPERATION.sub(lambda m: f"{NBSP}{m['op']}{NBSP}", text)
    return _EQUATION.sub(lambda m: f"{m['name']}{NBSP}{m['rel']}{NBSP}", text)


def bind_markdown(source: str) -> str:
    """:func:`bind` on Markdown prose, leaving code spans, fenced code and math unchanged."""
    return _outside(_FENCED, source, lambda prose: _outside(_MARKDOWN_KEEP, prose, bind))


def _outside(kept: re.Pattern, text: str, change) -> str:
    """``change`` applied to the stretches of ``text`` between the matches of ``kept``."""
    pieces, last = [], 0
    for keep in kept.finditer(text):
        pieces += [change(text[last:keep.start()]), keep[0]]
        last = keep.end()
    return "".join(pieces + [change(text[last:])])


def bind_html(html: str) -> str:
    """:func:`bind` on the text between the tags of an HTML fragment (a table from data)."""
    return _outside(_HTML_KEEP, html, lambda part: _HTML_TEXT.sub(lambda m: bind(m[0]), part))


def _bind_doctree(app, doctree, docname) -> None:
    """Bind the text of a resolved page. A glued number is a text node of its own ("18.2", then
    " % of the"), so the text of one block is bound as one run, up to code or math inside it."""
    from docutils import nodes

    skip = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.raw,
            nodes.comment)
    runs, block = [[]], None
    for node in list(doctree.findall(nodes.Text)):
        chain = list(_ancestors(node.parent))
        here = next((a for a in chain if not isinstance(a, nodes.Inline)), None)
        if any(isinstance(a, skip) for a in chain) or here is not block:
            runs.append([])  # a break: code or math between, or another block
        block = here
        if not any(isinstance(a, skip) for a in chain):
            runs[-1].append(node)
    for run in runs:
        text = "".join(str(t) for t in run)
        bound, start = bind(text), 0  # the same length: only spaces change
        for t in run:
            new, start = bound[start:start + len(t)], start + len(t)
            if new != str(t):
                t.parent.replace(t, nodes.Text(new))
    for node in doctree.findall(nodes.raw):
        if "html" in node.get("format", "").split():
            node.children = [nodes.Text(bind_html(node.astext()))]


def _ancestors(node):
    while node is not None:
        yield node
        node = node.parent


def setup(app) -> dict:
    """Sphinx entry point: bind the spaces of every page's text once references are resolved."""
    app.connect("doctree-resolved", _bind_doctree)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
