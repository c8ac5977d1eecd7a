"""The book pipeline: Jupytext chapters → papermill → staged tree → Jupyter Book 1 (strict).

``python -m howmany book`` (what ``make book`` calls) runs, for every chapter in ``_toc.yml``:

1. convert the Jupytext source (``book/<stem>.md``) to ``.ipynb``;
2. execute it with papermill, parameter ``PROFILE``, timing each chapter; a failing
   chapter stops the build, naming the chapter and the failing cell;
3. stage the executed notebooks beside the plain pages, ``_config.yml``, ``_toc.yml``,
   ``references.bib`` and ``_static/`` (never a source and its ``.ipynb`` together);
4. build the HTML with ``jupyter-book build -W -n --keep-going`` (execution off);
5. for a full ``default`` build, store the measured times (``howmany.buildtimes``) and
   regenerate the README's table from them.

Chapters run with progress bars off, and whatever they write to stderr (warnings, progress)
goes to a log beside the executed notebook, never into the pages. MathJax is vendored for
offline reading (``howmany.bookstage``); without npm the pages load it from the CDN.
``notebooks`` turns the executed chapters into Colab notebooks (``howmany.colab``), and
``readme-times`` rewrites the README's table of measured times. ``--backend ray`` (profile full:
``make results BACKEND=ray``) runs the sweeps and trainings on a Ray cluster first (``fullrun``).

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import buildtimes, distributed, profiles
from .bookstage import ensure_mathjax, install_mathjax, stage, tidy_executed

# Set in the kernel of every chapter: tqdm and the Hugging Face hub draw no progress bars.
KERNEL_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
              "PYDEVD_DISABLE_FILE_VALIDATION": "1"}


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


def _toc_docs(root: Path) -> list[str]:
    """The documents ``<root>/_toc.yml`` names, without their suffixes, in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    return [d.rsplit(".", 1)[0] if d.endswith((".md", ".py", ".ipynb")) else d
            for d in _toc_files(toc)]


def check_only(docs: list[str], only: list[str]) -> None:
    """Raise ``ValueError`` for a name in ``only`` that is no page of ``docs`` (path or stem)."""
    known = set(docs) | {d.split("/")[-1] for d in docs}
    unknown = [name for name in only if name not in known]
    if unknown:
        raise ValueError(f"no chapter named {', '.join(map(repr, unknown))}; chapters: "
                         + ", ".join(d.split("/")[-1] for d in docs))


def pages(root: Path, only: list[str] | None = None) -> list[Page]:
    """Every page named in ``<root>/_toc.yml``, in reading order.

    With ``only`` (a preview of some chapters), pages that do not exist yet are skipped
    unless they are among ``only``; otherwise a missing page is an error.
    """
    docs = _toc_docs(root)
    if only:
        check_only(docs, only)
    found = []
    for doc in docs:
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


@contextlib.contextmanager
def _kernel_env():
    """Environment the papermill kernel inherits (restored afterwards)."""
    saved = {k: os.environ.get(k) for k in KERNEL_ENV}
    os.environ.update(KERNEL_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def execute(src: Path | None, out: Path, profile: str, *, cwd: Path | None = None,
            notebook: Path | None = None) -> float:
    """Execute one chapter with papermill into ``out``; return the wall time in seconds.

    The chapter is the Jupytext source ``src`` or, when given, an ``.ipynb`` ``notebook``
    (e.g. a Colab notebook under test). Stderr outputs are moved to ``out.with_suffix(".log")``.

    Raises:
        ChapterFailed: naming the chapter, the failing cell and the error.
    """
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    profiles.check(profile)
    src = src or notebook
    with tempfile.TemporaryDirectory() as tmp, _kernel_env():
        plain = notebook or to_notebook(src, Path(tmp) / f"{src.stem}.ipynb")
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
    secs = time.perf_counter() - t0
    tidy_executed(out)
    return secs


def run_chapters(root: Path, profile: str, out_dir: Path, *, only: list[str] | None = None,
                 log=print, times: dict | None = None) -> dict[str, Path]:
    """Execute every notebook chapter (or those in ``only``) into ``out_dir``; print timings.

    ``times``, when given, receives each chapter's wall time in seconds (by stem).
    """
    profiles.check(profile)
    chapters = [p for p in pages(root, only) if p.is_notebook]
    if only:
        chapters = [p for p in chapters if p.docname in only or p.source.stem in only]
    executed, secs_by = {}, {} if times is None else times
    for i, page in enumerate(chapters, 1):
        out = out_dir / f"{page.docname}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        log(f"[{i}/{len(chapters)}] {page.source.relative_to(root)} (PROFILE={profile}) ...",
            flush=True)
        secs = execute(page.source, out, profile, cwd=page.source.parent)
        secs_by[page.source.stem] = secs
        stderr = out.with_suffix(".log")
        log(f"      done in {secs:.1f} s"
            + (f"; its stderr (warnings, progress) is in {stderr}" if stderr.exists() else ""),
            flush=True)
        executed[page.docname] = out
    if secs_by:
        log("chapter times: " + ", ".join(f"{d} {s:.0f}s" for d, s in secs_by.items())
            + f" (total {sum(secs_by.values()):.0f} s)")
    return executed


