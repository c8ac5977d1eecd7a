"""Measured build times: each chapter's wall time and the machine it ran on.

A full ``make book`` (profile ``default``) writes ``data/build/times.json``, a results-store
record (``config``, ``result``, ``provenance``) holding the wall time of every chapter, of the
Jupyter Book step and of the whole build, with the CPU model, cores, memory and GPU.
The README's table (between the ``build-times`` markers) and the reproducibility chapter are
generated from that file, so no run time is ever typed: ``python -m howmany book readme-times``
rewrites the table, and a test fails when it disagrees with the stored file.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from .paths import data_dir
from .provenance import cpu_model

START, END = "<!-- build-times:start -->", "<!-- build-times:end -->"


def times_path() -> Path:
    """Where the last full default build's times are stored (``data/build/times.json``)."""
    return data_dir() / "build" / "times.json"


def machine() -> dict:
    """CPU model, logical cores, memory (GB) and GPU name(s) of this machine."""
    cpu, mem_gb = cpu_model(), None
    try:
        kb = next(int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines()
                  if ln.startswith("MemTotal"))
        mem_gb = round(kb / 2**20, 1)
    except (OSError, StopIteration, ValueError):
        pass
    gpu = None
    if shutil.which("nvidia-smi"):
        res = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True)
        names = [n.strip() for n in res.stdout.splitlines() if n.strip()]
        gpu = ", ".join(names) if res.returncode == 0 and names else None
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb, "gpu": gpu}


def write(chapters: dict[str, float], *, profile: str, jupyter_book_s: float,
          total_s: float | None = None, path: Path | None = None) -> Path:
    """Store one build's times (seconds per chapter stem) with the machine and provenance."""
    from . import results

    total = total_s if total_s is not None else sum(chapters.values()) + jupyter_book_s
    record = {
        "config": {"profile": profile, "chapters": list(chapters)},
        "result": {"chapters_s": {k: round(v, 1) for k, v in chapters.items()},
                   "jupyter_book_s": round(jupyter_book_s, 1), "total_s": round(total, 1),
                   "machine": machine()},
        "provenance": results.provenance(wall_s=total),
    }
    return results.atomic_write_json(path or times_path(), record)


def load(path: Path | None = None) -> dict | None:
    """The stored build times, or None when no full build has been stored yet."""
    path = path or times_path()
    return json.loads(path.read_text()) if path.exists() else None


def chapter_seconds(stem: str, path: Path | None = None) -> float | None:
    """Wall time of one chapter in the last stored build (None if not stored)."""
    rec = load(path)
    return None if rec is None else rec["result"]["chapters_s"].get(stem)


def fmt_duration(seconds: float) -> str:
    """``754.2`` → ``"12 min 34 s"``; under a minute, ``"42 s"``."""
    s = round(seconds)
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


def describe_machine(m: dict) -> str:
    """One line: ``"AMD EPYC 7B13 (2 cores, 23.5 GB, no GPU)"``."""
    mem = f", {m['memory_gb']} GB" if m.get("memory_gb") else ""
    return f"{m['cpu']} ({m['cores']} cores{mem}, {m['gpu'] or 'no GPU'})"


def _table(rec: dict) -> tuple[str, list[tuple[str, str, bool]]]:
    """The caption line and the rows ``(step, wall time, is_total)`` of the measured times."""
    res, prov = rec["result"], rec["provenance"]
    commit = (prov.get("git_commit") or "unknown")[:8] + (" (uncommitted changes)"
                                                          if prov.get("git_dirty") else "")
    caption = (f"Measured by `make book` (profile `{rec['config']['profile']}`) on "
               f"{prov['utc_time'][:10]}, commit {commit}, on {describe_machine(res['machine'])}:")
    rows = [(f"chapter `{stem}`", fmt_duration(s), False) for stem, s in res["chapters_s"].items()]
    rows += [("Jupyter Book (HTML)", fmt_duration(res["jupyter_book_s"]), False),
             ("`make book`, total", fmt_duration(res["total_s"]), True)]
    return caption, rows


NO_BUILD = ("No full build has been measured yet: `make book` stores its times in "
            "`data/build/times.json` and fills this table.")


def table_markdown(rec: dict | None) -> str:
    """The README's table of measured times (or a line saying none is stored yet)."""
    if rec is None:
        return NO_BUILD
    caption, rows = _table(rec)
    bold = lambda c, b: f"**{c}**" if b else c  # noqa: E731
    return "\n".join([caption, "", "| step | wall time |", "|---|---|",
                      *(f"| {bold(step, b)} | {bold(t, b)} |" for step, t, b in rows)])


def report(rec: dict | None):
    """The same table as an HTML display object (for a chapter: the book renders Markdown
    outputs as CommonMark, which has no tables).

    Explained in: book/reproducibility.md
    """
    from html import escape

    from IPython.display import HTML

    text = lambda c: escape(c.replace("`", ""))  # noqa: E731
    if rec is None:
        return HTML(f"<p>{text(NO_BUILD)}</p>")
    caption, rows = _table(rec)
    cell = lambda c, b: f"<td>{'<b>' + text(c) + '</b>' if b else text(c)}</td>"  # noqa: E731
    body = "".join(f"<tr>{cell(step, b)}{cell(t, b)}</tr>" for step, t, b in rows)
    return HTML(f'<p>{text(caption)}</p><table class="dataframe"><thead><tr><th>step</th>'
                f"<th>wall time</th></tr></thead><tbody>{body}</tbody></table>")


def update_readme(readme: Path, rec: dict | None = None) -> bool:
    """Rewrite the table between the markers of ``readme``; True when the file changed."""
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise ValueError(f"{readme} has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{table_markdown(load() if rec is None else rec)}\n{END}{tail}"
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return new != text


def readme_table(readme: Path) -> str:
    """The table currently between the markers of ``readme`` (for the consistency test)."""
    text = readme.read_text(encoding="utf-8")
    return text.split(START, 1)[1].split(END, 1)[0].strip()
