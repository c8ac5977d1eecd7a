"""Resumable cramming: snapshots of a run in flight, and runs that go on from a stored one.

Two ways a threshold search avoids repeating optimisation work:

* **Snapshots.** ``cram`` hands every row's full state (prompt, Adam moments, schedule step,
  current length, patience counters, record so far) to a snapshot callback once a minute; a
  sweep writes it outside the repository (``partial_dir``) and a killed worker's successor
  resumes from it. A resumed row takes exactly the steps the uninterrupted run would have taken.
  The cold-start searches (grid, bisection) snapshot a journal instead: the outcomes of their
  finished rounds, and the states of the round in flight. The finished rounds are also kept as
  a small JSON record inside the sweep's folder (``save_rounds``), so a search that outlives
  the machine its snapshot was on loses at most its round in flight.
* **Continuations.** A recipe that is another recipe plus cold restarts (the book's recipe is
  Progressive Cramming's with one restart where growth stalls) follows that recipe's trajectory
  step for step until the first stall. A stored row of the base recipe therefore *is* the
  first part of the new recipe's run: ``continuation`` rebuilds the state at the moment of the
  first cold restart, and the run goes on from there.

Explained in: book/cramming.md
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from .engine import CramConfig, restart_state


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


def save_rounds(path: Path, journal: dict, meta: dict, *, wall_s: float, provenance: dict) -> None:
    """Keep the finished rounds of a cold-start search's ``journal`` as JSON at ``path`` (no
    tensors: each round is a status and a step count per string), with the wall time spent up
    to the last of them and the provenance of the process that ran them.

    Explained in: book/cramming.md
    """
    from .. import results

    rec = {"meta": meta, "rounds": journal["rounds"], "wall_s": float(wall_s),
           "provenance": {**provenance, "wall_time_s": float(wall_s)}}
    results.atomic_write_json(Path(path), rec)


def load_rounds(path: Path, meta: dict) -> tuple[dict | None, float]:
    """``(journal, wall seconds)`` from a record ``save_rounds`` wrote for a run with exactly
    ``meta``: the finished rounds, and no round in flight. ``(None, 0.0)`` when there is none.

    Explained in: book/cramming.md
    """
    try:
        rec = json.loads(Path(path).read_text())
    except (OSError, ValueError):  # no record, or a torn one: start afresh
        return None, 0.0
    if rec.get("meta") != json.loads(json.dumps(meta)):
        return None, 0.0
    return {"rounds": rec["rounds"], "inflight": None}, float(rec.get("wall_s", 0.0))


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
