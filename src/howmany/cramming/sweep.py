"""Resumable cramming sweeps over prompt lengths m, and their summaries (n50, slope).

A sweep crams the same target strings for every m with one or both threshold methods of
``howmany.cramming`` (paper §5.1, Fig. 3, Table 1). The model is loaded once. Each
(m, method, string) result is written atomically to its own JSON file in the sweep folder
(``<store>/cramming/sweep-<model>-<kind>-<hash8>/``) as soon as its batch finishes, so a killed
sweep resumes where it stopped and loses at most the strings in flight. A partial sweep can be
summarised: every summary says how many strings per m it rests on.

Explained in: book/cramming.md
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .. import checks, distributed, profiles, results, safepaths
from . import accessibility, claims, recipes, resume, targets
from .engine import LAYOUTS, CramConfig
from .thresholds import THRESHOLD_METHODS


SNAPSHOT_S = 60.0  # seconds between snapshots of a running unit
INFLIGHT_DIR = "inflight"  # kept snapshots of units in flight, inside the sweep folder


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


def sweep_dir(cfg: SweepConfig, root: Path) -> Path:
    """Folder of a sweep inside a results store root (named by model, kind and config hash)."""
    name = f"sweep-{safepaths.component(cfg.model)}-{safepaths.component(cfg.kind)}"
    return safepaths.inside(Path(root), "cramming", f"{name}-{results.config_key(cfg)}")


def _unit_path(folder: Path, m: int, method: str, i: int) -> Path:
    return folder / f"m{m}-{method}-s{i:03d}.json"


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
    total = len(cfg.methods) * len(cfg.ms) * cfg.n_strings
    done = sum(_unit_path(folder, m, me, i).exists() for me in cfg.methods for m in cfg.ms
               for i in range(cfg.n_strings))
    bar = tqdm(total=total, initial=done, disable=not verbose, desc=f"cram {cfg.model}")
    claimer = claims.Claimer(folder, stale_s=claim_stale_s)
    try:
        for meth, m, idx in todo:
            c = idx[0] - idx[0] % step
            key = f"{meth}-m{m}-c{c}-b{step}"
            if not claimer.take(key):
                continue  # another process computes this batch now
            idx = _todo(folder, m, meth, c, step, cfg)  # again: it may have finished meanwhile
            base = base_rows(cfg, folder, (meth, m, idx)) if idx else {}
            if continued_only:
                idx = [i for i in idx if i in base]
            if idx:
                partial = resume.partial_dir() / folder.name / f"{key}.pt"
                kept = folder / INFLIGHT_DIR / f"{key}.json"
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


def plan_units(cfg: SweepConfig, folder: Path, *, only_ms=None, batch_size: int | None = None):
    """The sweep's pending units ``(method, m, strings)`` in run order (an iterator, lazy).

    Order: method, then batch of strings, then m — so a partial sweep already covers every m.
    A unit is one batch of strings at one m; its finished strings are left out as the
    iteration reaches it. ``run_sweep`` and the Ray backend (``cramming.cluster``) both follow it.

    Explained in: book/cramming.md
    """
    folder = Path(folder)
    ms = tuple(cfg.ms if only_ms is None else only_ms)
    if not set(ms) <= set(cfg.ms):
        raise ValueError(f"only_ms={ms} is not part of the sweep's m values {cfg.ms}")
    step = cfg.batch_size if batch_size is None else int(batch_size)
    if step <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    batches = [(meth, m, range(c, min(c + step, cfg.n_strings))) for meth in cfg.methods
               for c in range(0, cfg.n_strings, step) for m in ms]

    def pending():  # a file written after planning (a resumed or parallel run) is still skipped
        for meth, m, strings in batches:
            if idx := [i for i in strings if not _unit_path(folder, m, meth, i).exists()]:
                yield meth, m, idx

    return pending()


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
    if states is None and base and meth == "grow":
        states = [resume.continuation(base[i]["result"], lm.model, m, cfg.cram, sd)
                  if i in base else None for i, sd in zip(idx, seeds)]
    prov = results.provenance(seed=cfg.seed, device=lm.device, dtype=cfg.dtype)

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
        path = _unit_path(bfolder, m, meth, i)
        if path.is_file():
            u = json.loads(path.read_text())
            out[i] = {"result": u["result"], "source": {
                "recipe": base.name, "folder": bfolder.name, "file": path.name,
                "steps": u["result"]["steps"], "wall_s": u["provenance"].get("wall_time_s"),
                "commit": u["provenance"].get("git_commit")}}
    return out


def write_unit(folder: Path, cfg: SweepConfig, unit, rows, *, device: str, wall_s: float,
               extra: dict | None = None) -> None:
    """Write each string of a finished unit atomically to its own file (``extra``: provenance)."""
    meth, m, idx = unit
    for i, r in zip(idx, rows):
        prov = results.provenance(seed=cfg.seed, device=device, dtype=cfg.dtype, wall_s=wall_s)
        results.atomic_write_json(_unit_path(folder, m, meth, i), {
            "config": {"m": m, "method": meth, "string": i, "n_max": cfg.n_max(m),
                       "batch": len(idx)}, "result": r, "provenance": {**prov, **(extra or {})}})


def _todo(folder: Path, m: int, meth: str, c: int, step: int, cfg: SweepConfig) -> list[int]:
    return [i for i in range(c, min(c + step, cfg.n_strings))
            if not _unit_path(folder, m, meth, i).exists()]


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
             "commit": u["provenance"].get("git_commit")})
    return {"config": head["config"], "provenance": head["provenance"], "units": units,
            "folder": str(folder)}


def _wall(unit: dict):
    """A unit's wall time, with that of the stored run it continued (``base_rows``)."""
    own, base = unit["provenance"].get("wall_time_s"), unit["result"].get("continued_from")
    if own is None or not base:
        return own
    return own + (base.get("wall_s") or 0.0)


