"""The stored cramming sweeps the book reads: load and summarise one, find them, merge
compatible ones, pick the book's.

``howmany.cramming.sweep`` runs a sweep into one folder per configuration. A sweep extended later to
a new prompt length (say ``m = 5`` after ``m = 1..4``) lives in its own folder, because its
configuration (and so its hash) differs; ``merge_sweeps`` joins such folders back into one sweep
when they share the model, the targets and the cramming protocol, after checking that every string
has the same tokens in all of them.

Explained in: book/cramming.md
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .. import results, safepaths
from . import accessibility
from .engine import CramConfig
from .sweep import SweepConfig, run_sweep, sweep_dir
from .units import SPLIT_KEYS

_UNIT_NAME = re.compile(r"m(?P<m>\d+)-(?P<method>[a-z]+)-s(?P<string>\d+)\.json")


def load_sweep(folder: Path) -> dict:
    """Read every finished unit of a sweep: ``{"config", "units": {method: {m: [...]}}}``.

    Explained in: book/cramming.md
    """
    folder = Path(folder)
    unit_files = sorted(folder.glob("m*-*-s*.json"))
    head_path = folder / "sweep.json"
    if not head_path.is_file():
        raise results.CorruptResultError(
            f"{head_path} is missing ({len(unit_files)} unit files without their sweep header): the "
            "folder cannot be attributed to a configuration; rerun the sweep's `python -m howmany "
            "cram ...` command (it resumes and rewrites the header) or delete the folder")
    how = (f"delete it and resume the sweep with `make results` or its `python -m howmany cram` "
           f"command (folder {folder.name})")
    head = results.read_record(head_path, keys=("config", "provenance"), how=how)
    try:
        cfg = SweepConfig.from_dict(head["config"])
    except (TypeError, ValueError, KeyError) as err:
        raise results.CorruptResultError(f"{head_path}: not a sweep configuration ({err}); {how}") \
            from err
    if not folder.name.endswith(results.config_key(head["config"])):
        raise results.ConfigMismatchError(f"{head_path} holds another configuration than its folder "
                                          f"name says (edited after the fact?); {how}")
    units: dict = {}
    for path in unit_files:
        mt = _UNIT_NAME.fullmatch(path.name)
        if mt is None:
            raise results.CorruptResultError(f"{path}: not a unit file name; {how}")
        m, meth, i = int(mt["m"]), mt["method"], int(mt["string"])
        if m not in cfg.ms or meth not in cfg.methods or i >= cfg.n_strings:
            raise results.ConfigMismatchError(f"{path}: m={m}, method {meth!r}, string {i} are not "
                                              f"part of the sweep in {head_path}; {how}")
        u = results.read_record(path, how=how, expect={"m": m, "method": meth, "string": i,
                                                       "n_max": cfg.n_max(m)})
        r = u["result"]
        if not (isinstance(r, dict) and {"status", "threshold", "censored"} <= set(r)):
            raise results.CorruptResultError(f"{path}: its result lacks status/threshold/censored; "
                                             f"{how}")
        units.setdefault(meth, {}).setdefault(m, []).append(
            {**r, "string": i, "wall_s": _wall(u), "batch": u["config"].get("batch"),
             "commit": u["provenance"].get("git_commit"),
             **({"inherited_from": u["provenance"]["inherited_from"]}
                if u["provenance"].get("inherited_from") else {})})
    return {"config": head["config"], "provenance": head["provenance"], "units": units,
            "folder": str(folder)}


def _wall(unit: dict):
    """A unit's wall time, with that of the stored run it continued (``base_rows``)."""
    own, base = unit["provenance"].get("wall_time_s"), unit["result"].get("continued_from")
    if own is None or not base:
        return own
    return own + (base.get("wall_s") or 0.0)


