"""Inline MyST → plain Markdown: roles, glued values, citations, references, macros.

What :mod:`howmany.myst_md` uses for the text of every cell and directive: ``{glue:text}`` and
the other glue roles become the glued values formatted as in the book, ``{cite}`` author–year
citations, ``{numref}``/``{eq}``/``{prf:ref}`` "Figure N"/"(N)" numbered as Sphinx numbers
them, ``{doc}``/``{ref}`` links to the online pages, and the book's TeX macros are expanded.
:class:`Context` carries what a cell needs to know about its notebook and the book.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import base64
import re
from ast import literal_eval
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

GLUE_PREFIX = "application/papermill.record/"  # how myst_nb.glue(display=False) stores data
_ROLE = re.compile(r"\{(?P<name>[A-Za-z][\w:+.-]*)\}(?P<tick>`+)(?P<body>.+?)(?P=tick)"
                   r"|(?P<code>`+).+?(?P=code)", re.S)


class MystError(ValueError):
    """A MyST construct the converter does not know (so it would be left as source)."""


@dataclass(frozen=True)
class Target:
    """Something a reference can point at: a numbered object or a section."""

    docname: str  # page holding it, e.g. "book/cells"
    kind: str  # "figure", "table", "equation", "section" or a prf type ("theorem", ...)
    number: int | None  # book-wide number (Sphinx numfig), None for sections
    title: str  # heading text (sections) or theorem title


@dataclass
class Context:
    """What one Markdown cell needs to know about the notebook and the book."""

    docname: str  # the page being converted, e.g. "book/cramming"
    glue: dict  # glue key -> mime bundle of that build's executed notebook
    targets: dict = field(default_factory=dict)  # label -> Target (whole book)
    titles: dict = field(default_factory=dict)  # docname -> page title
    base_url: str = ""  # online book, e.g. "https://org.github.io/repo/"
    cite: Callable | None = None  # (keys, role) -> text; records what was cited
    macros: dict = field(default_factory=dict)  # TeX macro name -> expansion
    formats: dict = field(default_factory=dict)  # numfig_format: kind -> "Figure %s"
    root: Path | None = None  # book root, for {include} and {figure}


def page_url(ctx: Context, docname: str, anchor: str = "") -> str:
    """The online address of a page (and anchor) of the book."""
    return f"{ctx.base_url.rstrip('/')}/{docname}.html" + (f"#{anchor}" if anchor else "")


def glue_text(ctx: Context, key: str, fmt: str = "s") -> str:
    """A glued value formatted like myst-nb's ``{glue:text}`` (``literal_eval`` then ``format``)."""
    bundle = glue_bundle(ctx, key)
    text = str(bundle.get("text/plain", ""))
    try:
        value = literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if fmt and fmt[-1] in "bcdoxX":
        value = int(value)
    elif fmt and fmt[-1] in "eEfFgGn%":
        value = float(value)
    elif fmt and fmt[-1] == "s":
        value = str(value)
    return format(value, fmt)


def glue_bundle(ctx: Context, key: str) -> dict:
    """The mime bundle glued under ``key`` in the executed notebook (MystError if absent)."""
    if key not in ctx.glue:
        raise MystError(f"{ctx.docname}: glue key {key!r} not found in the executed notebook")
    return ctx.glue[key]


def image_markdown(bundle: dict, alt: str = "") -> str | None:
    """A Markdown image with the bundle's PNG, JPEG or SVG inlined as a data URL; None if none."""
    for mime in ("image/png", "image/jpeg", "image/svg+xml"):
        if mime in bundle:
            data = bundle[mime]
            if mime == "image/svg+xml":
                data = base64.b64encode(str(data).encode()).decode()
            return f"![{alt}](data:{mime};base64,{''.join(str(data).split())})"
    return None


def glue_any(ctx: Context, key: str) -> str:
    """A glued value as ``{glue}`` shows it: Markdown, math, an image, or formatted text."""
    bundle = glue_bundle(ctx, key)
    if "text/markdown" in bundle:
        return str(bundle["text/markdown"])
    if "text/latex" in bundle:
        return "$" + strip_math(str(bundle["text/latex"])) + "$"
    return image_markdown(bundle) or glue_text(ctx, key)


