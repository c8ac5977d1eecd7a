"""Staging the book for Jupyter Book, and the offline MathJax the pages load.

The staged tree (``_build/stage``) holds ``_config.yml``, ``_toc.yml``, ``references.bib``,
``_static/``, the plain pages and the *executed* notebooks (never a source and its ``.ipynb``
together). Executed notebooks lose their stderr streams (warnings, progress bars) on the way:
those go to a log beside the notebook (:func:`tidy_executed`, run by ``bookbuild.execute``).

MathJax is vendored from the npm package into ``_build/_vendor/mathjax`` and copied into
``_build/html/_static/mathjax`` *after* the HTML build: Jupyter Book adds every ``.js`` file
found under a static path as a ``<script>`` tag, so a vendored copy inside ``_static`` would be
loaded file by file on every page instead of once, by Sphinx's ``mathjax_path``.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import yaml

MATHJAX_VERSION = "3.2.2"
# The parts of MathJax's es5 bundle the pages load: the TeX→CommonHTML component, the TeX
# extensions it autoloads, its fonts, and the context menu (about 3 MB of the 24 MB package).
MATHJAX_PARTS = ("tex-chtml.js", "input/tex/extensions/", "output/chtml/", "ui/", "a11y/")
VENDOR = Path("_build") / "_vendor" / "mathjax"  # relative to the book root
BUILD_ONLY_KEYS = ("colab",)  # _config.yml sections read by the pipeline, not Jupyter Book


def ensure_mathjax(root: Path) -> Path | None:
    """Vendor MathJax (npm package ``mathjax``) into ``<root>/_build/_vendor/mathjax``.

    Returns:
        The folder holding ``tex-chtml.js``, or None when npm is missing or offline.
    """
    target = root / VENDOR
    if (target / "tex-chtml.js").exists():
        return target
    npm = shutil.which("npm")
    if npm is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run([npm, "pack", f"mathjax@{MATHJAX_VERSION}", "--silent",
                              "--pack-destination", tmp], capture_output=True, text=True)
        tgz = list(Path(tmp).glob("mathjax-*.tgz"))
        if res.returncode != 0 or not tgz:
            return None
        with tarfile.open(tgz[0]) as tar:
            for member in tar.getmembers():
                rel = member.name[len("package/es5/"):]
                if (member.isfile() and member.name.startswith("package/es5/")
                        and rel.startswith(MATHJAX_PARTS)):
                    dest = target / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(tar.extractfile(member).read())
    return target if (target / "tex-chtml.js").exists() else None


def install_mathjax(vendored: Path, html_dir: Path) -> None:
    """Copy the vendored MathJax where ``mathjax_path`` points (``_static/mathjax``)."""
    dest = html_dir / "_static" / "mathjax"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(vendored, dest)


def _filter_toc(toc: dict, keep: set[str]) -> dict:
    """The toc restricted to the root and the pages in ``keep`` (empty parts dropped)."""
    parts = []
    for part in toc.get("parts", []):
        chapters = [c for c in part.get("chapters", []) if c.get("file") in keep]
        if chapters:
            parts.append({**part, "chapters": chapters})
    return {**toc, "parts": parts}


def strip_stderr(nb) -> list[str]:
    """Remove stderr streams from a notebook's outputs; return their texts (for the log)."""
    texts = []
    for cell in nb.cells:
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                texts.append(out.get("text", ""))
            else:
                kept.append(out)
        if "outputs" in cell:
            cell.outputs = kept
    return texts


def _plain(caption: str) -> str:
    """A caption as a screen reader should say it: inline math without TeX markup."""
    def math(mt):
        text = re.sub(r"\\([A-Za-z]+)", r"\1", mt.group(1))  # \varepsilon -> varepsilon
        return re.sub(r"[{}]", "", text).replace("_", " ").replace("^", " to the ")
    return re.sub(r"\s+", " ", re.sub(r"\$([^$]*)\$", math, caption)).strip()


def alt_texts(nb) -> int:
    """Give every captioned figure cell an image alt text, its caption in plain words, unless
    the cell sets one (``mystnb: image: alt``); otherwise a figure's alt text is its file name.
    Returns how many cells got one.

    Explained in: book/reproducibility.md
    """
    added = 0
    for cell in nb.cells:
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        caption = mystnb.get("figure", {}).get("caption")
        if cell.get("cell_type") == "code" and caption and "alt" not in mystnb.get("image", {}):
            mystnb.setdefault("image", {})["alt"] = _plain(str(caption))
            added += 1
    return added


def tidy_executed(path: Path) -> Path | None:
    """Tidy an executed notebook in place: hide papermill's injected cell, move its stderr
    outputs to ``<path>.log`` (returned, None when there were none), give captioned figures
    their alt text (:func:`alt_texts`).

    Explained in: book/reproducibility.md
    """
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    texts = strip_stderr(nb)
    alt_texts(nb)
    nbformat.write(nb, path)
    log = path.with_suffix(".log")
    log.unlink(missing_ok=True)
    if texts:
        log.write_text("".join(texts), encoding="utf-8")
        return log
    return None


def stage(root: Path, stage_dir: Path, executed: dict[str, Path], *, offline_math: bool,
          only: list[str] | None = None) -> None:
    """Assemble the tree Jupyter Book builds: config, toc, bib, static files, pages.

    With ``only`` (chapter stems), the staged toc keeps just those chapters (a quick
    preview of one chapter while writing it).
    """
    from .bookbuild import pages

    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    config = yaml.safe_load((root / "_config.yml").read_text())
    for key in BUILD_ONLY_KEYS:
        config.pop(key, None)
    if not offline_math:
        config.get("sphinx", {}).get("config", {}).pop("mathjax_path", None)
    (stage_dir / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    keep = {p.docname for p in pages(root, only)
            if not only or p.docname in only or p.source.stem in only or not p.is_notebook}
    if only:
        toc = _filter_toc(toc, keep)
    (stage_dir / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    shutil.copy2(root / "references.bib", stage_dir / "references.bib")
    if (root / "_static").is_dir():  # an old vendored copy there would be auto-included
        shutil.copytree(root / "_static", stage_dir / "_static",
                        ignore=shutil.ignore_patterns("mathjax"))
    for page in pages(root, only):
        if page.docname not in keep:
            continue
        if page.is_notebook:
            dest = stage_dir / f"{page.docname}.ipynb"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(executed[page.docname], dest)
        else:
            dest = stage_dir / page.source.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(page.source, dest)
    for extra in ("book/_admonitions", "book/images"):
        if (root / extra).is_dir():
            shutil.copytree(root / extra, stage_dir / extra)