def summarise(sweep: dict, *, method: str | None = None, n_boot: int = 300, seed: int = 0,
              min_strings: int = 1) -> dict:
    """n50 per m (median + logistic, bootstrap CIs), slope fit, and honest counts.

    Strings flagged ``nan`` are excluded and counted. An m with fewer than ``min_strings``
    finite strings is counted but gets no n50 and stays out of the fit (a median of one or two
    strings is no n50). A sweep with no finished string yet (another process holds its
    batches) gives empty counts. Returns plain JSON types.

    Explained in: book/cramming.md
    """
    units = sweep["units"]
    method = method or next(iter(units), None)  # None: no string finished yet
    by_m, counts = {}, {}
    for m, rows in sorted(units.get(method, {}).items()):
        ok = [r for r in rows if r["status"] != "nan"]
        counts[m] = {"done": len(rows), "nan": len(rows) - len(ok),
                     "censored": sum(bool(r["censored"]) for r in ok)}
        if ok and len(ok) >= min_strings:
            by_m[m] = np.array([r["threshold"] for r in ok], dtype=float)
    n50 = [accessibility.n50_with_ci(m, t, n_boot=n_boot, seed=seed).to_dict()
           for m, t in by_m.items()]
    fit = None
    if len(by_m) >= 2:
        fit = accessibility.slope_fit(by_m, n_boot=n_boot, seed=seed).to_dict()
    return {"method": method, "counts": counts, "n50": n50, "fit": fit,
            "thresholds": {m: t.tolist() for m, t in by_m.items()},
            "n_strings": sweep["config"]["n_strings"]}


# Config keys that may differ between sweeps merged into one (what they ran, not how).
MERGE_FREE = SPLIT_KEYS


def _protocol(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in MERGE_FREE}


def merge_sweeps(sweeps: list[dict]) -> dict:
    """Join sweeps of the same model, targets and protocol into one (first one wins on overlaps).

    The first sweep is the base. Every other sweep whose configuration differs from the base in
    anything but ``MERGE_FREE`` (for example another target kind or step budget) is left out and
    named in ``"skipped"``. A (method, m, string) unit present in several sweeps is taken from
    the earliest. The result has the shape of ``load_sweep`` with ``ms`` and ``n_strings`` widened
    and ``"folders"`` listing the folders it draws on.

    Raises:
        ValueError: no sweep given, or one string index carries different tokens in two sweeps
            (then the sweeps were not made from the same strings and must not be merged).

    Explained in: book/cramming.md
    """
    if not sweeps:
        raise ValueError("merge_sweeps needs at least one sweep")
    base = sweeps[0]
    units = {meth: {m: list(rows) for m, rows in by_m.items()} for meth, by_m in base["units"].items()}
    config, used, skipped = dict(base["config"]), [base["folder"]], []
    for other in sweeps[1:]:
        if _protocol(other["config"]) != _protocol(config):
            skipped.append(other["folder"])
            continue
        used.append(other["folder"])
        config["ms"] = sorted(set(config["ms"]) | set(other["config"]["ms"]))
        config["n_strings"] = max(config["n_strings"], other["config"]["n_strings"])
        for meth, by_m in other["units"].items():
            for m, rows in by_m.items():
                have = units.setdefault(meth, {}).setdefault(m, [])
                seen = {r["string"] for r in have}
                have += [r for r in rows if r["string"] not in seen]
    _check_same_strings(units)
    for by_m in units.values():
        for rows in by_m.values():
            rows.sort(key=lambda r: r["string"])
    return {"config": config, "provenance": base["provenance"], "units": dict(sorted(units.items())),
            "folder": base["folder"], "folders": used, "skipped": skipped}


def _check_same_strings(units: dict) -> None:
    """Every string index must have one token sequence (prefixes of one another) in all units."""
    longest: dict = {}
    for by_m in units.values():
        for rows in by_m.values():
            for r in rows:
                t = np.asarray(r.get("target", []))
                ref = longest.get(r["string"], t)
                k = min(len(t), len(ref))
                if not np.array_equal(t[:k], ref[:k]):
                    raise ValueError(f"string {r['string']} has different tokens in the sweeps "
                                     "being merged; they were not made from the same strings")
                longest[r["string"]] = t if len(t) > len(ref) else ref


def find_sweeps(model: str, *, kind: str | None = None, root: Path | None = None) -> list[Path]:
    """Sweep folders of ``model`` in ``data/cramming`` (or ``root``), newest first.

    Raises:
        results.MissingResultError: none exists (naming the command that makes one).

    Explained in: book/cramming.md
    """
    from ..paths import data_dir

    base = Path(root) if root is not None else data_dir()
    pattern = f"sweep-{safepaths.component(model)}-{safepaths.component(kind) if kind else '*'}-*"
    # every folder, with or without its header: load_sweep names a folder that lost sweep.json
    found = [p for p in (base / "cramming").glob(pattern) if p.is_dir()]
    if not found:
        raise results.MissingResultError(
            f"no cramming sweep for {model!r} in {base / 'cramming'}; compute it with `make results` "
            f"or `python -m howmany cram {model} --m 1 2 3 4 --strings 16` (hours on a CPU), "
            "or run this chapter with PROFILE='smoke'")
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)



