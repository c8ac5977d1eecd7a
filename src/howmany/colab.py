"""Executed chapters → notebooks that read like the book on Colab.

``make notebooks`` (``python -m howmany book notebooks``) turns each executed chapter into a
plain notebook: the outputs of that build are kept, every Markdown cell goes through
:mod:`howmany.myst_md` (glued numbers, citations, numbered references, theorems, captions),
spaces that must not break ("18 %", "m = 2") are bound as in the HTML (:mod:`howmany.typography`),
a reference list closes the notebook, and the first cell installs the package pinned to the
commit the outputs were computed from (only on Colab, where ``google.colab`` is imported).

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import copy
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import bibstyle, myst_inline, myst_md, profiles, typography
from .myst_inline import GLUE_PREFIX, Context, Target

COLAB_DATA = "/content/howmany"  # where the install cell clones the repository (for data/)
GPU_ADMONITION = "_admonitions/gpu.md"  # a chapter including it asks Colab for a GPU
# Sphinx's numfig_format defaults, overridden by sphinx.config.numfig_format in _config.yml.
NUMFIG_FORMAT = {"figure": "Fig. %s", "table": "Table %s", "code-block": "Listing %s",
                 "section": "Section %s"}
_OPEN = re.compile(r"^\s*(`{3,}|:{3,})\{(?P<name>[^}]+)\}\s*(?P<arg>.*)$")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")


@dataclass(frozen=True)
class BookInfo:
    """What every notebook's conversion needs to know about the whole book."""

    targets: dict  # label -> myst_inline.Target, numbered as Sphinx numbers them
    titles: dict  # docname -> page title (first heading)
    base_url: str  # online book (html.baseurl of _config.yml)
    repo_url: str  # repository.url of _config.yml
    macros: dict  # TeX macros of sphinx.config.mathjax3_config
    formats: dict  # numfig_format: kind -> "Figure %s"
    gpu_chapters: tuple  # chapter stems asking Colab for a GPU (besides GPU_ADMONITION users)
    bib: dict  # bibtex key -> pybtex Entry


def _cells(page) -> list[tuple[str, str, dict]]:
    """(cell type, source, metadata) of a page, notebook or plain Markdown."""
    if not page.is_notebook:
        return [("markdown", page.source.read_text(encoding="utf-8"), {})]
    import jupytext

    nb = jupytext.read(page.source)
    return [(c.cell_type, c.source, c.metadata) for c in nb.cells]


def book_info(root: Path, pages: list) -> BookInfo:
    """Index the book in reading order: labels with their Sphinx numbers, page titles, config.

    Figures, tables, labelled equations and each ``prf`` type are numbered book-wide in the
    order of ``_toc.yml`` (Sphinx numfig without numbered sections, as the built HTML shows).
    """
    config = yaml.safe_load((root / "_config.yml").read_text())
    sphinx = (config.get("sphinx") or {}).get("config") or {}
    counters: dict[str, int] = {}
    targets, titles = {}, {}

    def number(kind: str, label: str | None, doc: str, title: str = "") -> None:
        counters[kind] = counters.get(kind, 0) + 1
        if label:
            targets[label] = Target(doc, kind, counters[kind], title)

    for page in pages:
        pending: list[str] = []
        for ctype, source, meta in _cells(page):
            if ctype == "code":
                fig = (meta.get("mystnb") or {}).get("figure") or {}
                if fig.get("name"):
                    number("figure", fig["name"], page.docname)
                continue
            lines = source.splitlines()
            for i, line in enumerate(lines):
                if m := re.match(r"^\s*\((?P<label>[^()\s]+)\)=\s*$", line):
                    pending.append(m["label"])
                elif (h := _HEADING.match(line)) and not line.startswith("    "):
                    titles.setdefault(page.docname, h["title"])
                    for label in pending:
                        targets[label] = Target(page.docname, "section", None, h["title"])
                    pending.clear()
                elif m := _OPEN.match(line):
                    opts, _ = myst_md.options(lines[i + 1:])
                    label = opts.get("label") or opts.get("name")
                    kind = _kind(m["name"])
                    if kind and "nonumber" not in opts and (label or kind not in (
                            "figure", "table", "equation")):
                        number(kind, label, page.docname, m["arg"].strip())
                elif m := myst_md.DOLLAR_LABEL.search(line):
                    number("equation", m["label"], page.docname)
    repo_url = str((config.get("repository") or {}).get("url", ""))
    base_url = (config.get("html") or {}).get("baseurl") or _pages_url(repo_url)
    return BookInfo(targets, titles, base_url, repo_url,
                    _macros(sphinx), {**NUMFIG_FORMAT, **(sphinx.get("numfig_format") or {})},
                    tuple((config.get("colab") or {}).get("gpu_chapters") or ()),
                    bibstyle.bibliography(root))


