"""A sweep on disk: its folder, and one file per unit of work.

A sweep (``cramming.sweep``) lives in ``<store>/cramming/sweep-<model>-<kind>-<hash8>/``, named
by its configuration's hash. Its work is split into *units*: one batch of strings at one prompt
length m with one threshold method. Each string of a finished unit is written atomically to its
own file ``m<m>-<method>-s<NNN>.json``, so that a file exists exactly when that string is done;
planning the pending units and resuming a killed sweep both only look for these files.

Explained in: book/cramming.md
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from .. import results, safepaths

if TYPE_CHECKING:
    from .sweep import SweepConfig


def sweep_dir(cfg: SweepConfig, root: Path) -> Path:
    """Folder of a sweep inside a results store root (named by model, kind and config hash)."""
    name = f"sweep-{safepaths.component(cfg.model)}-{safepaths.component(cfg.kind)}"
    return safepaths.inside(Path(root), "cramming", f"{name}-{results.config_key(cfg)}")


INFLIGHT_DIR = "inflight"  # kept snapshots of units in flight, inside the sweep folder
# Config keys that only split the same work (which m, how many strings, how many at a time).
SPLIT_KEYS = ("ms", "n_strings", "batch_size")


BATCH_KEY = re.compile(r"(?P<method>[a-z]+)-m(?P<m>\d+)-c(?P<c>\d+)-b(?P<b>\d+)")  # batch_key's


def batch_key(method: str, m: int, first: int, size: int) -> str:
    """The name of one batch: its claim (``cramming.claims``) and its kept snapshot."""
    return f"{method}-m{m}-c{first}-b{size}"


def kept_path(folder: Path, key: str) -> Path:
    """Where the snapshot of batch ``key`` is kept inside the sweep folder while it runs."""
    return Path(folder) / INFLIGHT_DIR / f"{key}.json"


def unit_path(folder: Path, m: int, method: str, i: int) -> Path:
    """The file of string ``i`` at prompt length ``m`` with threshold method ``method``."""
    return folder / f"m{m}-{method}-s{i:03d}.json"


def kept_batches(folder: Path) -> list[tuple[str, int, int, int]]:
    """``(method, m, first string, size)`` of every batch with a kept snapshot in ``folder``:
    begun and stopped, whatever batch size (``--run-batch``) the run that began it used."""
    d = Path(folder) / INFLIGHT_DIR
    keys = [BATCH_KEY.fullmatch(p.stem) for p in sorted(d.glob("*.json"))] if d.is_dir() else []
    return [(k["method"], int(k["m"]), int(k["c"]), int(k["b"])) for k in keys if k]


def batch_of(folder: Path, method: str, m: int, i: int, size: int) -> tuple[int, int]:
    """``(first string, size)`` of the batch in which string ``i`` runs: a begun batch that holds
    it (so that its kept snapshot is resumed, whatever its size), else the planned batch of
    ``size`` strings.

    Explained in: book/cramming.md
    """
    for meth, mm, c, b in kept_batches(folder):
        if (meth, mm) == (method, m) and c <= i < c + b:
            return c, b
    return i - i % size, size


def plan_units(cfg: SweepConfig, folder: Path, *, only_ms=None, batch_size: int | None = None):
    """The sweep's pending units ``(method, m, strings)`` in run order (an iterator, lazy).

    Order: method, then batch of strings, then m — so a partial sweep already covers every m —
    except that batches with a kept snapshot (begun and stopped) come first, with the strings
    they began with even when this run's ``batch_size`` differs, so a resumed sweep finishes
    what it began before it begins anything new. A unit is one batch of strings at one prompt
    length m; its finished strings are left out as the iteration reaches it. ``run_sweep`` and
    the Ray backend (``cramming.cluster``) both follow it.

    Explained in: book/cramming.md
    """
    folder = Path(folder)
    ms = tuple(cfg.ms if only_ms is None else only_ms)
    if not set(ms) <= set(cfg.ms):
        raise ValueError(f"only_ms={ms} is not part of the sweep's m values {cfg.ms}")
    step = cfg.batch_size if batch_size is None else int(batch_size)
    if step <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    batches = [(meth, m, c, step) for meth in cfg.methods for c in range(0, cfg.n_strings, step)
               for m in ms]

    def pending():  # a file written after planning (a resumed or parallel run) is still skipped
        # the begun batches are looked for when the iteration starts, not at planning
        begun = sorted((b for b in kept_batches(folder)
                        if b[0] in cfg.methods and b[1] in ms and b[2] < cfg.n_strings),
                       key=lambda b: (cfg.methods.index(b[0]), b[2], ms.index(b[1])))
        for meth, m, c, size in begun + [b for b in batches if b not in begun]:
            if idx := pending_strings(folder, m, meth, c, size, cfg):
                yield meth, m, idx

    return pending()


def write_unit(folder: Path, cfg: SweepConfig, unit, rows, *, device: str, wall_s: float,
               extra: dict | None = None) -> None:
    """Write each string of a finished unit atomically to its own file (``extra``: provenance)."""
    meth, m, idx = unit
    for i, r in zip(idx, rows):
        prov = results.provenance(seed=cfg.seed, device=device, dtype=cfg.dtype, wall_s=wall_s)
        results.atomic_write_json(unit_path(folder, m, meth, i), {
            "config": {"m": m, "method": meth, "string": i, "n_max": cfg.n_max(m),
                       "batch": len(idx)}, "result": r, "provenance": {**prov, **(extra or {})}})


def pending_strings(folder: Path, m: int, meth: str, c: int, step: int,
                    cfg: SweepConfig) -> list[int]:
    """The strings of the batch that starts at string ``c`` (``step`` strings) with no file yet,
    less those that a begun batch of another size holds (``batch_of``)."""
    return [i for i in range(c, min(c + step, cfg.n_strings))
            if not unit_path(folder, m, meth, i).exists()
            and batch_of(folder, meth, m, i, step) == (c, step)]
