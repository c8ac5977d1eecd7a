"""MyST Markdown → plain Markdown, for notebooks read outside the book (Colab, Jupyter).

Colab renders CommonMark with ``$...$`` math, not MyST: roles (``{cite}`...` ``,
``{glue:text}`...` ``) and directives (```` ```{prf:theorem} ````) show as source there.
:func:`convert` rewrites one Markdown cell with what the built HTML shows instead. This module
handles the blocks: theorems and admonitions become block quotes, glued and file figures
images with their numbered captions, labelled math ``$$...\\tag{N}$$``, ``{include}`` the
included page; the text inside them goes through :mod:`howmany.myst_inline` (roles, glued
values, citations, references, macros). Anything it does not know raises
:class:`~howmany.myst_inline.MystError`, so no MyST syntax is left behind silently.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

from .myst_inline import (Context, MystError, expand_macros, glue_any, glue_bundle, image_markdown,
                          inline, number_text, resolve, strip_math)

ADMONITIONS = ("note", "tip", "hint", "important", "warning", "caution", "attention", "danger",
               "error", "seealso", "margin", "sidebar", "epigraph", "admonition", "dropdown")
_FENCE = re.compile(r"^(?P<ind>\s*)(?P<fence>`{3,}|:{3,}|~{3,})(?P<info>.*)$")
_TARGET = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
DOLLAR_LABEL = re.compile(r"\$\$\s*\((?P<label>[^()\s]+)\)\s*$")  # MyST dollarmath label


def _quote(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.strip("\n").splitlines())


def options(lines: list[str]) -> tuple[dict, list[str]]:
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
    tag = f" \\tag{{{resolve(ctx, label).number}}}" if label else ""
    return f"$$\n{latex}{tag}\n$$"


def _directive(ctx: Context, name: str, arg: str, lines: list[str]) -> str:
    opts, body_lines = options(lines)
    body = "\n".join(body_lines).strip("\n")
    label = opts.get("label") or opts.get("name")
    if name == "math":
        return _math_block(ctx, body, label)
    if name == "glue:math":
        return _math_block(ctx, strip_math(str(glue_bundle(ctx, arg)["text/latex"])), label)
    if name in ("glue:figure", "figure"):
        bundle = glue_bundle(ctx, arg) if name == "glue:figure" else _file_image(ctx, arg)
        img = image_markdown(bundle, opts.get("alt", "")) or glue_any(ctx, arg)
        caption = convert(ctx, body).strip()
        if label:
            caption = f"**{number_text(ctx, resolve(ctx, label), None)}.** {caption}".strip()
        return img + (f"\n\n{caption}" if caption else "")
    if name in ("glue", "glue:any", "glue:md"):
        return glue_any(ctx, arg)
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
            caption = f"**{number_text(ctx, resolve(ctx, label), None)}.** {caption}"
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
        return f"\\tag{{{resolve(ctx, m['label']).number}}} $$"

    return "\n".join(DOLLAR_LABEL.sub(sub, ln) for ln in text.split("\n"))
