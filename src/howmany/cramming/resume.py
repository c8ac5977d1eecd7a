"""Resumable cramming: snapshots of a run in flight, and runs that go on from a stored one.

Two ways a threshold search avoids repeating optimisation work:

* **Snapshots.** ``cram`` hands every row's full state (prompt, Adam moments, schedule step,
  current length, patience counters, record so far) to a snapshot callback once a minute; a
  sweep writes it outside the repository (``partial_dir``) and a killed worker's successor
  resumes from it. A resumed row takes exactly the steps the uninterrupted run would have taken.
  The cold-start searches (grid, bisection) snapshot a journal instead: the outcomes of their
  finished rounds, and the states of the round in flight.
* **Kept snapshots.** A snapshot lives on one machine; the same snapshot is also kept as a small
  JSON record inside the sweep's folder (``keep``), committed with the sweep, so a run that
  outlives its machine goes on elsewhere from its last minute.
* **Continuations.** A recipe that is another recipe plus cold restarts (the book's recipe is
  Progressive Cramming's with one restart where growth stalls) follows that recipe's trajectory
  step for step until the first stall. A stored row of the base recipe therefore *is* the
  first part of the new recipe's run: ``continuation`` rebuilds the state at the moment of the
  first cold restart, and the run goes on from there.

Explained in: book/cramming.md
"""

from __future__ import annotations

import base64
import json
import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from .. import results
from .engine import CramConfig
from .starts import restart_state


def partial_dir() -> Path:
    """Where snapshots of running sweeps live: ``$HOWMANY_PARTIAL`` or
    ``~/.cache/howmany/cram-partial`` (outside the repository; never committed).

    Explained in: book/cramming.md
    """
    env = os.environ.get("HOWMANY_PARTIAL")
    return Path(env) if env else Path.home() / ".cache" / "howmany" / "cram-partial"


def save(path: Path, states: list[dict], meta: dict, *, wall_s: float = 0.0) -> None:
    """Write a snapshot atomically (temporary file, then ``os.replace``), with the wall time
    the run has spent so far, over all the processes that resumed it (``wall_s``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save({"meta": meta, "states": states, "wall_s": float(wall_s)}, tmp)
    os.replace(tmp, path)


def spent(path: Path) -> float | None:
    """Wall seconds the run behind the snapshot at ``path`` had spent when it was taken; None
    for a snapshot written before snapshots kept it (the time is then unknown).

    Explained in: book/cramming.md
    """
    try:
        value = torch.load(Path(path), weights_only=True).get("wall_s")
    except Exception:  # noqa: BLE001 - no file or a torn one: nothing spent that we know of
        return 0.0
    return None if value is None else float(value)


def load(path: Path, meta: dict) -> list[dict] | None:
    """The states of the snapshot at ``path`` if it was taken by a run with exactly ``meta``
    (configuration, strings, seeds), else None (no file, or one from another run).

    Explained in: book/cramming.md
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        snap = torch.load(path, weights_only=True)
    except Exception:  # noqa: BLE001 - a torn or foreign file: start afresh
        return None
    return snap["states"] if snap.get("meta") == meta else None


KEEP_MAX = 50_000  # numbers in the tensors of a kept snapshot; beyond, only finished rounds


def _plain(x):
    """``x`` with tensors as base64 float32 bytes and non-finite floats as strings (exact)."""
    if isinstance(x, torch.Tensor):
        t = x.detach().to("cpu", torch.float32).contiguous()
        return {"float32": base64.b64encode(t.numpy().tobytes()).decode(), "shape": list(t.shape)}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (float, np.floating)) and not math.isfinite(x):
        return {"float": repr(float(x))}
    return x


