"""Resumable cramming sweeps over prompt lengths m: configuration, units, running.

A sweep crams the same target strings for every m with one or both threshold methods of
``howmany.cramming`` (paper §5.1, Fig. 3, Table 1). The model is loaded once. Each
(m, method, string) result is written atomically to its own JSON file in the sweep folder
(``<store>/cramming/sweep-<model>-<kind>-<hash8>/``) as soon as its batch finishes, so a killed
sweep resumes where it stopped and loses at most the strings in flight. The folder and its files
are ``cramming.units``' part (re-exported here); reading and summarising a stored sweep is
``cramming.store``'s; the ``howmany cram`` command is ``cramming.commands``.

Explained in: book/cramming.md
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .. import checks, results
from . import claims, recipes, resume, targets, widen
from .engine import CramConfig
from .thresholds import THRESHOLD_METHODS
from .units import (INFLIGHT_DIR, batch_key, batch_of, kept_path, pending_strings, plan_units,  # noqa: F401 - re-exported
                    sweep_dir, unit_path, write_unit)


SNAPSHOT_S = 60.0  # seconds between snapshots of a running unit


@dataclass(frozen=True)
class SweepConfig:
    """One sweep: model, targets, prompt lengths and the cramming protocol."""

    model: str  # name for howmany.models.load
    dtype: str = "float32"  # compute dtype of the model
    kind: str = "random-words"  # target kind (cramming.targets.KINDS)
    ms: tuple = (1, 2, 3, 4)  # soft-prompt lengths
    n_strings: int = 16  # strings per m (the same strings for every m)
    n_max_base: int = 16  # longest prefix tried = n_max_base + n_max_per_m * m
    n_max_per_m: int = 48
    methods: tuple = ("grow", "bisect")  # threshold methods, run in this order
    batch_size: int = 8  # strings crammed together
    seed: int = 0  # seed of the strings and of the prompt inits
    cram: CramConfig = field(default_factory=CramConfig)  # protocol
    recipe: str = ""  # name of the recipe preset this sweep ran ("" = set by hand)
    grid_step: int = 5  # "grid" method: lengths grid_step, 2·grid_step, ... up to n_max(m)
    grid_stop: int = 0  # "grid" method: end a string after this many consecutive failed lengths

    def __post_init__(self):
        if not self.ms or min(self.ms) < 1 or self.n_strings < 1 or self.batch_size < 1:
            raise ValueError(f"ms, n_strings and batch_size must be positive, got ms={self.ms}, "
                             f"n_strings={self.n_strings}, batch_size={self.batch_size}")
        if unknown := set(self.methods) - set(THRESHOLD_METHODS):
            raise ValueError(f"unknown threshold method(s) {sorted(unknown)}: choose from "
                             f"{', '.join(THRESHOLD_METHODS)}")
        checks.dtype(self.dtype)
        checks.seed(self.seed)
        if self.n_max_base < 0 or self.n_max_per_m < 0 or self.n_max(min(self.ms)) < 1:
            raise ValueError(f"n_max = n_max_base + n_max_per_m·m must be >= 1 with both parts >= 0, "
                             f"got {self.n_max_base} + {self.n_max_per_m}·m")
        if self.grid_step < 1:
            raise ValueError(f"grid_step must be >= 1, got {self.grid_step}")

    @classmethod
    def for_recipe(cls, model: str, recipe, **kw) -> SweepConfig:
        """A sweep that measures thresholds with ``recipe`` (a ``recipes.Recipe``)."""
        return cls(model=model, methods=(recipe.method,), cram=recipe.cram, recipe=recipe.name,
                   grid_step=recipe.grid_step, grid_stop=recipe.grid_stop, **kw)

    def n_max(self, m: int) -> int:
        return int(self.n_max_base + self.n_max_per_m * m)

    def grid(self, m: int) -> list[int]:
        """Target lengths of the "grid" method at prompt length ``m``."""
        return list(range(self.grid_step, self.n_max(m) + 1, self.grid_step))

    def to_dict(self) -> dict:
        d = {**asdict(self), "cram": self.cram.to_dict()}
        if not self.recipe:  # fields added later stay out of the hash of older sweeps
            d.pop("recipe")
        if "grid" not in self.methods:
            d.pop("grid_step")
        if not self.grid_stop:  # added later: sweeps without it keep their hash
            d.pop("grid_stop")
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SweepConfig:
        d = dict(d)
        c = dict(d.pop("cram"))
        c["betas"] = tuple(c["betas"])
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()},
                   cram=CramConfig(**c))


def sweep_targets(cfg: SweepConfig, lm) -> np.ndarray:
    """The sweep's strings [n_strings, n_max(max m)]; prefixes serve the smaller m."""
    return targets.make_targets(cfg.kind, cfg.n_strings, cfg.n_max(max(cfg.ms)), seed=cfg.seed,
                                tokenizer=lm.tokenizer, d_vocab=lm.d_vocab)