def strip_math(latex: str) -> str:
    """LaTeX without its outer math delimiters (``$$``, ``$``, ``\\[ \\]``, ``\\( \\)``)."""
    latex = latex.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\[", "\\]"), ("\\(", "\\)")):
        if latex.startswith(left) and latex.endswith(right) and len(latex) > len(left + right):
            return latex[len(left):-len(right)].strip()
    return latex


def _split_target(text: str) -> tuple[str | None, str]:
    """``"text <label>"`` → ("text", "label"); ``"label"`` → (None, "label")."""
    m = re.fullmatch(r"(?P<text>.*?)\s*<(?P<label>[^<>]+)>", text.strip(), re.S)
    return (m["text"], m["label"]) if m else (None, text.strip())


def number_text(ctx: Context, target: Target, text: str | None) -> str:
    """The text of a numbered reference: the book's format ("Figure N") or ``text`` filled in."""
    fmt = ctx.formats.get(target.kind, target.kind.capitalize() + " %s")
    if text is None:
        return fmt.replace("%s", str(target.number))
    return text.replace("{number}", str(target.number)).replace("{name}", target.title)


def _link(ctx: Context, text: str, target: Target, anchor: str) -> str:
    if target.docname == ctx.docname:
        return text
    return f"[{text}]({page_url(ctx, target.docname, anchor)})"


def resolve(ctx: Context, label: str) -> Target:
    """The target of a label anywhere in the book (MystError if unknown)."""
    if label not in ctx.targets:
        raise MystError(f"{ctx.docname}: reference to unknown label {label!r}")
    return ctx.targets[label]


def _role(ctx: Context, name: str, body: str) -> str:
    if name in ("glue:text", "glue"):
        key, _, fmt = body.rpartition(":") if ":" in body else (body, "", "s")
        return glue_text(ctx, key.strip(), fmt or "s") if name == "glue:text" else glue_any(
            ctx, body.strip())
    if name in ("glue:any", "glue:md"):
        return glue_any(ctx, body.split(":")[0].strip())
    if name.startswith("cite"):
        if ctx.cite is None:
            raise MystError(f"{ctx.docname}: citation {body!r} but no bibliography given")
        return ctx.cite([k.strip() for k in body.split(",")], name)
    if name in ("math", "m"):
        return f"${body}$"
    if name in ("numref", "eq", "prf:ref", "ref", "doc"):
        return _reference(ctx, name, body)
    if name in ("sub", "sup"):
        return f"<{name}>{body}</{name}>"
    if name in ("term", "abbr", "kbd", "code", "samp", "file", "command", "download"):
        return _split_target(body)[0] or body if name != "code" else f"`{body}`"
    raise MystError(f"{ctx.docname}: MyST role {{{name}}} is not converted")


def _reference(ctx: Context, name: str, body: str) -> str:
    text, label = _split_target(body)
    if name == "doc":
        doc = label.lstrip("/") if label.startswith("/") else str(
            Path(ctx.docname).parent / label) if "/" not in label else label
        doc = doc.removesuffix(".md")
        title = text or ctx.titles.get(doc)
        if title is None:
            raise MystError(f"{ctx.docname}: {{doc}} to unknown page {label!r}")
        return title if doc == ctx.docname else f"[{title}]({page_url(ctx, doc)})"
    target = resolve(ctx, label)
    if name == "eq":
        return _link(ctx, f"({target.number})", target, f"equation-{label}".lower())
    if name == "ref":
        return _link(ctx, text or target.title, target, label)
    return _link(ctx, number_text(ctx, target, text), target, label)


def inline(ctx: Context, text: str) -> str:
    """Convert the roles of one stretch of Markdown (code spans are left alone)."""
    def sub(m: re.Match) -> str:
        return m[0] if m["code"] else _role(ctx, m["name"], m["body"])

    return expand_macros(ctx, _ROLE.sub(sub, text))


def expand_macros(ctx: Context, text: str) -> str:
    """Replace the book's TeX macros (``\\eps`` → ``\\varepsilon``) outside code spans."""
    if not ctx.macros:
        return text
    pat = re.compile(r"\\(" + "|".join(map(re.escape, ctx.macros)) + r")(?![A-Za-z])")
    parts = re.split(r"(`+[^`]*`+)", text)
    return "".join(p if p.startswith("`") else pat.sub(lambda m: ctx.macros[m[1]], p)
                   for p in parts)