def _restored(x):
    """The inverse of ``_plain``."""
    if isinstance(x, dict):
        if set(x) == {"float32", "shape"}:
            a = np.frombuffer(base64.b64decode(x["float32"]), np.float32).reshape(x["shape"])
            return torch.from_numpy(a.copy())
        if set(x) == {"float"}:
            return float(x["float"])
        return {k: _restored(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_restored(v) for v in x]
    return x


def _numbers(x) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel()
    if isinstance(x, dict):
        return sum(_numbers(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return sum(_numbers(v) for v in x)
    return 0


def keep(path: Path, snap, meta: dict, *, wall_s: float, provenance: dict) -> bool:
    """Keep a snapshot ``snap`` (what ``cram`` or a cold-start search handed over) as a JSON
    record at ``path``, inside the sweep's folder so that it travels with the repository: the
    tensors exactly (float32 bytes, base64), the wall time spent, the provenance of the process.
    A snapshot with more than ``KEEP_MAX`` numbers keeps only a journal's finished rounds (a
    warm run's state is then not kept). Returns whether a record was written.

    Explained in: book/cramming.md
    """
    if _numbers(snap) > KEEP_MAX:
        if not isinstance(snap, dict):
            return False
        snap = {"rounds": snap["rounds"], "inflight": None}
    rec = {"meta": meta, "snapshot": _plain(snap), "wall_s": float(wall_s),
           "provenance": {**provenance, "wall_time_s": float(wall_s)}}
    results.atomic_write_json(Path(path), rec)
    return True


def load_kept(path: Path, meta: dict):
    """``(snapshot, wall seconds)`` from a record ``keep`` wrote for a run with exactly
    ``meta``, tensors restored; ``(None, 0.0)`` when there is none.

    Explained in: book/cramming.md
    """
    try:
        rec = json.loads(Path(path).read_text())
    except (OSError, ValueError):  # no record, or a torn one: start afresh
        return None, 0.0
    if rec.get("meta") != json.loads(json.dumps(meta)) or "snapshot" not in rec:
        return None, 0.0
    return _restored(rec["snapshot"]), float(rec.get("wall_s", 0.0))


def continues(recipe, base) -> bool:
    """Whether ``recipe`` runs exactly like ``base`` up to the first cold restart: both grow,
    ``base`` never restarts, and their settings differ only in ``restarts`` and ``cold_steps``.

    Explained in: book/cramming.md
    """
    if recipe.method != "grow" or base.method != "grow" or base.cram.restarts:
        return False
    return replace(recipe.cram, restarts=0, cold_steps=0) == replace(base.cram, cold_steps=0)


def continuation(row: dict, model, m: int, cfg: CramConfig, seed: int) -> dict:
    """The state of a run under ``cfg`` (a recipe that ``continues`` the one that stored ``row``)
    at its first cold restart; or, when the stored row is already that run's whole record
    (solved, non-finite, out of budget, or ``cfg`` has no restart), that record as a finished
    state.

    ``row`` is a stored ``thresholds_grow`` row: its threshold T was reached, then the attempt
    at T + 1 failed after ``row["steps"]`` steps. That is where ``cfg`` restarts cold.

    Explained in: book/cramming.md
    """
    steps, length = int(row["steps"]), int(row["threshold"]) + 1
    d = model.get_input_embeddings().embedding_dim
    p, mom, var = torch.zeros(1, m, d), torch.zeros(1, m, d), torch.zeros(1, m, d)
    arrays = dict(t_adam=np.zeros(1, int), cur=np.full(1, length), best=np.full(1, np.inf),
                  since=np.zeros(1, int), attempt=np.zeros(1, int), cap=np.zeros(1, int),
                  tries=np.zeros(1, int))
    hist = [[int(s), int(n)] for s, n in row.get("history", [])]
    status = "nan" if row["status"] == "nan" else "solved" if row["censored"] else "failed"
    out = dict(status=status, n_verified=int(row["threshold"]), steps=steps,
               first_success_step=hist[0][0] if hist else None, loss=None, tf_prefix=0,
               history=hist, restarts=[[int(s), int(n)] for s, n in row.get("restarts", [])],
               prompt=None)
    if (status == "failed" and cfg.restarts and not out["restarts"]
            and not (cfg.string_steps and steps >= cfg.string_steps)):
        restart_state(model, m, cfg, seed, out, p, mom, var, arrays, 0, length)
    return dict(p=p[0], mom=mom[0], var=var[0], out=out,
                **{k: a[0].item() for k, a in arrays.items()})