_UNIT_NAME = re.compile(r"m(?P<m>\d+)-(?P<method>[a-z]+)-s(?P<string>\d+)\.json")


def summarise(sweep: dict, *, method: str | None = None, n_boot: int = 300, seed: int = 0) -> dict:
    """n50 per m (median + logistic, bootstrap CIs), slope fit, and honest counts.

    Strings flagged ``nan`` are excluded and counted. Returns plain JSON types.

    Explained in: book/cramming.md
    """
    units = sweep["units"]
    method = method or next(iter(units))
    by_m, counts = {}, {}
    for m, rows in sorted(units.get(method, {}).items()):
        ok = [r for r in rows if r["status"] != "nan"]
        counts[m] = {"done": len(rows), "nan": len(rows) - len(ok),
                     "censored": sum(bool(r["censored"]) for r in ok)}
        if ok:
            by_m[m] = np.array([r["threshold"] for r in ok], dtype=float)
    n50 = [accessibility.n50_with_ci(m, t, n_boot=n_boot, seed=seed).to_dict()
           for m, t in by_m.items()]
    fit = None
    if len(by_m) >= 2:
        fit = accessibility.slope_fit(by_m, n_boot=n_boot, seed=seed).to_dict()
    return {"method": method, "counts": counts, "n50": n50, "fit": fit,
            "thresholds": {m: t.tolist() for m, t in by_m.items()},
            "n_strings": sweep["config"]["n_strings"]}