def _pages_url(repo_url: str) -> str:
    """``https://github.com/org/repo`` → ``https://org.github.io/repo/`` (GitHub Pages)."""
    m = re.match(r"https://github\.com/(?P<org>[^/]+)/(?P<repo>[^/]+?)/?$", repo_url)
    return f"https://{m['org']}.github.io/{m['repo']}/" if m else ""


def _kind(directive: str) -> str | None:
    if directive in ("math", "glue:math"):
        return "equation"
    if directive in ("figure", "glue:figure"):
        return "figure"
    if directive in ("table", "list-table", "csv-table"):
        return "table"
    if directive.startswith("prf:") and directive != "prf:proof":
        return directive[4:]
    return None


def _macros(sphinx: dict) -> dict:
    raw = ((sphinx.get("mathjax3_config") or {}).get("tex") or {}).get("macros") or {}
    return {k: v for k, v in raw.items() if isinstance(v, str)}


def install_cell(repo_url: str, commit: str) -> str:
    """Source of the first cell: on Colab, the package and ``data/`` at ``commit``."""
    return (
        "# On Colab: install the book's package and its stored results at the commit whose\n"
        "# outputs this notebook shows (elsewhere, install it with `make install`).\n"
        "import os\nimport sys\n\n"
        'if "google.colab" in sys.modules:\n'
        f'    %pip install -q "howmany @ git+{repo_url}@{commit}"\n'
        f"    !git clone -q {repo_url} {COLAB_DATA} && git -C {COLAB_DATA} checkout -q {commit}\n"
        f'    os.environ["HOWMANY_DATA"] = "{COLAB_DATA}/data"'
    )


def glue_data(nb) -> dict:
    """Glue key → mime bundle (prefix stripped), from an executed notebook's outputs."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            meta = (o.get("metadata") or {}).get("scrapbook")
            if meta:
                n = len(meta.get("mime_prefix", ""))
                out[meta["name"]] = {k[n:]: v for k, v in o.get("data", {}).items()}
    return out


def _is_old_installer(cell) -> bool:
    """The chapter's own Colab cell (or an install cell of an earlier conversion)."""
    return (cell.cell_type == "code" and "google.colab" in cell.source
            and "pip install" in cell.source)


def _reader_outputs(outputs: list) -> list:
    """Outputs a reader sees: no stderr, no hidden glue records."""
    return [o for o in outputs
            if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
            and not any(k.startswith(GLUE_PREFIX) for k in o.get("data", {}))]


