"""Where a stored sweep stands: strings finished, strings in flight, strings not started yet.

A sweep at full scale runs for days, in pieces, often on several machines. Everything about its
state is on disk: a finished string is a unit file (``cramming.units``); a batch in flight keeps a
snapshot once a minute, inside the sweep's folder (``inflight/``, ``cramming.resume.keep``) and
on the machine that runs it (``resume.partial_dir()``); a live process holds a claim on its batch
(``cramming.claims``). ``progress`` reads these files and loads no model, so
``python -m howmany cram --progress`` answers in seconds how far each sweep has got, how long its
strings in flight have run, and whether anything is running now.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from .. import results
from . import claims, resume
from .store import find_sweeps, load_sweep
from .sweep import SweepConfig
from .units import BATCH_KEY, INFLIGHT_DIR, kept_path


@dataclass(frozen=True)
class InFlight:
    """One batch in flight, as its last snapshot saw it."""

    method: str
    m: int
    strings: tuple  # the batch's strings without a unit file yet
    verified: tuple  # per string, the longest prefix crammed so far (None: a bisection)
    steps: tuple  # per string, the optimisation steps spent so far (every round of a search)
    rounds: int  # finished rounds of a cold-start search (0 for a warm growing run)
    wall_s: float  # wall time spent, over every process that resumed it
    running: bool  # a live process holds the batch's claim now
    source: str  # "kept" (the copy in the sweep's folder) or "local" (this machine's snapshot)
    step_cap: int | None = None  # the most steps a string may take (a growing run's string_steps)


@dataclass(frozen=True)
class Cell:
    """One prompt length m of one threshold method: what is finished and what is not."""

    method: str
    m: int
    n_max: int  # the longest prefix the sweep asks for at this m
    finished: tuple  # thresholds of the finished strings, in string order
    censored: int  # finished strings that reached n_max (their thresholds are lower bounds)
    in_flight: tuple  # InFlight batches of this cell
    not_started: int  # strings with neither a unit file nor a snapshot
    wall_s: float  # wall time of the finished strings (a batch's time shared by its strings)
    inherited: int = 0  # finished strings taken over from a narrower cap (cramming.widen)

    @property
    def median(self) -> float | None:
        """Median threshold of the finished strings (None before the first)."""
        return statistics.median(self.finished) if self.finished else None


@dataclass(frozen=True)
class Progress:
    """A sweep's state: its folder, what it measures, one ``Cell`` per (method, m)."""

    folder: Path
    model: str
    kind: str
    recipe: str
    dtype: str
    n_strings: int
    cells: tuple

    @property
    def done(self) -> bool:
        return all(len(c.finished) == self.n_strings for c in self.cells)


def _snapshot(folder: Path, key: str, partial_root: Path):
    """(states or journal, its strings, wall s, source) of a batch's snapshot, the folder's
    copy first."""
    kept = kept_path(folder, key)
    if kept.is_file():
        try:
            rec = json.loads(kept.read_text())
            return rec["snapshot"], rec["meta"]["strings"], float(rec.get("wall_s", 0.0)), "kept"
        except (OSError, ValueError, KeyError):
            pass  # torn while it was written: try the local snapshot
    local = partial_root / folder.name / f"{key}.pt"
    if local.is_file():
        import torch

        try:
            snap = torch.load(local, weights_only=True)
            return (snap["states"], snap["meta"]["strings"], float(snap.get("wall_s") or 0.0),
                    "local")
        except Exception:  # noqa: BLE001 - torn or foreign: nothing to report
            pass
    return None, [], 0.0, ""


def journal_rows(journal: dict, n: int, grid=None, stop: int = 0) -> tuple[list, list]:
    """Per string of a cold-start search's ``journal`` (``n`` strings): the steps spent over its
    rounds and the round in flight, and, for a grid (``grid``), the longest length crammed so far.

    A grid round holds only the strings still searching, in order: a string's grid ends after
    ``stop`` failed lengths in a row (``thresholds.thresholds_grid``), so later rounds and the
    round in flight leave it out. A bisection keeps every string in every round.

    Explained in: book/reproducibility.md
    """
    steps, best, misses, live = [0] * n, [0] * n, [0] * n, list(range(n))
    for k, results_k in enumerate(journal.get("rounds") or []):
        for i, r in zip(live, results_k):
            steps[i] += int(r["steps"])
            solved = r["status"] == "solved"
            misses[i] = 0 if solved else misses[i] + 1
            if solved and grid is not None:
                best[i] = max(best[i], int(grid[k]))
        if grid is not None and stop:
            live = [i for i in live if misses[i] < stop]
    for i, st in zip(live, journal.get("inflight") or []):
        steps[i] += int(st["out"]["steps"])
    return steps, best