def add_cli(sub) -> None:
    """Register ``python -m howmany cram MODEL --m 1 2 3 4 --strings 20 --kind random-words``."""
    p = sub.add_parser("cram", help="resumable cramming sweep into the results store")
    p.add_argument("model", nargs="?", help="howmany.models.load name, e.g. smollm2-135m or "
                   "tiny-llama-d32-v64-l2")
    p.add_argument("--models", nargs="+", default=[], help="several models in one job (same sweep)")
    p.add_argument("--m", type=int, nargs="+", default=[1, 2, 3, 4], help="soft-prompt lengths")
    p.add_argument("--strings", type=int, default=16, help="strings per m")
    p.add_argument("--kind", nargs="+", default=["random-words"], choices=targets.KINDS,
                   help="target kind(s); several give one sweep per (model, kind)")
    p.add_argument("--recipe", default=None,
                   help=f"a named recipe: {', '.join(recipes.PRESETS)}, optionally scaled "
                        "('book@x2'); sets the method, optimiser and step caps "
                        "(--methods/--max-steps/--patience are then ignored)")
    p.add_argument("--methods", nargs="+", default=["grow", "bisect"],
                   choices=sorted(THRESHOLD_METHODS))
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--layout", default="bos-mem", choices=LAYOUTS)
    p.add_argument("--max-steps", type=int, default=3000)
    p.add_argument("--patience", type=int, default=500)
    p.add_argument("--batch", type=int, default=8, help="strings crammed together (part of the config)")
    p.add_argument("--only-m", type=int, nargs="+", default=None,
                   help="run only these m values of the sweep (same folder and strings)")
    p.add_argument("--run-batch", type=int, default=None,
                   help="cram this many strings at a time in this run (not part of the config)")
    p.add_argument("--n-max", type=int, nargs=2, default=[16, 48], metavar=("BASE", "PER_M"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", default="full", help="store: full → data/, smoke → temp store")
    p.add_argument("--continued-only", action="store_true",
                   help="for a recipe that continues another (book: progressive), run only the "
                        "strings whose run of that recipe is stored")
    p.add_argument("--claim-stale", type=float, default=claims.STALE_S,
                   help="seconds after which another process's untouched batch claim counts as dead")
    p.add_argument("--device", default="auto", help="inprocess backend (ray: GPUs when it has them)")
    distributed.add_arguments(p, inprocess="one device, models one after another",
                              workers="actors")
    p.set_defaults(func=_cli)


def configs_from_args(args) -> list[SweepConfig]:
    """The sweeps a ``cram`` command line asks for: one per (model, kind), checked first."""
    profiles.check(args.profile)  # everything is checked before the model loads
    if min(args.m) <= 0 or args.strings <= 0:
        raise ValueError(f"--m values and --strings must be positive, got --m {args.m} "
                         f"--strings {args.strings}")
    if args.only_m and not set(args.only_m) <= set(args.m):
        raise ValueError(f"--only-m {args.only_m} must be among --m {args.m}")
    if args.run_batch is not None and args.run_batch <= 0:
        raise ValueError(f"--run-batch must be positive, got {args.run_batch}")
    common = dict(dtype=args.dtype, ms=tuple(args.m), n_strings=args.strings,
                  n_max_base=args.n_max[0], n_max_per_m=args.n_max[1], batch_size=args.batch,
                  seed=args.seed)
    names = ([args.model] if args.model else []) + list(args.models)
    if not names:
        raise ValueError("name a model (MODEL or --models A B ...)")
    jobs = [(name, kind) for name in names for kind in args.kind]
    if args.recipe:
        rec = recipes.get(args.recipe)
        rec = replace(rec, cram=replace(rec.cram, layout=args.layout))
        return [SweepConfig.for_recipe(name, rec, kind=kind, **common) for name, kind in jobs]
    cram_cfg = CramConfig(max_steps=args.max_steps, patience=args.patience, layout=args.layout)
    return [SweepConfig(model=name, kind=kind, methods=tuple(args.methods), cram=cram_cfg,
                        **common) for name, kind in jobs]


def _cli(args) -> int:
    from .. import models

    cfgs = configs_from_args(args)
    root = results.store_root(args.profile, heavy=True)
    folders = [sweep_dir(cfg, root) for cfg in cfgs]
    print("sweep folders:", *folders, sep="\n  ", flush=True)
    run = dict(only_ms=args.only_m, batch_size=args.run_batch)
    if args.backend == "ray":
        from . import cluster

        try:
            cluster.import_ray()
        except ImportError as err:
            raise SystemExit(str(err)) from None
        stats = cluster.run_sweeps(list(zip(cfgs, folders)), distributed.from_args(args),
                                   verbose=True, **run)
        print(json.dumps(stats), flush=True)
    else:
        device = checks.device(args.device)
        for cfg, folder in zip(cfgs, folders):
            run_sweep(models.load(cfg.model, dtype=args.dtype, device=device), cfg, folder,
                      verbose=True, claim_stale_s=args.claim_stale,
                      continued_only=args.continued_only, **run)
    for cfg, folder in zip(cfgs, folders):
        summary = summarise(load_sweep(folder))
        print(json.dumps({"model": cfg.model, "kind": cfg.kind, "counts": summary["counts"],
                          "n50": summary["n50"], "fit": summary["fit"]}, indent=1))
    return 0 if args.backend != "ray" or not stats["failed"] else 1
