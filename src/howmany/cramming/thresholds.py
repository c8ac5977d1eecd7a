"""Threshold searches: the longest prefix of each string that a soft prompt can be crammed to.

Success certifies accessibility and failure does not (Meyer et al. 2026, §5.1), so every method
here returns a *measured lower bound* on a string's threshold, together with the optimisation
steps it spent and its budget curve (the threshold reached after each number of steps). Three
searches, all batched over strings with ``engine.cram``:

* ``grow``: one warm-started run whose target grows by the verified prefix; with
  ``CramConfig.restarts`` a string whose growth stalls gets cold restarts at its stall length, so
  no threshold rests on one unlucky trajectory (a stall at length 1 no longer reads as 0).
* ``bisect``: cold-start bisection on the prefix length (the paper's independent runs, searched).
* ``grid``: cold starts at fixed lengths (the paper's protocol: A(n) on a grid of n).

Explained in: book/cramming.md
"""

from __future__ import annotations

import math

import numpy as np

from .engine import CramConfig, cram


def _row(threshold: int, *, censored: bool, steps: int, nan: bool, method: str,
         history=(), restarts=(), **extra) -> dict:
    return dict(threshold=int(threshold), censored=bool(censored), steps=int(steps),
                status="nan" if nan else "ok", method=method,
                history=[[int(s), int(n)] for s, n in history],
                restarts=[[int(s), int(n)] for s, n in restarts], **extra)


def thresholds_grow(model, bos_id, targets, m: int, cfg: CramConfig, *, seeds, n_max=None,
                    verbose: bool = False, callback=None, resume=None,
                    snapshot=None, snapshot_s: float = 60.0) -> list[dict]:
    """Largest crammable prefix per string by a warm-started growing curriculum (one run each).

    Returns one dict per string: ``threshold``, ``censored`` (reached ``n_max``), ``steps``,
    ``status`` ("ok" or "nan"), ``history`` (``[steps, threshold]`` pairs: the budget curve) and
    ``restarts`` (``[steps, length]`` of every cold restart). ``resume`` and ``snapshot`` go to
    ``cram`` (per-row states to go on from; a callback that receives them once a minute).

    Explained in: book/cramming.md
    """
    tg = np.asarray(targets)
    n_max = tg.shape[1] if n_max is None else int(n_max)
    res = cram(model, bos_id, tg[:, :n_max], m, cfg, seeds=seeds, grow=True, verbose=verbose,
               callback=callback, resume=resume, snapshot=snapshot, snapshot_s=snapshot_s)
    return [_row(r["n_verified"], censored=r["status"] == "solved", steps=r["steps"],
                 nan=r["status"] == "nan", method="grow", history=r["history"],
                 restarts=r["restarts"]) for r in res]


class _Rounds:
    """The cold-start rounds of a bisection or a grid, each one batched ``cram``, resumable.

    ``resume`` is a journal that ``snapshot`` received: the finished rounds' outcomes (status
    and steps per row) are replayed instead of rerun, and the round in flight goes on from its
    per-row states, so a killed search resumed from its last journal gives the same rows.
    """

    def __init__(self, model, bos_id, m: int, cfg: CramConfig, *, verbose: bool, resume,
                 snapshot, snapshot_s: float):
        self.run = dict(model=model, bos_id=bos_id, m=m, cfg=cfg, verbose=verbose,
                        snapshot_s=snapshot_s)
        self.snapshot, self.calls = snapshot, 0
        self.done = [list(r) for r in (resume or {}).get("rounds", [])]
        self.inflight = (resume or {}).get("inflight")

    def __call__(self, targets, seeds, lengths=None) -> list[dict]:
        k, self.calls = self.calls, self.calls + 1
        if k < len(self.done):  # finished before the run was killed
            if len(self.done[k]) != len(seeds):
                raise ValueError("the resumed journal does not belong to this search")
            return self.done[k]
        keep = None if self.snapshot is None else \
            lambda st: self.snapshot({"rounds": self.done, "inflight": st})
        res = cram(targets=targets, seeds=seeds, lengths=lengths, resume=self.inflight,
                   snapshot=keep, **self.run)
        self.inflight = None
        self.done.append([{"status": r["status"], "steps": int(r["steps"])} for r in res])
        if self.snapshot is not None:
            self.snapshot({"rounds": self.done, "inflight": None})
        return self.done[k]