def convert(nb, *, docname: str, info: BookInfo, commit: str, root: Path,
            keep_injected: bool = False, markdown: bool = True, repo_url: str | None = None):
    """The Colab notebook of one executed chapter (a new ``NotebookNode``).

    The chapter's own Colab cell (a code cell installing on ``google.colab``) gives way to
    :func:`install_cell`. ``markdown=False`` leaves Markdown as it is (a chapter to be
    executed first, whose glue values do not exist yet); ``repo_url`` overrides the one of
    ``_config.yml`` (a local clone, in the tests).

    Raises:
        myst_inline.MystError: a MyST construct that cannot be converted.
    """
    import nbformat

    cites = bibstyle.Citations(info.bib)
    ctx = Context(docname, glue_data(nb), info.targets, info.titles, info.base_url, cites,
                  info.macros, info.formats, root)
    cells = [nbformat.v4.new_code_cell(install_cell(repo_url or info.repo_url, commit))]
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if _is_old_installer(cell) or ("injected-parameters" in tags and not keep_injected):
            continue
        cell = copy.deepcopy(cell)
        cell.metadata["tags"] = [t for t in tags if t != "remove-cell"]
        cell.metadata.pop("papermill", None)
        if cell.cell_type == "markdown" and markdown:
            cell.source = typography.bind_markdown(myst_md.convert(ctx, cell.source))
            cells.append(cell)
            continue
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        cell.outputs = _reader_outputs(cell.get("outputs", []))
        for output in cell.outputs:  # tables from data: "95 %" stays on one line
            if markdown and "text/html" in output.get("data", {}):
                html = output["data"]["text/html"]
                output["data"]["text/html"] = typography.bind_html(
                    html if isinstance(html, str) else "".join(html))
        fig = (cell.metadata.get("mystnb") or {}).get("figure") or {}
        if markdown and (fig.get("caption") or fig.get("name")):
            head = (myst_inline.number_text(ctx, info.targets[fig["name"]], None)
                    if fig.get("name") else "")
            caption = myst_inline.inline(ctx, str(fig.get("caption", "")))
            caption = typography.bind_markdown(caption)
            cells.append(nbformat.v4.new_markdown_cell(f"**{head}.** {caption}".strip()
                                                       if head else caption))
    if markdown and cites.cited:
        cells.append(nbformat.v4.new_markdown_cell(cites.reference_list()))
    out = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(nb.metadata))
    out.metadata.pop("papermill", None)
    out.metadata.pop("jupytext", None)
    out.metadata["colab"] = {"provenance": [], "toc_visible": True}
    gpu_note = any(c.cell_type == "markdown" and GPU_ADMONITION in c.source for c in nb.cells)
    if Path(docname).name in info.gpu_chapters or gpu_note:
        out.metadata["accelerator"] = "GPU"
        out.metadata["colab"]["gpuType"] = "T4"
    out.metadata["howmany"] = {"commit": commit, "page": myst_inline.page_url(ctx, docname)}
    return out


def _commit(root: Path) -> tuple[str, bool]:
    """HEAD of the checkout and whether tracked files differ from it."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()

    return git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--untracked-files=no"))


def write_notebooks(root: Path, out_dir: Path, profile: str = "default", *,
                    build_dir: Path | None = None, commit: str | None = None,
                    only: list[str] | None = None, log=print) -> list[Path]:
    """Colab notebooks of every chapter (executed, MyST turned into Markdown) into ``out_dir``.

    Reuses the executed notebooks of the last build (``<build_dir>/executed``) when they were
    run in ``profile`` and are newer than their source; executes the others. The install cell
    pins ``commit`` (default: the checkout's HEAD).

    Raises:
        myst_inline.MystError: a chapter holds MyST the converter cannot turn into Markdown.
    """
    import nbformat

    from .bookbuild import check_only, execute, pages

    profiles.check(profile)
    all_pages = pages(root)
    if only:
        check_only([p.docname for p in all_pages], only)
    build_dir = build_dir or root / "_build"
    if commit is None:
        commit, dirty = _commit(root)
        if dirty:
            log(f"note: uncommitted changes; the notebooks pin {commit[:8]}, which lacks them")
    info = book_info(root, all_pages)
    written = []
    for page in all_pages:
        if not page.is_notebook or (only and page.source.stem not in only):
            continue
        done = build_dir / "executed" / f"{page.docname}.ipynb"
        fresh = done.exists() and done.stat().st_mtime > page.source.stat().st_mtime
        nb = nbformat.read(done, as_version=4) if fresh else None
        if nb is None or (nb.metadata.get("papermill", {}).get("parameters", {})
                          .get("PROFILE") != profile):
            log(f"executing {page.source.relative_to(root)} (PROFILE={profile}) ...", flush=True)
            done.parent.mkdir(parents=True, exist_ok=True)
            execute(page.source, done, profile, cwd=page.source.parent)
            nb = nbformat.read(done, as_version=4)
        out = convert(nb, docname=page.docname, info=info, commit=commit, root=root,
                            keep_injected=profile != "default")
        out_dir.mkdir(parents=True, exist_ok=True)
        nbformat.write(out, out_dir / f"{page.source.stem}.ipynb")
        written.append(out_dir / f"{page.source.stem}.ipynb")
    return written