def run_sweep(lm, cfg: SweepConfig, folder: Path, *, verbose: bool = False, only_ms=None,
              batch_size: int | None = None, claim_stale_s: float = claims.STALE_S,
              continued_only: bool = False) -> Path:
    """Run (or resume) a sweep into ``folder``; returns the folder.

    Order: method, then batch of strings, then m — so a partial sweep already covers every m.
    ``only_ms`` (some of ``cfg.ms``) and ``batch_size`` (instead of ``cfg.batch_size``) change
    only what this run does: config, folder and strings stay; each unit records its batch.
    Each batch is claimed first (``cramming.claims``), so processes sharing the folder split the
    work; a batch another live process holds is skipped (``claim_stale_s``: when a claim is dead).
    A sweep configuration that does not fit the model's context is refused before anything is
    written, and a run that fails before its first unit leaves no folder behind. A unit
    snapshots itself once a minute (``resume.partial_dir()``), so a killed unit resumes
    where it was; a recipe that continues another (``base_rows``) goes on from its stored
    runs, and ``continued_only`` leaves the strings that have none for a later run.

    Explained in: book/cramming.md
    """
    folder = Path(folder)
    ms = tuple(cfg.ms if only_ms is None else only_ms)
    step = cfg.batch_size if batch_size is None else int(batch_size)
    todo = plan_units(cfg, folder, only_ms=only_ms, batch_size=batch_size)
    for m in ms:  # before any file is written
        checks.fits_context(lm.model, m, cfg.n_max(m), extra=int(cfg.cram.layout != "mem"),
                            what=f"sweep of {cfg.model}: ")
    tg = sweep_targets(cfg, lm)
    fresh = not folder.exists()
    prov = results.provenance(seed=cfg.seed, device=lm.device, dtype=cfg.dtype)
    prov["model_revision"] = getattr(lm, "revision", None)
    results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance": prov})
    widen.inherit(cfg, folder, tg)  # what a narrower cap finished below it, or has in flight
    total = len(cfg.methods) * len(cfg.ms) * cfg.n_strings
    done = sum(unit_path(folder, m, me, i).exists() for me in cfg.methods for m in cfg.ms
               for i in range(cfg.n_strings))
    bar = tqdm(total=total, initial=done, disable=not verbose, desc=f"cram {cfg.model}")
    claimer = claims.Claimer(folder, stale_s=claim_stale_s)
    try:
        for meth, m, idx in todo:
            c, size = batch_of(folder, meth, m, idx[0], step)  # a begun batch keeps its size
            key = batch_key(meth, m, c, size)
            if not claimer.take(key):
                continue  # another process computes this batch now
            idx = pending_strings(folder, m, meth, c, size, cfg)  # again: it may have finished meanwhile
            base = base_rows(cfg, folder, (meth, m, idx)) if idx else {}
            if continued_only:
                idx = [i for i in idx if i in base]
            if idx:
                partial = resume.partial_dir() / folder.name / f"{key}.pt"
                kept = kept_path(folder, key)
                rows, wall = compute_unit(lm, cfg, (meth, m, idx), tg, verbose=verbose,
                                          partial=partial, base=base, kept=kept)
                write_unit(folder, cfg, (meth, m, idx), rows, device=lm.device, wall_s=wall)
                partial.unlink(missing_ok=True)
                kept.unlink(missing_ok=True)
                if kept.parent.is_dir() and not any(kept.parent.iterdir()):
                    kept.parent.rmdir()
            claimer.release(key)
            bar.update(len(idx))
    except BaseException:
        claimer.close()
        if fresh and not any(folder.glob("m*-*-s*.json")) and not any(folder.glob(".claims/*")) \
                and not any(folder.glob(f"{INFLIGHT_DIR}/*.json")):
            shutil.rmtree(folder, ignore_errors=True)  # no header-only folder; nobody else works here
        raise
    finally:
        claimer.close()
        bar.close()
    return folder


