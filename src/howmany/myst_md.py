"""MyST Markdown → plain Markdown, for notebooks read outside the book (Colab, Jupyter).

Colab renders CommonMark with ``$...$`` math, not MyST: roles (``{cite}`...` ``,
``{glue:text}`...` ``) and directives (```` ```{prf:theorem} ````) show as source there.
:func:`convert` rewrites one Markdown cell with what the built HTML shows instead: glued
values formatted as in the book, author–year citations, "Figure N"/"(N)" references numbered
as Sphinx numbers them, theorems and admonitions as block quotes, ``{doc}``/``{ref}`` as links
to the online pages, labelled math as ``$$...\\tag{N}$$``, and the book's TeX macros expanded.
Anything it does not know raises :class:`MystError`, so no MyST syntax is left behind silently.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import base64
import re
from ast import literal_eval
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ADMONITIONS = ("note", "tip", "hint", "important", "warning", "caution", "attention", "danger",
               "error", "seealso", "margin", "sidebar", "epigraph", "admonition", "dropdown")
GLUE_PREFIX = "application/papermill.record/"  # how myst_nb.glue(display=False) stores data
_FENCE = re.compile(r"^(?P<ind>\s*)(?P<fence>`{3,}|:{3,}|~{3,})(?P<info>.*)$")
_ROLE = re.compile(r"\{(?P<name>[A-Za-z][\w:+.-]*)\}(?P<tick>`+)(?P<body>.+?)(?P=tick)"
                   r"|(?P<code>`+).+?(?P=code)", re.S)
_TARGET = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
_DOLLAR_LABEL = re.compile(r"\$\$\s*\((?P<label>[^()\s]+)\)\s*$")


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
    bundle = _bundle(ctx, key)
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


def _bundle(ctx: Context, key: str) -> dict:
    if key not in ctx.glue:
        raise MystError(f"{ctx.docname}: glue key {key!r} not found in the executed notebook")
    return ctx.glue[key]


def _image(bundle: dict, alt: str = "") -> str | None:
    for mime in ("image/png", "image/jpeg", "image/svg+xml"):
        if mime in bundle:
            data = bundle[mime]
            if mime == "image/svg+xml":
                data = base64.b64encode(str(data).encode()).decode()
            return f"![{alt}](data:{mime};base64,{''.join(str(data).split())})"
    return None


def _glue_any(ctx: Context, key: str) -> str:
    bundle = _bundle(ctx, key)
    if "text/markdown" in bundle:
        return str(bundle["text/markdown"])
    if "text/latex" in bundle:
        return "$" + _strip_math(str(bundle["text/latex"])) + "$"
    return _image(bundle) or glue_text(ctx, key)


def _strip_math(latex: str) -> str:
    latex = latex.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\[", "\\]"), ("\\(", "\\)")):
        if latex.startswith(left) and latex.endswith(right) and len(latex) > len(left + right):
            return latex[len(left):-len(right)].strip()
    return latex


def _split_target(text: str) -> tuple[str | None, str]:
    """``"text <label>"`` → ("text", "label"); ``"label"`` → (None, "label")."""
    m = re.fullmatch(r"(?P<text>.*?)\s*<(?P<label>[^<>]+)>", text.strip(), re.S)
    return (m["text"], m["label"]) if m else (None, text.strip())


def _number_text(ctx: Context, target: Target, text: str | None) -> str:
    fmt = ctx.formats.get(target.kind, target.kind.capitalize() + " %s")
    if text is None:
        return fmt.replace("%s", str(target.number))
    return text.replace("{number}", str(target.number)).replace("{name}", target.title)


def _link(ctx: Context, text: str, target: Target, anchor: str) -> str:
    if target.docname == ctx.docname:
        return text
    return f"[{text}]({page_url(ctx, target.docname, anchor)})"


def _target(ctx: Context, label: str) -> Target:
    if label not in ctx.targets:
        raise MystError(f"{ctx.docname}: reference to unknown label {label!r}")
    return ctx.targets[label]


def _role(ctx: Context, name: str, body: str) -> str:
    if name in ("glue:text", "glue"):
        key, _, fmt = body.rpartition(":") if ":" in body else (body, "", "s")
        return glue_text(ctx, key.strip(), fmt or "s") if name == "glue:text" else _glue_any(
            ctx, body.strip())
    if name in ("glue:any", "glue:md"):
        return _glue_any(ctx, body.split(":")[0].strip())
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
    target = _target(ctx, label)
    if name == "eq":
        return _link(ctx, f"({target.number})", target, f"equation-{label}".lower())
    if name == "ref":
        return _link(ctx, text or target.title, target, label)
    return _link(ctx, _number_text(ctx, target, text), target, label)


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


def _quote(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.strip("\n").splitlines())


def _options(lines: list[str]) -> tuple[dict, list[str]]:
    """Split a directive's ``:key: value`` (or ``---`` YAML) options from its body."""
    opts, i = {}, 0
    if lines and lines[0].strip() == "---":
        end = next(j for j in range(1, len(lines)) if lines[j].strip() == "---")
        import yaml

        opts = yaml.safe_load("\n".join(lines[1:end])) or {}
        i = end + 1
    while i < len(lines) and re.match(r"^\s*:[\w-]+:", lines[i]):
        key, _, value = lines[i].strip()[1:].partition(":")
        opts[key] = value.strip()
        i += 1
    return opts, lines[i:]


