"""The book pipeline: Jupytext chapters → papermill → staged tree → Jupyter Book 1 (strict).

``python -m howmany book`` (what ``make book`` calls) runs, for every chapter in ``_toc.yml``:

1. convert the Jupytext source (``book/<stem>.md``) to ``.ipynb``;
2. execute it with papermill, parameter ``PROFILE``, timing each chapter; a failing
   chapter stops the build, naming the chapter and the failing cell;
3. stage the executed notebooks beside the plain pages, ``_config.yml``, ``_toc.yml``,
   ``references.bib`` and ``_static/`` (never a source and its ``.ipynb`` together);
4. build the HTML with ``jupyter-book build -W -n --keep-going`` (execution off).

MathJax is vendored from the npm package into ``_static/mathjax`` so that pages typeset
their math without internet; without npm the build falls back to the CDN with a note.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import profiles

MATHJAX_VERSION = "3.2.2"
# The parts of MathJax's es5 bundle the pages load: the TeX→CommonHTML component, the TeX
# extensions it autoloads, its fonts, and the context menu (about 3 MB of the 24 MB package).
MATHJAX_PARTS = ("tex-chtml.js", "input/tex/extensions/", "output/chtml/", "ui/", "a11y/")


class ChapterFailed(RuntimeError):
    """A chapter raised while papermill executed it."""


@dataclass(frozen=True)
class Page:
    """One entry of the table of contents."""

    docname: str  # e.g. "book/cramming"
    source: Path  # the file on disk
    is_notebook: bool  # a Jupytext notebook (has a kernelspec) rather than a plain page


def _toc_files(node) -> list[str]:
    out = []
    if isinstance(node, dict):
        if "file" in node:
            out.append(node["file"])
        if "root" in node:
            out.append(node["root"])
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                out.extend(_toc_files(child))
    return out


def _is_jupytext(path: Path) -> bool:
    head = path.read_text(encoding="utf-8")[:2000]
    return path.suffix == ".py" or ("kernelspec:" in head and "jupytext:" in head)


def pages(root: Path, only: list[str] | None = None) -> list[Page]:
    """Every page named in ``<root>/_toc.yml``, in reading order.

    With ``only`` (a preview of some chapters), pages that do not exist yet are skipped
    unless they are among ``only``; otherwise a missing page is an error.
    """
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found = []
    for doc in _toc_files(toc):
        doc = doc.rsplit(".", 1)[0] if doc.endswith((".md", ".py", ".ipynb")) else doc
        candidates = [root / f"{doc}{ext}" for ext in (".md", ".py")]
        src = next((c for c in candidates if c.exists()), None)
        if src is None and only and doc not in only and doc.split("/")[-1] not in only:
            continue
        if src is None:
            raise FileNotFoundError(f"_toc.yml names {doc!r} but neither {doc}.md nor {doc}.py exists")
        found.append(Page(doc, src, _is_jupytext(src)))
    return found


def to_notebook(src: Path, out: Path) -> Path:
    """Convert a Jupytext chapter to a plain (unexecuted) ``.ipynb``."""
    import jupytext

    out.parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(src)
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3",
                                          "language": "python"})
    jupytext.write(nb, out, fmt="ipynb")
    return out


def _hide_injected(path: Path) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    nbformat.write(nb, path)


def execute(src: Path, out: Path, profile: str, *, cwd: Path | None = None) -> float:
    """Execute one chapter with papermill into ``out``; return the wall time in seconds.

    Raises:
        ChapterFailed: naming the chapter, the failing cell and the error.
    """
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    profiles.check(profile)
    with tempfile.TemporaryDirectory() as tmp:
        plain = to_notebook(src, Path(tmp) / f"{src.stem}.ipynb")
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(str(plain), str(out), parameters={"PROFILE": profile},
                                cwd=str(cwd or src.parent), kernel_name="python3",
                                progress_bar=False, log_output=False)
        except PapermillExecutionError as err:
            first = (err.source or "").strip().splitlines()[:3]
            raise ChapterFailed(
                f"chapter {src} failed in cell {err.cell_index} (execution count "
                f"{err.exec_count}): {err.ename}: {err.evalue}\n    "
                + "\n    ".join(first) + f"\n  partial output: {out}") from None
    _hide_injected(out)
    return time.perf_counter() - t0


def ensure_mathjax(root: Path) -> bool:
    """Vendor MathJax (npm package ``mathjax``) into ``_static/mathjax``; False if impossible."""
    target = root / "_static" / "mathjax"
    if (target / "tex-chtml.js").exists():
        return True
    npm = shutil.which("npm")
    if npm is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run([npm, "pack", f"mathjax@{MATHJAX_VERSION}", "--silent",
                              "--pack-destination", tmp], capture_output=True, text=True)
        tgz = list(Path(tmp).glob("mathjax-*.tgz"))
        if res.returncode != 0 or not tgz:
            return False
        with tarfile.open(tgz[0]) as tar:
            for member in tar.getmembers():
                rel = member.name[len("package/es5/"):]
                if (member.isfile() and member.name.startswith("package/es5/")
                        and rel.startswith(MATHJAX_PARTS)):
                    dest = target / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(tar.extractfile(member).read())
    return (target / "tex-chtml.js").exists()


def _filter_toc(toc: dict, keep: set[str]) -> dict:
    """The toc restricted to the root and the pages in ``keep`` (empty parts dropped)."""
    parts = []
    for part in toc.get("parts", []):
        chapters = [c for c in part.get("chapters", []) if c.get("file") in keep]
        if chapters:
            parts.append({**part, "chapters": chapters})
    return {**toc, "parts": parts}


def stage(root: Path, stage_dir: Path, executed: dict[str, Path], *, offline_math: bool,
          only: list[str] | None = None) -> None:
    """Assemble the tree Jupyter Book builds: config, toc, bib, static files, pages.

    With ``only`` (chapter stems), the staged toc keeps just those chapters (a quick
    preview of one chapter while writing it).
    """
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    config = yaml.safe_load((root / "_config.yml").read_text())
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
    if (root / "_static").is_dir():
        shutil.copytree(root / "_static", stage_dir / "_static")
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


def run_chapters(root: Path, profile: str, out_dir: Path, *, only: list[str] | None = None,
                 log=print) -> dict[str, Path]:
    """Execute every notebook chapter (or those in ``only``) into ``out_dir``; print timings."""
    profiles.check(profile)
    chapters = [p for p in pages(root, only) if p.is_notebook]
    if only:
        chapters = [p for p in chapters if p.docname in only or p.source.stem in only]
    executed, times = {}, []
    for i, page in enumerate(chapters, 1):
        out = out_dir / f"{page.docname}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        log(f"[{i}/{len(chapters)}] {page.source.relative_to(root)} (PROFILE={profile}) ...",
            flush=True)
        secs = execute(page.source, out, profile, cwd=page.source.parent)
        times.append((page.docname, secs))
        log(f"      done in {secs:.1f} s", flush=True)
        executed[page.docname] = out
    if times:
        log("chapter times: " + ", ".join(f"{d.split('/')[-1]} {s:.0f}s" for d, s in times)
            + f" (total {sum(s for _, s in times):.0f} s)")
    return executed


def build(root: Path, profile: str = "default", build_dir: Path | None = None, *,
          only: list[str] | None = None, log=print) -> Path:
    """The whole ``make book``: execute, stage, strict Jupyter Book build; return index.html.

    The HTML lands in ``<parent of build_dir>/_build/html`` (Jupyter Book appends ``_build``),
    i.e. ``_build/html`` for the default ``build_dir=<root>/_build``.
    """
    profiles.check(profile)
    build_dir = build_dir or root / "_build"
    executed = run_chapters(root, profile, build_dir / "executed", only=only)
    offline_math = ensure_mathjax(root)
    if not offline_math:
        log("note: npm not found or offline: MathJax will load from the CDN when pages are "
            "viewed (install Node.js/npm to vendor it for offline reading)")
    stage_dir = build_dir / "stage"
    stage(root, stage_dir, executed, offline_math=offline_math, only=only)
    log(f"building HTML with jupyter-book ({'preview' if only else 'strict: -W -n --keep-going'})"
        " ...", flush=True)
    jb = Path(sys.executable).with_name("jupyter-book")
    # A preview (--only) links to chapters it leaves out, so it is built without -W.
    strict = [] if only else ["-W"]
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", *strict, "-n", "--keep-going",
           "--path-output", str(build_dir.parent), str(stage_dir)]
    env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")
    res = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.stdout.write(res.stdout[-6000:])
        raise RuntimeError("jupyter-book build failed (warnings count as errors under -W); "
                           "see the log above")
    index = build_dir.parent / "_build" / "html" / "index.html"
    log(f"HTML: {index}")
    return index


def write_notebooks(root: Path, out_dir: Path) -> list[Path]:
    """Plain, unexecuted ``.ipynb`` of every chapter (for Colab) into ``out_dir``."""
    return [to_notebook(p.source, out_dir / f"{p.source.stem}.ipynb")
            for p in pages(root) if p.is_notebook]


def main(argv: list[str] | None = None) -> int:
    """Command line of the pipeline (``python -m howmany book ...``)."""
    import argparse

    ap = argparse.ArgumentParser(prog="howmany book", description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["build", "execute", "notebooks"])
    ap.add_argument("--profile", default="default", help="smoke, default or full")
    ap.add_argument("--root", default=".", help="book root (holds _config.yml and _toc.yml)")
    ap.add_argument("--out", default=None, help="output folder")
    ap.add_argument("--only", nargs="*", default=None, help="restrict to these chapter stems")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    try:
        profiles.check(args.profile)
        if args.action == "build":
            build(root, args.profile, Path(args.out).resolve() if args.out else None,
                  only=args.only)
        elif args.action == "execute":
            run_chapters(root, args.profile, Path(args.out or root / "_build" / "executed"),
                         only=args.only)
        else:
            for path in write_notebooks(root, Path(args.out or root / "notebooks")):
                print(path)
    except (profiles.ProfileError, ChapterFailed, FileNotFoundError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