def compute_unit(lm, cfg: SweepConfig, unit, tg: np.ndarray, *, verbose: bool = False,
                 partial: Path | None = None, base: dict | None = None,
                 kept: Path | None = None):
    """Cram one unit ``(method, m, strings)`` on a loaded LM; returns (result rows, wall s).

    Seeds depend only on the sweep seed, m and the string, so any worker gets the same rows.
    ``partial`` is a snapshot file: the unit resumes from it when it holds this very unit, and
    it is rewritten once a minute while the unit runs (and, for cold-start searches, after
    every round). ``base`` maps strings to stored rows of the recipe this one continues
    (``base_rows``): those strings go on from that run's first stall instead of repeating it.
    ``kept`` is a copy of the snapshot inside the sweep's folder (``resume.keep``) that the unit
    resumes from when ``partial`` is gone (another machine). The wall time returned includes
    that of the killed processes a resumed unit went on from (kept in its snapshot); a unit
    resumed from a snapshot that did not keep it marks its rows ``wall_is_partial``.

    Explained in: book/cramming.md
    """
    meth, m, idx = unit
    t0, prior, wall_known = time.perf_counter(), 0.0, True
    seeds = [cfg.seed * 100_003 + m * 10_007 + i for i in idx]
    kw = dict(grid=cfg.grid(m), stop=cfg.grid_stop) if meth == "grid" else {}
    meta = {"sweep": results.config_key(cfg), "m": m, "strings": list(idx), "seeds": seeds,
            "base": sorted(base or {})}
    if meth != "grow":
        meta["method"] = meth  # a grid or bisection snapshot is a journal of its rounds
    states = resume.load(partial, meta) if partial is not None else None
    if states is not None:  # resumed: count the time the killed processes spent, if known
        before = resume.spent(partial)
        prior, wall_known = (before or 0.0), before is not None
    elif kept is not None:  # the snapshot is gone (another machine): its kept copy
        states, prior = resume.load_kept(kept, meta)
    resumed = states is not None
    if states is None and base and meth == "grow":
        states = [resume.continuation(base[i]["result"], lm.model, m, cfg.cram, sd)
                  if i in base else None for i, sd in zip(idx, seeds)]
    prov = results.provenance(seed=cfg.seed, device=lm.device, dtype=cfg.dtype)
    origin = widen.origin(kept) if resumed and kept is not None else None
    if origin:  # went on from a narrower sweep's run in flight: every later snapshot says so
        prov["inherited_from"] = origin

    def snap(st):
        wall = prior + time.perf_counter() - t0
        if partial is not None:
            resume.save(partial, st, meta, wall_s=wall)
        if kept is not None:
            resume.keep(kept, st, meta, wall_s=wall, provenance=prov)

    kw.update(resume=states, snapshot_s=SNAPSHOT_S,
              snapshot=None if partial is None and kept is None else snap)
    out = THRESHOLD_METHODS[meth](lm.model, lm.bos_id, tg[idx, : cfg.n_max(m)], m, cfg.cram,
                                  seeds=seeds, verbose=verbose, **kw)
    rows = [{**r, "target": tg[i, : cfg.n_max(m)].tolist()} for i, r in zip(idx, out)]
    for i, r in zip(idx, rows):
        if base and i in base:
            r["continued_from"] = base[i]["source"]
        if not wall_known:  # resumed from a snapshot that did not keep its time
            r["wall_is_partial"] = True
        if origin:  # part of the run was the narrower sweep's
            r["resumed_from"] = origin
    return rows, prior + time.perf_counter() - t0


def base_rows(cfg: SweepConfig, folder: Path, unit) -> dict:
    """``{string: {"result", "source"}}``: the stored rows of the recipe that ``cfg``'s recipe
    continues (``recipes.Recipe.base``, checked by ``resume.continues``) for the strings of
    ``unit``, from that recipe's sweep folder beside ``folder``; empty when there is none.

    Explained in: book/cramming.md
    """
    meth, m, idx = unit
    scale = cfg.recipe.partition("@x")[2]
    try:
        rec = recipes.get(cfg.recipe) if cfg.recipe else None
        base = recipes.get(rec.base + (f"@x{scale}" if scale else "")) if rec and rec.base \
            else None
    except ValueError:
        return {}
    if base is None or meth != "grow":
        return {}
    base = replace(base, cram=replace(base.cram, layout=cfg.cram.layout))
    if replace(rec.cram, layout=cfg.cram.layout) != cfg.cram or \
            not resume.continues(replace(rec, cram=cfg.cram), base):
        return {}  # the folder's settings are not the preset's as it is defined now
    bcfg = replace(cfg, cram=base.cram, recipe=base.name)
    bfolder = Path(folder).parent / sweep_dir(bcfg, Path(folder).parent.parent).name
    out = {}
    for i in idx:
        path = unit_path(bfolder, m, meth, i)
        if path.is_file():
            u = json.loads(path.read_text())
            out[i] = {"result": u["result"], "source": {
                "recipe": base.name, "folder": bfolder.name, "file": path.name,
                "steps": u["result"]["steps"], "wall_s": u["provenance"].get("wall_time_s"),
                "commit": u["provenance"].get("git_commit")}}
    return out