def build(root: Path, profile: str = "default", build_dir: Path | None = None, *,
          only: list[str] | None = None, log=print) -> Path:
    """The whole ``make book``: execute, stage, strict Jupyter Book build; return index.html.

    The HTML lands in ``<parent of build_dir>/_build/html`` (Jupyter Book appends ``_build``),
    i.e. ``_build/html`` for the default ``build_dir=<root>/_build``. A full build in the
    ``default`` profile into ``<root>/_build`` stores its times in ``data/build/times.json``
    and rewrites the README's table from them.
    """
    profiles.check(profile)
    t0 = time.perf_counter()
    default_dir = build_dir is None or build_dir.resolve() == (root / "_build").resolve()
    build_dir = build_dir or root / "_build"
    times: dict[str, float] = {}
    executed = run_chapters(root, profile, build_dir / "executed", only=only, times=times)
    mathjax = ensure_mathjax(root)
    if mathjax is None:
        log("note: npm not found or offline: MathJax will load from the CDN when pages are "
            "viewed (install Node.js/npm to vendor it for offline reading)")
    stage_dir = build_dir / "stage"
    stage(root, stage_dir, executed, offline_math=mathjax is not None, only=only)
    log(f"building HTML with jupyter-book ({'preview' if only else 'strict: -W -n --keep-going'})"
        " ...", flush=True)
    jb = Path(sys.executable).with_name("jupyter-book")
    # A preview (--only) links to chapters it leaves out, so it is built without -W.
    strict = [] if only else ["-W"]
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", *strict, "-n", "--keep-going",
           "--path-output", str(build_dir.parent), str(stage_dir)]
    env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")
    t_jb = time.perf_counter()
    res = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    jb_secs = time.perf_counter() - t_jb
    if res.returncode != 0:
        sys.stdout.write(res.stdout[-6000:])
        problems = [ln for ln in res.stdout.splitlines() if "WARNING" in ln or "ERROR" in ln]
        sys.stdout.write("".join(f"\n{ln}" for ln in problems) + "\n")  # maybe far above the tail
        raise RuntimeError("jupyter-book build failed (warnings count as errors under -W); "
                           "see the log above")
    html = build_dir.parent / "_build" / "html"
    if mathjax is not None:
        install_mathjax(mathjax, html)
    log(f"HTML: {html / 'index.html'} (jupyter-book {jb_secs:.0f} s)")
    if profile == "default" and not only and default_dir:
        path = buildtimes.write(times, profile=profile, jupyter_book_s=jb_secs,
                                total_s=time.perf_counter() - t0)
        changed = buildtimes.update_readme(root / "README.md")
        log(f"times: {path}" + ("; README table regenerated" if changed else ""))
    return html / "index.html"


def main(argv: list[str] | None = None) -> int:
    """Command line of the pipeline (``python -m howmany book ...``)."""
    import argparse

    from .myst_inline import MystError

    ap = argparse.ArgumentParser(prog="howmany book", description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["build", "execute", "notebooks", "readme-times"])
    ap.add_argument("--profile", default="default", help="smoke, default or full")
    ap.add_argument("--root", default=".", help="book root (holds _config.yml and _toc.yml)")
    ap.add_argument("--out", default=None, help="output folder")
    ap.add_argument("--only", nargs="*", default=None, help="restrict to these chapter stems")
    ap.add_argument("--build-dir", default=None,
                    help="notebooks: reuse the executed chapters of this build (default _build)")
    distributed.add_arguments(ap, inprocess="each chapter computes its results", workers="workers",
                              ray="the sweeps and trainings on a Ray cluster first (profile full)")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    out = Path(args.out).resolve() if args.out else None
    try:
        profiles.check(args.profile)
        if args.backend == "ray" and args.action in ("build", "execute"):  # chapters then read
            from . import fullrun

            fullrun.before_chapters(args.profile, distributed.from_args(args))
        if args.action == "build":
            build(root, args.profile, out, only=args.only)
        elif args.action == "execute":
            run_chapters(root, args.profile, out or root / "_build" / "executed", only=args.only)
        elif args.action == "readme-times":
            changed = buildtimes.update_readme(root / "README.md")
            path = buildtimes.times_path()
            print(f"README.md {'updated from' if changed else 'already matches'} {path}"
                  + ("" if path.exists() else " (no build stored yet)"))
        else:
            from .colab import write_notebooks

            build_dir = Path(args.build_dir).resolve() if args.build_dir else None
            for path in write_notebooks(root, out or root / "notebooks", args.profile,
                                        build_dir=build_dir, only=args.only):
                print(path)
    except (profiles.ProfileError, ChapterFailed, FileNotFoundError, RuntimeError,
            MystError, ValueError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