def _math_block(ctx: Context, latex: str, label: str | None) -> str:
    latex = expand_macros(ctx, latex.strip())
    tag = f" \\tag{{{_target(ctx, label).number}}}" if label else ""
    return f"$$\n{latex}{tag}\n$$"


def _directive(ctx: Context, name: str, arg: str, lines: list[str]) -> str:
    opts, body_lines = _options(lines)
    body = "\n".join(body_lines).strip("\n")
    label = opts.get("label") or opts.get("name")
    if name == "math":
        return _math_block(ctx, body, label)
    if name == "glue:math":
        return _math_block(ctx, _strip_math(str(_bundle(ctx, arg)["text/latex"])), label)
    if name in ("glue:figure", "figure"):
        bundle = _bundle(ctx, arg) if name == "glue:figure" else _file_image(ctx, arg)
        img = _image(bundle, opts.get("alt", "")) or _glue_any(ctx, arg)
        caption = convert(ctx, body).strip()
        if label:
            caption = f"**{_number_text(ctx, _target(ctx, label), None)}.** {caption}".strip()
        return img + (f"\n\n{caption}" if caption else "")
    if name in ("glue", "glue:any", "glue:md"):
        return _glue_any(ctx, arg)
    if name.startswith("prf:"):
        kind = name[4:]
        head = kind.capitalize()
        if label and label in ctx.targets and ctx.targets[label].number is not None:
            head += f" {ctx.targets[label].number}"
        head = f"**{head}**" + (f" ({inline(ctx, arg)})" if arg else "")
        return _quote(f"{head}.\n\n" + convert(ctx, body) if kind != "proof" else
                      "*Proof.* " + convert(ctx, body))
    if name in ADMONITIONS:
        title = inline(ctx, arg) if name in ("admonition", "dropdown") and arg else name.capitalize()
        title = "See also" if name == "seealso" else title
        return _quote(f"**{title}**\n\n" + convert(ctx, body))
    if name == "include":
        path = (ctx.root or Path(".")) / Path(ctx.docname).parent / arg
        return convert(ctx, re.sub(r"\A---\n.*?\n---\n", "", path.read_text(), flags=re.S))
    if name in ("code-block", "code", "sourcecode", "code-cell"):
        return f"```{arg}\n{body}\n```"
    if name in ("bibliography", "toctree", "tableofcontents"):
        return ""
    if name == "table":
        caption = inline(ctx, arg)
        if label:
            caption = f"**{_number_text(ctx, _target(ctx, label), None)}.** {caption}"
        return f"{caption}\n\n{convert(ctx, body)}"
    raise MystError(f"{ctx.docname}: MyST directive {{{name}}} is not converted")


def _file_image(ctx: Context, path: str) -> dict:
    file = (ctx.root or Path(".")) / Path(ctx.docname).parent / path
    mime = {".png": "image/png", ".jpg": "image/jpeg", ".svg": "image/svg+xml"}[file.suffix]
    data = file.read_bytes()
    return {mime: data.decode() if mime.endswith("xml") else base64.b64encode(data).decode()}


def convert(ctx: Context, text: str) -> str:
    """Convert one MyST Markdown cell (or directive body) to plain Markdown.

    Raises:
        MystError: a role, directive, glue key or label the converter cannot resolve.
    """
    lines, out, i = text.splitlines(), [], 0
    para: list[str] = []

    def flush():
        if para:
            out.append(_dollar_labels(ctx, inline(ctx, "\n".join(para))))
            para.clear()

    while i < len(lines):
        line, m = lines[i], _FENCE.match(lines[i])
        if _TARGET.match(line) or re.match(r"^\s*%", line) or line.strip() == "+++":
            i += 1  # (label)= targets, MyST comments, cell breaks
            continue
        if not m:
            para.append(line)
            i += 1
            continue
        flush()
        char, n = m["fence"][0], len(m["fence"])
        end = next((j for j in range(i + 1, len(lines))
                    if re.fullmatch(rf"\s*{re.escape(char)}{{{n},}}\s*", lines[j])), len(lines))
        inner = [ln[len(m["ind"]):] if ln.startswith(m["ind"]) else ln for ln in lines[i + 1:end]]
        d = re.match(r"^\{(?P<name>[^}]+)\}\s*(?P<arg>.*)$", m["info"].strip())
        if d:
            out.append(_directive(ctx, d["name"], d["arg"].strip(), inner))
        else:
            out.append("\n".join(lines[i:end + 1]))
        i = end + 1
    flush()
    return "\n".join(out)


def _dollar_labels(ctx: Context, text: str) -> str:
    """``$$ ... $$ (label)`` (MyST dollarmath) → ``$$ ... \\tag{N} $$``."""
    def sub(m: re.Match) -> str:
        return f"\\tag{{{_target(ctx, m['label']).number}}} $$"

    return "\n".join(_DOLLAR_LABEL.sub(sub, ln) for ln in text.split("\n"))
