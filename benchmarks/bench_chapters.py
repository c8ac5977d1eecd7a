"""Chapter times in a profile against that profile's per-chapter budget.

Every executable chapter of the book runs in the given profile (``smoke`` by default: a fresh
temporary results store, tiny models), one after another in this process's machine, and its
wall time is printed beside ``profiles.get(profile).max_chapter_minutes``. The exit status is 1
when a chapter runs over its budget times ``--slack``, so the script can gate a release; the
unit tests only check that every chapter runs, never how long it takes.

Usage::

    python benchmarks/bench_chapters.py                      # every chapter, smoke profile
    python benchmarks/bench_chapters.py --only cramming copying --slack 1

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from howmany import bookbuild, profiles
from howmany.paths import repo_root


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="smoke", choices=profiles.PROFILES)
    ap.add_argument("--only", nargs="*", help="chapter names (default: every chapter)")
    ap.add_argument("--slack", type=float, default=1.0,
                    help="allowed factor over the budget (a busy shared machine: 2)")
    args = ap.parse_args(argv)
    root = repo_root()
    pages = [p for p in bookbuild.pages(root) if p.is_notebook
             and (not args.only or p.source.stem in args.only)]
    if not pages:
        raise SystemExit(f"no chapter named {' or '.join(args.only or [])}")
    budget = profiles.get(args.profile).max_chapter_minutes
    over = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("HOWMANY_STORE", str(Path(tmp) / "store"))
        os.environ.setdefault("HOWMANY_NO_SAVE_FIGS", "1")
        for page in pages:
            minutes = bookbuild.execute(page.source, Path(tmp) / f"{page.source.stem}.ipynb",
                                        args.profile) / 60
            flag = "over" if minutes > budget * args.slack else "ok"
            print(f"{page.source.stem:16s} {minutes:6.2f} min  (budget {budget:g}, {flag})",
                  flush=True)
            if flag == "over":
                over.append(page.source.stem)
    if over:
        print(f"over budget: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