def _in_flight(method: str, m: int, strings: list, snap, wall_s: float, running: bool,
               source: str, cap: int | None, grid=None, stop: int = 0) -> InFlight:
    """A batch in flight from its snapshot; ``strings`` are the snapshot's rows, in order."""
    if method == "grow":  # per-row states of one warm run
        outs = [s["out"] for s in snap]
        return InFlight(method, m, tuple(strings), tuple(int(o["n_verified"]) for o in outs),
                        tuple(int(o["steps"]) for o in outs), 0, wall_s, running, source, cap)
    grid = grid if method == "grid" else None  # a journal of cold-start rounds
    steps, best = journal_rows(snap, len(strings), grid, stop)
    verified = tuple(best) if grid is not None else (None,) * len(strings)
    return InFlight(method, m, tuple(strings), verified, tuple(steps),
                    len(snap.get("rounds") or []), wall_s, running, source)


def progress(folder: Path, *, stale_s: float = claims.STALE_S) -> Progress:
    """The state of the sweep in ``folder``: finished units (validated like the book reads
    them), batches in flight from their snapshots, and whether a live process holds each one.

    Explained in: book/reproducibility.md
    """
    folder = Path(folder)
    sweep = load_sweep(folder)
    cfg, units = sweep["config"], sweep["units"]
    sweep_cfg = SweepConfig.from_dict(cfg)
    n_max = sweep_cfg.n_max
    partial_root = resume.partial_dir()
    flying: dict = {}
    keys = {p.stem for p in (folder / INFLIGHT_DIR).glob("*.json")}
    keys |= {p.stem for p in (partial_root / folder.name).glob("*.pt")}
    keys |= {p.stem for p in (folder / ".claims").glob("*.claim")}
    for key in sorted(keys):
        mt = BATCH_KEY.fullmatch(key)
        if mt is None:
            continue
        meth, m, c, b = mt["method"], int(mt["m"]), int(mt["c"]), int(mt["b"])
        done = {u["string"] for u in units.get(meth, {}).get(m, [])}
        strings = [i for i in range(c, min(c + b, cfg["n_strings"])) if i not in done]
        if not strings:
            continue  # finished: a snapshot or claim left behind is not work in flight
        snap, rows, wall, source = _snapshot(folder, key, partial_root)
        running = claims.held(folder, key, stale_s=stale_s)
        if snap is None or not set(rows) & set(strings):  # none, or of strings now finished
            if not running:
                continue
            fl = InFlight(meth, m, tuple(strings), (None,) * len(strings), (0,) * len(strings),
                          0, 0.0, True, "")  # claimed, before its first snapshot
        else:
            fl = _in_flight(meth, m, rows, snap, wall, running, source,
                            cfg["cram"].get("string_steps") or None, grid=sweep_cfg.grid(m),
                            stop=sweep_cfg.grid_stop)
            strings = [i for i in rows if i not in done]
            if strings != list(rows):  # some finished under another batch: keep the others
                keep = [rows.index(i) for i in strings]
                fl = replace(fl, strings=tuple(strings),
                             verified=tuple(fl.verified[j] for j in keep),
                             steps=tuple(fl.steps[j] for j in keep))
        flying.setdefault((meth, m), []).append(fl)
    cells = []
    for meth in cfg["methods"]:
        for m in cfg["ms"]:
            rows = sorted(units.get(meth, {}).get(m, []), key=lambda r: r["string"])
            fl = tuple(flying.get((meth, m), []))
            busy = sum(len(f.strings) for f in fl)
            cells.append(Cell(meth, m, n_max(m),
                              tuple(int(r["threshold"]) for r in rows),
                              sum(bool(r["censored"]) for r in rows), fl,
                              cfg["n_strings"] - len(rows) - busy,
                              float(sum((r["wall_s"] or 0.0) / (r["batch"] or 1)
                                        for r in rows)),
                              sum(bool(r.get("inherited_from")) for r in rows)))
    return Progress(folder, cfg["model"], cfg["kind"], cfg.get("recipe", ""), cfg["dtype"],
                    cfg["n_strings"], tuple(cells))


def sweeps(root: Path, *, models=()) -> list[Path]:
    """The sweep folders in a results store root (only those of ``models`` when given).

    Explained in: book/reproducibility.md
    """
    if not models:
        return sorted(p for p in (Path(root) / "cramming").glob("sweep-*") if p.is_dir())
    found = set()
    for model in models:
        try:
            found.update(find_sweeps(model, root=root))
        except results.MissingResultError:
            pass
    return sorted(found)
