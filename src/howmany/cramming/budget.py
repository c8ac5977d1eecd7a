"""How strong is the optimiser? Budget curves of cramming recipes, and the choice of the book's.

A cramming threshold is a lower bound on what the model can be made to say (Meyer et al. 2026,
§5.1): it rises with the optimisation budget until the optimiser, not the model, stops it. A
*budget curve* is the median threshold over strings against the steps spent per string. Every
recipe of ``howmany.cramming.recipes`` is run on the same strings; each stored unit keeps its
``history`` (``[steps, threshold]`` at every verified success), so one run gives its whole curve
for constant-rate recipes (``thresholds.threshold_at``).

A recipe is *converged* on these strings when doubling its budget moves the median threshold by
less than ``CONVERGED`` (relative); the book's recipe should also reach the highest median of all
recipes with at most a third of the steps of the best other recipe it ties with or beats.

Explained in: book/cramming.md
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .thresholds import threshold_at

CONVERGED = 0.05  # largest relative change of the median threshold when the budget doubles


def unit_rows(sweep: dict, m: int) -> list[dict]:
    """The finished, finite units of one sweep at prompt length ``m`` (any method)."""
    rows = [r for by_m in sweep["units"].values() for r in by_m.get(m, [])]
    return [r for r in rows if r["status"] != "nan"]


def shared_strings(runs: dict, min_strings: int = 1) -> dict:
    """Each recipe's rows restricted to the strings that every recipe of ``runs`` finished.

    Medians over different strings are not comparable (one string can cram twice as far as
    another at the same budget), so recipes are compared on the strings they have in common.
    A recipe with fewer than ``min_strings`` finished strings is left out (so that a recipe
    still running does not shrink the comparison of the others); so are recipes with no row.

    Explained in: book/cramming.md
    """
    runs = {k: rows for k, rows in runs.items() if rows and len(rows) >= min_strings}
    if not runs:
        return {}
    common = set.intersection(*({r["string"] for r in rows} for rows in runs.values()))
    if not common:
        return {}
    return {k: sorted((r for r in rows if r["string"] in common), key=lambda r: r["string"])
            for k, rows in runs.items()}


def unfinished(rows_by_recipe: dict, n_strings: int, ours: str = "book",
               baseline: str | None = None) -> list[dict]:
    """The recipes that have finished some but not all ``n_strings`` strings, each with its
    thresholds (``theirs``) and those of ``ours`` (``ours``) on the strings both have finished
    (empty lists when ``ours`` has none of them, and for ``ours`` itself).

    With ``baseline`` (a recipe that has finished every string), each entry also holds the
    recipe's thresholds on all its finished strings (``own``, by string) and the baseline's on
    the same strings (``base``; empty for the baseline itself or when it lacks one of them).

    Explained in: book/cramming.md
    """
    mine = {r["string"]: r["threshold"] for r in rows_by_recipe.get(ours, [])}
    base = {r["string"]: r["threshold"] for r in rows_by_recipe.get(baseline, [])} if baseline else {}
    out = []
    for name, rows in rows_by_recipe.items():
        if 0 < len(rows) < n_strings:
            both = sorted((r["string"], r["threshold"]) for r in rows
                          if r["string"] in mine and name != ours)
            entry = {"recipe": name, "strings": len(rows), "theirs": [t for _, t in both],
                     "ours": [mine[i] for i, _ in both]}
            if baseline:
                own = sorted((r["string"], r["threshold"]) for r in rows)
                ok = name != baseline and all(i in base for i, _ in own)
                entry.update(own=[t for _, t in own], base=[base[i] for i, _ in own] if ok else [])
            out.append(entry)
    return out


def repeat_spread(first: list[dict], second: list[dict]) -> dict:
    """Two runs of the same settings on the same strings, side by side: how far a threshold
    moves when only the run changes (batch composition, code version, floating-point order).

    Returns ``strings`` (shared string indices), ``first``/``second`` (their thresholds),
    ``median_first``/``median_second``, the largest absolute difference ``max_diff`` with its
    ``worst`` string, and what differed between the runs on those strings: the batch sizes
    (``batches_first``/``batches_second``) and whether the code commits did (``code_differs``;
    None where a row lacks its commit). ``strings`` is empty when the runs share none.

    Explained in: book/cramming.md
    """
    a, b = ({r["string"]: r for r in rows} for rows in (first, second))
    common = sorted(set(a) & set(b))
    if not common:
        return {"strings": []}
    ta, tb = [a[i]["threshold"] for i in common], [b[i]["threshold"] for i in common]
    diffs = np.abs(np.subtract(ta, tb))
    commits = [{rows[i].get("commit") for i in common} for rows in (a, b)]
    known = None not in commits[0] | commits[1]
    return {"strings": common, "first": ta, "second": tb,
            "median_first": float(np.median(ta)), "median_second": float(np.median(tb)),
            "max_diff": int(diffs.max()), "worst": common[int(np.argmax(diffs))],
            "batches_first": sorted({a[i].get("batch") for i in common} - {None}),
            "batches_second": sorted({b[i].get("batch") for i in common} - {None}),
            "code_differs": bool(commits[0] != commits[1]) if known else None}


def curve(rows: list[dict], budgets) -> np.ndarray:
    """Median threshold over strings after each per-string budget in ``budgets`` (steps).

    A string whose run stopped before a budget keeps its final threshold there: its recipe
    would not have used the extra steps.

    Explained in: book/cramming.md
    """
    if not rows:
        raise ValueError("no finished string to draw a budget curve from")
    at = [[threshold_at(r.get("history", []), b) if b < r["steps"] else r["threshold"]
           for r in rows] for b in budgets]
    return np.median(np.asarray(at, dtype=float), axis=1)


def budget_grid(rows_by_recipe: dict, n: int = 40) -> np.ndarray:
    """Log-spaced per-string budgets from 10 steps to the largest run of any recipe."""
    top = max(max(r["steps"] for r in rows) for rows in rows_by_recipe.values() if rows)
    return np.unique(np.geomspace(10, max(top, 11), n).round().astype(int))


def table(rows_by_recipe: dict, wall_by_recipe: dict | None = None) -> list[dict]:
    """One row per recipe: strings, median threshold, median and total steps, wall time,
    and the median threshold at half the median budget (the convergence check).

    Explained in: book/cramming.md
    """
    out = []
    for name, rows in rows_by_recipe.items():
        if not rows:
            continue
        steps = np.array([r["steps"] for r in rows], dtype=float)
        med = float(np.median([r["threshold"] for r in rows]))
        half = float(curve(rows, [int(np.median(steps) / 2)])[0])
        out.append(dict(recipe=name, strings=len(rows), median_threshold=med,
                        median_steps=float(np.median(steps)), total_steps=int(steps.sum()),
                        wall_s=(wall_by_recipe or {}).get(name),
                        median_at_half_budget=half,
                        converged=bool(med > 0 and abs(med - half) / med < CONVERGED),
                        censored=sum(bool(r["censored"]) for r in rows)))
    return out


def verdict(rows: list[dict], chosen: str) -> dict:
    """Does ``chosen`` meet the book's bar against the other recipes of ``table`` rows?

    Returns the best other recipe it ties with or beats (``rival``), the step ratio against it,
    whether it has the highest median, whether it uses at most a third of the rival's steps, and
    whether it is converged: measured against the run with twice its budget
    (``"<chosen>@x2"``) when there is one (``doubled``), else from its own curve at half budget.

    Explained in: book/cramming.md
    """
    by = {r["recipe"]: r for r in rows}
    if chosen not in by:
        raise KeyError(f"recipe {chosen!r} has no finished string")
    me = by[chosen]
    others = [r for r in rows if r["recipe"].partition("@x")[0] != chosen]
    twice = by.get(f"{chosen}@x2")
    converged, change = me["converged"], None
    if twice is not None and me["median_threshold"] > 0:
        change = abs(twice["median_threshold"] - me["median_threshold"]) / me["median_threshold"]
        converged = change < CONVERGED
    beaten = [r for r in others if me["median_threshold"] >= r["median_threshold"]]
    rival = max(beaten, key=lambda r: r["median_threshold"], default=None)
    ratio = me["median_steps"] / rival["median_steps"] if rival else None
    return dict(chosen=chosen, rival=rival["recipe"] if rival else None, step_ratio=ratio,
                highest=all(me["median_threshold"] >= r["median_threshold"] for r in others),
                third=bool(ratio is not None and ratio <= 1 / 3), converged=bool(converged),
                doubled=twice is not None, change_when_doubled=change)


def cold_floor(warm: list[dict], cold: list[dict]) -> dict:
    """Strings on which a warm-started threshold stays below what cold starts reached.

    ``warm`` and ``cold`` are unit rows of two recipes on the same strings (rows without a
    ``"string"`` are matched by position), the second a cold-start search (``grid`` or
    ``bisect``). Its threshold is the longest prefix that one cold run crammed, so a warm
    threshold below it is set by the warm trajectory, not by the model.
    Returns ``compared`` (strings in both), ``below`` (``[string, warm, cold]`` for each such
    string) and ``gap`` (the largest shortfall in tokens, 0 when none).

    Explained in: book/cramming.md
    """
    key = lambda i, r: r.get("string", i)  # noqa: E731 - rows of one batch: their position
    cold_by = {key(i, r): int(r["threshold"]) for i, r in enumerate(cold)}
    pairs = [(key(i, r), int(r["threshold"]), cold_by[key(i, r)])
             for i, r in enumerate(warm) if key(i, r) in cold_by]
    below = [[i, w, c] for i, w, c in sorted(pairs) if w < c]
    return dict(compared=len(pairs), below=below, gap=max((c - w for _, w, c in below), default=0))


def restart_gains(rows: list[dict]) -> dict:
    """What cold restarts at the stall added to warm-grown thresholds (rows of a recipe with
    ``CramConfig.restarts``): ``restarted`` (strings that got one), ``raised`` (those whose
    restart crammed the stall length, so their threshold went past it) and ``gain`` (the largest
    rise in tokens over the length where the first restart began, minus one).

    A string whose restart failed has a threshold that a cold start of the same recipe did not
    beat at the next length; a raised one would have read lower without it.

    Explained in: book/cramming.md
    """
    hit = [r for r in rows if r.get("restarts")]
    up = [r for r in hit if any(r["threshold"] >= n for _, n in r["restarts"])]
    gain = max((r["threshold"] - (r["restarts"][0][1] - 1) for r in up), default=0)
    return dict(restarted=len(hit), raised=len(up), gain=int(gain), strings=len(rows))


def ran_recipe(config: dict, name: str) -> bool:
    """Whether a stored sweep's ``config`` ran the preset ``name`` as it is defined now: the same
    name, threshold search and optimiser settings. A folder made before a preset changed keeps
    its old name but no longer measures that preset.

    Explained in: book/cramming.md
    """
    import json

    from . import recipes

    if config.get("recipe") != name:
        return False
    rec = recipes.get(name)
    same = (json.loads(json.dumps(rec.cram.to_dict())) == config.get("cram")
            and list(config.get("methods", ())) == [rec.method])
    if rec.method == "grid":
        same &= (config.get("grid_step"), config.get("grid_stop", 0)) == (rec.grid_step,
                                                                           rec.grid_stop)
    return bool(same)


def recipe_sweeps(model: str, names, *, kind: str = "random-words", root=None) -> dict:
    """``{recipe: load_sweep(...)}`` of the stored sweeps of ``model`` that ran each recipe as
    it is defined now (``ran_recipe``); recipes with no such sweep are left out. Of several
    such folders: the one with the widest prefix cap, then the most finished units, completed
    with the strings it lacks from the others (``widen.completed``).

    Explained in: book/cramming.md
    """
    from . import store, widen
    from .sweep import SweepConfig

    out = {}
    try:
        folders = store.find_sweeps(model, kind=kind, root=root)
    except Exception:  # noqa: BLE001 - no sweep at all: nothing to show
        return out
    size = lambda s: sum(len(rows) for by_m in s["units"].values() for rows in by_m.values())  # noqa: E731
    ran: dict = {}
    for folder in folders:
        s = store.load_sweep(folder)
        name = s["config"].get("recipe", "")
        if name in names and ran_recipe(s["config"], name):
            ran.setdefault(name, []).append(s)
    for name, found in ran.items():
        best = max(found, key=lambda s: (SweepConfig.from_dict(s["config"]).n_max(1), size(s)))
        out[name] = widen.completed(best, [s for s in found if s is not best])
    return out


def tiny_curves(names, *, scale: float, n_strings: int = 6, m: int = 1, n_max: int = 16,
                d_model: int = 32, d_vocab: int = 64, seed: int = 0, device: str = "cpu") -> dict:
    """Every recipe of ``names`` (step caps × ``scale``) on the same random strings of a tiny
    LeCun-initialised model: ``{recipe: {"rows": [...], "wall_s": float}}``.

    Explained in: book/cramming.md
    """
    import time

    from . import recipes, scaling

    lm = scaling.tiny_lm(d_model=d_model, d_vocab=d_vocab, seed=seed, device=device)
    tg = np.random.default_rng([seed, 7]).integers(2, d_vocab, size=(n_strings, n_max))
    out = {}
    for name in names:
        rec = recipes.get(name).scaled(scale)
        if rec.method == "grid":  # a tiny model crams a few tokens: try every length
            rec = replace(rec, grid_step=1)
        t0 = time.perf_counter()
        rows = recipes.run(rec, lm.model, lm.bos_id, tg, m, n_max=n_max,
                           seeds=[seed * 1000 + i for i in range(n_strings)])
        out[name] = {"rows": rows, "wall_s": time.perf_counter() - t0}
    return out


def panel(rows: list[dict], n_budgets: int = 40) -> dict:
    """``{"budgets", "median"}`` of one recipe's rows on a log grid up to its longest run."""
    top = max(r["steps"] for r in rows)
    budgets = np.unique(np.geomspace(10, max(top, 11), n_budgets).round().astype(int))
    return {"budgets": budgets.tolist(), "median": curve(rows, budgets).tolist()}
