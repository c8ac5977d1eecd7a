"""The replication point: accessibility under the paper's own protocol, with both layouts.

The paper measures A(n) with cold starts (Meyer et al. 2026, §5.1): for every length n of a grid,
a fresh prompt is optimised for at most 3,000 steps, and the string counts as accessible at n
when greedy decoding reproduces it (preset ``paper`` of ``recipes``). The authors' code puts the
prompt before the fixed token, ``[prompt, BOS, targets]`` (layout ``mem-bos``); our engine puts
it after, ``[BOS, prompt, targets]`` (``bos-mem``). ``plans.remeasure_sweeps`` runs that protocol
on Gemma-3-270M at m = 1 on the grid n = 5, 10, ..., 25, once per layout, with the seed of the
book's sweeps: random words are prefix-stable (``targets.PREFIX_STABLE``), so each target is the
first 25 tokens of the string the book's recipe crams, and the three are comparable string by
string.

A(n) under a grid protocol is the fraction of strings solved at n (each length is its own cold
run, so a string may fail at 15 and succeed at 20); under a growing recipe it is the fraction
whose threshold reaches n (``accessibility.accessible_fraction``). A prompt that reproduces n'
tokens also reproduces their prefixes, so the same grid runs certify a string at every n up to
the longest length it was solved at: the *certified* A(n), at least the protocol's own.

Explained in: book/cramming.md
"""

from __future__ import annotations

import numpy as np

from . import plans, store
from .accessibility import n50_grid

# The paper's own A(n) for Gemma-3-270M, m = 1, random words, on its own strings and grid:
# digitised from the authors' committed figure (repository mario-michelessa/transformers_accessibility,
# cramming/figures/google_gemma-3-270m_both.pdf, lower-left panel: the m = 1 curve has two grid
# points; the right panel's m = 1 marker reads the same n50). Their grid steps by 10 tokens.
PAPER_GEMMA_M1 = {"grid": (10, 20), "A": (0.5, 0.0)}


def sweeps(model: str = "gemma3-270m", *, root=None) -> dict:
    """``{layout: load_sweep(...)}`` of the stored replication sweeps of ``model`` (those of
    ``plans.remeasure_sweeps`` that run the ``paper`` recipe); a layout with no stored folder is
    left out.

    Explained in: book/cramming.md
    """
    from ..paths import data_dir

    base = data_dir() if root is None else root
    out = {}
    for cfg in plans.remeasure_sweeps():
        if cfg.recipe != "paper" or cfg.model != model:
            continue
        folder = store.sweep_dir(cfg, base)
        if (folder / "sweep.json").is_file():
            out[cfg.cram.layout] = store.load_sweep(folder)
    return out


def _rows(sweep: dict, method: str, m: int) -> dict:
    """``{string: row}`` of a sweep's finished, finite rows of ``method`` at ``m``."""
    rows = sweep["units"].get(method, {}).get(m, [])
    return {r["string"]: r for r in rows if r["status"] != "nan"}


def compare(by_layout: dict, book: dict | None = None, *, m: int = 1) -> dict:
    """A(n) on the replication grid for each layout and, when ``book`` (a sweep of the book's
    recipe) is given, for the book's recipe, over the strings that every one of them has
    finished.

    Returns ``{"grid", "strings", "A": {label: [A(n) per grid length]}, "n50": {label: float},
    "censored": {label: bool}, "solved": {label: {string: [bool per grid length]}},
    "reversals": {label: [strings crammed at some length after failing at a shorter one]},
    "certified": {label: [A(n) counting a string at every n up to its longest solved length]},
    "n50_certified": {label: float}, "cut": {label: [strings whose grid ended early]}}``; labels
    are the layouts and ``"book"`` (whose certified curve is its own: a grown threshold is already
    prefix-closed). n50 is the paper's grid estimator
    (``accessibility.n50_grid``); ``censored`` when A(n) is still at least 1/2 at the end of the
    grid, so that n50 lies beyond it. ``cut`` lists the strings whose grid run stopped before its
    last length (the ``paper`` recipe's ``grid_stop``: the lengths not run count as failures, which
    can only lower A(n) there). No common string: empty lists and dicts.

    Explained in: book/cramming.md
    """
    grids = {tuple(r["grid"]) for s in by_layout.values() for r in _rows(s, "grid", m).values()}
    if len(grids) > 1:
        raise ValueError(f"the replication sweeps ran different grids: {sorted(grids)}")
    rows = {lay: _rows(s, "grid", m) for lay, s in by_layout.items()}
    if book is not None:
        rows["book"] = _rows(book, "grow", m)
    common = sorted(set.intersection(*(set(r) for r in rows.values()))) if rows else []
    grid = list(grids.pop()) if grids else []
    if not common or not grid:
        return {"grid": grid, "strings": [], "A": {}, "n50": {}, "censored": {}, "solved": {},
                "reversals": {}, "certified": {}, "n50_certified": {}, "cut": {}}
    solved = {}
    for label, by_string in rows.items():
        if label == "book":  # a grown threshold reaches n exactly when every n' <= it is crammed
            solved[label] = {i: [by_string[i]["threshold"] >= n for n in grid] for i in common}
        else:
            solved[label] = {i: list(map(bool, by_string[i]["solved"])) for i in common}
    a = {label: np.mean([s[i] for i in common], axis=0).tolist() for label, s in solved.items()}
    cert = {label: np.mean([_prefix_closed(s[i]) for i in common], axis=0).tolist()
            for label, s in solved.items()}
    return {"grid": grid, "strings": common, "A": a,
            "n50": {label: n50_grid(grid, f) for label, f in a.items()},
            "censored": {label: f[-1] >= 0.5 for label, f in a.items()}, "solved": solved,
            "reversals": {label: [i for i in common if _reversed(s[i])] for label, s in solved.items()},
            "certified": cert, "n50_certified": {label: n50_grid(grid, f) for label, f in cert.items()},
            "cut": {label: [i for i in common if by_string[i].get("tried", len(grid)) < len(grid)]
                    for label, by_string in rows.items()}}


def _reversed(solved: list) -> bool:
    """Whether a grid run succeeded at some length after failing at a shorter one: the prefix it
    reproduced there shows the failure was the optimiser's, not the model's."""
    return _prefix_closed(solved) != list(map(bool, solved))


def _prefix_closed(solved: list) -> list:
    """``solved`` with every length up to the longest solved one counted as solved: what the
    prompt found there certifies for its prefixes."""
    last = max((k for k, ok in enumerate(solved) if ok), default=-1)
    return [k <= last for k in range(len(solved))]


def paper_n50() -> float:
    """n50 of the paper's own Gemma-3-270M curve at m = 1 (``PAPER_GEMMA_M1``), by the same grid
    estimator as ``compare``.

    Explained in: book/cramming.md
    """
    return n50_grid(list(PAPER_GEMMA_M1["grid"]), list(PAPER_GEMMA_M1["A"]))