def thresholds_bisect(model, bos_id, targets, m: int, cfg: CramConfig, *, seeds, n_max=None,
                      verbose: bool = False, resume=None, snapshot=None,
                      snapshot_s: float = 60.0) -> list[dict]:
    """Largest crammable prefix per string by bisection; every trial is a cold start.

    Success is assumed monotone in the prefix length, so ``ceil(log2(n_max + 1))`` rounds
    suffice; all strings bisect in lockstep (one batched ``cram`` per round). ``censored``
    marks strings that succeed at ``n_max`` itself (their threshold is at least that).
    ``snapshot`` receives a journal (finished rounds, states of the round in flight) once a
    minute and after every round; ``resume`` goes on from such a journal.

    Explained in: book/cramming.md
    """
    tg = np.asarray(targets)
    b = tg.shape[0]
    n_max = tg.shape[1] if n_max is None else int(n_max)
    lo, hi = np.zeros(b, int), np.full(b, n_max + 1)
    steps, nan = np.zeros(b, int), np.zeros(b, bool)
    hist: list[list] = [[] for _ in range(b)]
    rounds = _Rounds(model, bos_id, m, cfg, verbose=verbose, resume=resume, snapshot=snapshot,
                     snapshot_s=snapshot_s)
    for rnd in range(math.ceil(math.log2(n_max + 1)) + 1):
        live = np.where((hi - lo > 1) & ~nan)[0]
        if live.size == 0:
            break
        mid = (lo[live] + hi[live]) // 2
        res = rounds(tg[live], [int(seeds[i]) * 1000 + rnd for i in live], lengths=mid)
        for j, i in enumerate(live):
            steps[i] += res[j]["steps"]
            nan[i] |= res[j]["status"] == "nan"
            if res[j]["status"] == "solved":
                lo[i] = mid[j]
                hist[i].append([int(steps[i]), int(lo[i])])
            else:
                hi[i] = mid[j]
    return [_row(lo[i], censored=lo[i] >= n_max, steps=steps[i], nan=nan[i], method="bisect",
                 history=hist[i]) for i in range(b)]


def thresholds_grid(model, bos_id, targets, m: int, cfg: CramConfig, *, seeds, grid,
                    stop: int = 0, verbose: bool = False, resume=None, snapshot=None,
                    snapshot_s: float = 60.0) -> list[dict]:
    """Cold starts at each length of ``grid`` (ascending), independently: the paper's protocol.

    The threshold is the largest grid length solved; ``solved`` lists the outcome per grid
    length, which is what the accessibility curve A(n) on the grid averages. ``history`` adds the
    grid lengths in order, so its steps are cumulative over the lengths tried so far.
    ``stop > 0`` ends a string's grid after that many consecutive failed lengths (each failure
    costs the whole step cap); its longer lengths count as failed, and ``tried`` says how many
    lengths really ran. ``resume`` and ``snapshot``: as for ``thresholds_bisect``.

    Explained in: book/cramming.md
    """
    tg = np.asarray(targets)
    b, grid = tg.shape[0], sorted(int(n) for n in grid)
    if grid[-1] > tg.shape[1]:
        raise ValueError(f"grid length {grid[-1]} exceeds the targets' length {tg.shape[1]}")
    steps, nan = np.zeros(b, int), np.zeros(b, bool)
    best, solved = np.zeros(b, int), [[] for _ in range(b)]
    hist: list[list] = [[] for _ in range(b)]
    misses = np.zeros(b, int)
    rounds = _Rounds(model, bos_id, m, cfg, verbose=verbose, resume=resume, snapshot=snapshot,
                     snapshot_s=snapshot_s)
    for k, n in enumerate(grid):
        live = [i for i in range(b) if not stop or misses[i] < stop]
        if not live:
            break
        res = rounds(tg[live, :n], [int(seeds[i]) * 1000 + k for i in live])
        for i, r in zip(live, res):
            misses[i] = 0 if r["status"] == "solved" else misses[i] + 1
            steps[i] += r["steps"]
            nan[i] |= r["status"] == "nan"
            solved[i].append(r["status"] == "solved")
            if r["status"] == "solved":
                best[i] = max(best[i], n)
                hist[i].append([int(steps[i]), int(best[i])])
    tried = [len(x) for x in solved]
    solved = [x + [False] * (len(grid) - len(x)) for x in solved]
    return [_row(best[i], censored=solved[i][-1], steps=steps[i], nan=nan[i], method="grid",
                 history=hist[i], grid=grid, solved=solved[i],
                 **({"tried": tried[i]} if stop else {})) for i in range(b)]


THRESHOLD_METHODS = {"grow": thresholds_grow, "bisect": thresholds_bisect,
                     "grid": thresholds_grid}


def threshold_at(history, budget: float) -> int:
    """The threshold a run had reached after ``budget`` steps (from its ``history``).

    With a constant learning rate and a per-string step cap as the budget, a run capped at
    ``budget`` is exactly the first ``budget`` steps of a longer run, so one run gives the whole
    budget curve. Under a cosine schedule (whose horizon is the cap) it is the trajectory of the
    longer run, an approximation that the book states where it uses it.

    Explained in: book/cramming.md
    """
    reached = [n for s, n in history if s <= budget]
    return int(max(reached)) if reached else 0


def budget_ended(rows, string_steps: int) -> list[dict]:
    """The growing searches of ``rows`` that stopped because the string had spent its whole
    step budget (``CramConfig.string_steps``), not by the recipe's own rule (a stall that its
    cold restarts could not pass, or the prefix cap). Their thresholds are lower bounds set by
    that budget: more steps might have crammed further. No budget (0) gives none.

    Explained in: book/cramming.md
    """
    if not string_steps:
        return []
    return [r for r in rows if r.get("method", "grow") == "grow" and not r.get("censored")
            and r["steps"] >= string_steps]


def median_unaffected(values, lower) -> bool:
    """Whether the median of ``values`` stays the same however far the ones flagged in
    ``lower`` (lower bounds: a string at the prefix cap, or stopped by its step budget) might
    rise. If not, the median itself is only a lower bound.

    Explained in: book/cramming.md
    """
    v = np.asarray(values, dtype=float)
    return bool(np.median(np.where(np.asarray(lower, dtype=bool), np.inf, v)) == np.median(v))