BOOK_MODELS = ("smollm2-135m", "gemma3-270m")  # real models of the chapter (full profile)


def book_config(model: str, profile: str) -> SweepConfig:
    """The chapter's sweep per profile: tiny in smoke; otherwise the CPU protocol of the sweeps
    committed in ``data/cramming`` (warm curriculum, at most 300 steps per length, patience 100),
    so that ``make results`` resumes them rather than starting a new configuration."""
    if profile == "smoke":
        return SweepConfig(model=model, kind="random-tokens", ms=(1, 2), n_strings=3, n_max_base=2,
                           n_max_per_m=3, batch_size=3,
                           cram=CramConfig(max_steps=60, patience=30))
    return SweepConfig(model=model, ms=(1, 2, 3, 4), n_strings=16, methods=("grow",),
                       cram=CramConfig(max_steps=300, patience=100))


def book_sweeps(profile: str, *, verbose: bool = False) -> dict:
    """``{model: load_sweep(...)}`` for the chapter.

    smoke: a tiny LeCun-initialised model, computed into the temporary store; full: runs (or
    resumes) the real-model sweeps into ``data/cramming``; default: reads the sweeps found in
    ``data/cramming`` with settings by hand (those that ran a named recipe belong to the recipes'
    comparisons: ``budget.recipe_sweeps``, ``replication``) — for each model the folder with the
    most finished strings, merged with the compatible ones (``merge_sweeps``: same targets and
    protocol, other m values) — and raises ``MissingResultError`` only when no model has one.

    Explained in: book/cramming.md
    """
    from .. import models
    from .scaling import tiny_lm

    if profile == "smoke":
        cfg = book_config("tiny-llama-d32-v64-lecun", profile)
        folder = sweep_dir(cfg, results.store_root(profile, heavy=True))
        return {cfg.model: load_sweep(run_sweep(tiny_lm(d_model=32, d_vocab=64), cfg, folder))}
    if profile == "full":
        out = {}
        for name in BOOK_MODELS:
            cfg = book_config(name, profile)
            folder = sweep_dir(cfg, results.store_root(profile, heavy=True))
            out[name] = load_sweep(run_sweep(models.load(name), cfg, folder, verbose=verbose))
        return out
    out, errors = {}, []
    for name in BOOK_MODELS:
        try:
            folders = find_sweeps(name)
        except results.MissingResultError as err:
            errors.append(str(err))
            continue
        size = lambda s: sum(len(v) for u in s["units"].values() for v in u.values())  # noqa: E731
        found = sorted((s for s in map(load_sweep, folders) if not s["config"].get("recipe")),
                       key=size, reverse=True)
        if not found:
            errors.append(f"every cramming sweep of {name!r} ran a named recipe; the chapter's "
                          f"sweep is `python -m howmany cram {name} --m 1 2 3 4 --strings 16`")
            continue
        best = merge_sweeps(found)  # the largest sweep, with compatible extensions (e.g. m = 5)
        if size(best) == 0:
            errors.append(f"the sweep {best['folder']} has no finished string yet")
            continue
        out[name] = best
    if not out:
        raise results.MissingResultError(" | ".join(errors))
    return out


def stored_bounds(model: str, fmt: str = "fp16") -> dict:
    """Slope bounds C_ball/C_box of ``model`` from the geometry chapter's results in ``data/``.

    Returns ``{"absolute": {...}, "relative": {...}}`` rows of ``geometry.bound_table`` for the
    number format ``fmt`` (the paper uses fp16), each with the radius ``r`` they use (the
    measured ``r_inf``) where the result stores it, or ``{}`` when no geometry result is stored.

    Explained in: book/cramming.md
    """
    from ..paths import data_dir

    files = sorted((data_dir() / "geometry").glob(f"geometry-{model}-*.json"),
                   key=lambda p: p.stat().st_mtime)
    if not files:
        return {}
    rec = results.load(files[-1])
    table = rec.result.get("table") if isinstance(rec.result, dict) else None
    if not isinstance(table, list):
        raise results.CorruptResultError(f"{files[-1]} has no bound table; {results.HOW}")
    summary = rec.result.get("all")
    r = summary.get("r_inf") if isinstance(summary, dict) else None
    return {row["convention"]: {**row, **({"r": float(r)} if r is not None else {})}
            for row in table if row["format"] == fmt}
