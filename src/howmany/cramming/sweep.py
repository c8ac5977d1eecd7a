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
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .. import results
from . import accessibility, recipes, targets
from .engine import LAYOUTS, CramConfig
from .thresholds import THRESHOLD_METHODS


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

    def __post_init__(self):
        if not self.ms or min(self.ms) < 1 or self.n_strings < 1 or self.batch_size < 1:
            raise ValueError(f"ms, n_strings and batch_size must be positive, got ms={self.ms}, "
                             f"n_strings={self.n_strings}, batch_size={self.batch_size}")
        if unknown := set(self.methods) - set(THRESHOLD_METHODS):
            raise ValueError(f"unknown threshold method(s) {sorted(unknown)}: choose from "
                             f"{', '.join(THRESHOLD_METHODS)}")

    @classmethod
    def for_recipe(cls, model: str, recipe, **kw) -> SweepConfig:
        """A sweep that measures thresholds with ``recipe`` (a ``recipes.Recipe``)."""
        return cls(model=model, methods=(recipe.method,), cram=recipe.cram, recipe=recipe.name,
                   grid_step=recipe.grid_step, **kw)

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
    return Path(root) / "cramming" / f"sweep-{cfg.model}-{cfg.kind}-{results.config_key(cfg)}"


def _unit_path(folder: Path, m: int, method: str, i: int) -> Path:
    return folder / f"m{m}-{method}-s{i:03d}.json"


def sweep_targets(cfg: SweepConfig, lm) -> np.ndarray:
    """The sweep's strings [n_strings, n_max(max m)]; prefixes serve the smaller m."""
    return targets.make_targets(cfg.kind, cfg.n_strings, cfg.n_max(max(cfg.ms)), seed=cfg.seed,
                                tokenizer=lm.tokenizer, d_vocab=lm.d_vocab)


def run_sweep(lm, cfg: SweepConfig, folder: Path, *, verbose: bool = False, only_ms=None,
              batch_size: int | None = None) -> Path:
    """Run (or resume) a sweep into ``folder``; returns the folder.

    Order: method, then batch of strings, then m — so a partial sweep already covers every m.
    ``only_ms`` (some of ``cfg.ms``) and ``batch_size`` (instead of ``cfg.batch_size``) change
    only what this run does: config, folder and strings stay; each unit records its batch.

    Explained in: book/cramming.md
    """
    folder = Path(folder)
    ms = tuple(cfg.ms if only_ms is None else only_ms)
    if not set(ms) <= set(cfg.ms):
        raise ValueError(f"only_ms={ms} is not part of the sweep's m values {cfg.ms}")
    step = cfg.batch_size if batch_size is None else int(batch_size)
    if step <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance": results.provenance(
        seed=cfg.seed, device=lm.device, dtype=cfg.dtype)})
    tg = sweep_targets(cfg, lm)
    todo = [(meth, c, m) for meth in cfg.methods for c in range(0, cfg.n_strings, step)
            for m in ms]
    total = len(cfg.methods) * len(cfg.ms) * cfg.n_strings
    done = sum(_unit_path(folder, m, me, i).exists() for me in cfg.methods for m in cfg.ms
               for i in range(cfg.n_strings))
    bar = tqdm(total=total, initial=done, disable=not verbose, desc=f"cram {cfg.model}")
    for meth, c, m in todo:
        idx = [i for i in range(c, min(c + step, cfg.n_strings))
               if not _unit_path(folder, m, meth, i).exists()]
        if not idx:
            continue
        t0 = time.perf_counter()
        kw = dict(grid=cfg.grid(m)) if meth == "grid" else {}
        out = THRESHOLD_METHODS[meth](
            lm.model, lm.bos_id, tg[idx, : cfg.n_max(m)], m, cfg.cram,
            seeds=[cfg.seed * 100_003 + m * 10_007 + i for i in idx], verbose=verbose, **kw)
        wall = time.perf_counter() - t0
        for i, r in zip(idx, out):
            prov = results.provenance(seed=cfg.seed, device=lm.device, dtype=cfg.dtype, wall_s=wall)
            results.atomic_write_json(_unit_path(folder, m, meth, i), {
                "config": {"m": m, "method": meth, "string": i, "n_max": cfg.n_max(m),
                           "batch": len(idx)},
                "result": {**r, "target": tg[i, : cfg.n_max(m)].tolist()}, "provenance": prov})
        bar.update(len(idx))
    bar.close()
    return folder


def load_sweep(folder: Path) -> dict:
    """Read every finished unit of a sweep: ``{"config", "units": {method: {m: [...]}}}``.

    Explained in: book/cramming.md
    """
    folder = Path(folder)
    head = json.loads((folder / "sweep.json").read_text())
    units: dict = {}
    for path in sorted(folder.glob("m*-*-s*.json")):
        u = json.loads(path.read_text())
        c = u["config"]
        units.setdefault(c["method"], {}).setdefault(int(c["m"]), []).append(
            {**u["result"], "string": c["string"], "wall_s": u["provenance"].get("wall_time_s")})
    return {"config": head["config"], "provenance": head["provenance"], "units": units,
            "folder": str(folder)}


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
    p.add_argument("model", help="howmany.models.load name, e.g. smollm2-135m or tiny-llama-d32-v64-l2")
    p.add_argument("--m", type=int, nargs="+", default=[1, 2, 3, 4], help="soft-prompt lengths")
    p.add_argument("--strings", type=int, default=16, help="strings per m")
    p.add_argument("--kind", default="random-words", choices=targets.KINDS)
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
    p.add_argument("--device", default="auto")
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    from .. import models

    if min(args.m) <= 0 or args.strings <= 0:
        raise SystemExit("--m values and --strings must be positive")
    if args.only_m and not set(args.only_m) <= set(args.m):
        raise SystemExit(f"--only-m {args.only_m} must be among --m {args.m}")
    if args.run_batch is not None and args.run_batch <= 0:
        raise SystemExit("--run-batch must be positive")
    common = dict(dtype=args.dtype, kind=args.kind, ms=tuple(args.m), n_strings=args.strings,
                  n_max_base=args.n_max[0], n_max_per_m=args.n_max[1], batch_size=args.batch,
                  seed=args.seed)
    if args.recipe:
        rec = recipes.get(args.recipe)
        rec = replace(rec, cram=replace(rec.cram, layout=args.layout))
        cfg = SweepConfig.for_recipe(args.model, rec, **common)
    else:
        cram_cfg = CramConfig(max_steps=args.max_steps, patience=args.patience, layout=args.layout)
        cfg = SweepConfig(model=args.model, methods=tuple(args.methods), cram=cram_cfg, **common)
    lm = models.load(args.model, dtype=args.dtype, device=args.device)
    folder = sweep_dir(cfg, results.store_root(args.profile, heavy=True))
    print(f"sweep folder: {folder}", flush=True)
    run_sweep(lm, cfg, folder, verbose=True, only_ms=args.only_m, batch_size=args.run_batch)
    summary = summarise(load_sweep(folder))
    print(json.dumps({"counts": summary["counts"], "n50": summary["n50"], "fit": summary["fit"]},
                     indent=1))
    return 0
