"""The ``python -m howmany cram`` command: a resumable sweep from the command line.

``add_cli`` registers the command, ``configs_from_args`` turns a command line into the sweeps it
asks for (checked before any model loads) and ``run`` runs them (``cramming.sweep``, or the Ray
backend ``cramming.cluster``) and prints each sweep's summary (``cramming.store``).

Explained in: book/cramming.md
"""

from __future__ import annotations

import json
from dataclasses import replace

from .. import checks, distributed, profiles, results
from . import claims, recipes, targets
from .engine import LAYOUTS, CramConfig
from .store import load_sweep, summarise
from .sweep import SweepConfig, run_sweep, sweep_dir
from .thresholds import THRESHOLD_METHODS


def add_cli(sub) -> None:
    """Register ``python -m howmany cram MODEL --m 1 2 3 4 --strings 20 --kind random-words``."""
    p = sub.add_parser("cram", help="resumable cramming sweep into the results store")
    p.add_argument("model", nargs="?", help="howmany.models.load name, e.g. smollm2-135m or "
                   "tiny-llama-d32-v64-l2")
    p.add_argument("--models", nargs="+", default=[], help="several models in one job (same sweep)")
    p.add_argument("--m", type=int, nargs="+", default=[1, 2, 3, 4], help="soft-prompt lengths")
    p.add_argument("--strings", type=int, default=None,
                   help="strings per m (default 16; with --budget-curves, 8)")
    p.add_argument("--kind", nargs="+", default=["random-words"], choices=targets.KINDS,
                   help="target kind(s); several give one sweep per (model, kind)")
    p.add_argument("--remeasure", action="store_true",
                   help="every sweep of the chapter's re-measurement with the book's recipe, and "
                        "the replication point under the paper's protocol "
                        "(cramming.plans.remeasure_sweeps; --strings per m, --dtype); no MODEL. "
                        "With --profile smoke, a rehearsal in minutes: the first m of each sweep, "
                        "a hundredth of every step cap, in a temporary store")
    p.add_argument("--budget-curves", action="store_true",
                   help="every recipe on the strings of the chapter's budget curves "
                        "(cramming.plans.budget_sweeps), going on from the stored runs; no MODEL. "
                        "With --profile smoke, a rehearsal as for --remeasure; may be combined "
                        "with --remeasure")
    p.add_argument("--progress", action="store_true",
                   help="where the store's sweeps stand (only MODEL's or --models' when named): "
                        "strings finished, in flight (running now or paused) and not started; "
                        "reads files only, computes nothing")
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
    p.add_argument("--n-max", type=int, nargs=2, metavar=("BASE", "PER_M"),
                   default=[SweepConfig.n_max_base, SweepConfig.n_max_per_m],
                   help="longest prefix tried: BASE + PER_M·m tokens (part of the config); a wider "
                        "cap takes over the strings a narrower sweep finished below its own")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", default="full", help="store: full → data/, smoke → temp store")
    p.add_argument("--continued-only", action="store_true",
                   help="for a recipe that continues another (book: progressive), run only the "
                        "strings whose run of that recipe is stored")
    p.add_argument("--claim-stale", type=float, default=claims.STALE_S,
                   help="seconds after which another process's untouched batch claim counts as dead")
    p.add_argument("--device", default="auto", help="inprocess backend (ray: GPUs when it has them)")
    p.add_argument("--jobs", type=int, default=1,
                   help="inprocess: this many processes share the sweeps' batches (on a CPU each "
                        "gets an equal share of the cores; on a GPU they share it); logs per process")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop after this many seconds (exit status 124), keeping what finished "
                        "and each unfinished batch's snapshot: the same command resumes")
    distributed.add_arguments(p, inprocess="one device, models one after another",
                              workers="actors")
    p.set_defaults(func=run)


def _rehearsal(args) -> bool:
    """``--remeasure``/``--budget-curves`` with ``--profile smoke``: the plan rehearsed."""
    return (args.remeasure or args.budget_curves) and args.profile == "smoke"


def configs_from_args(args) -> list[SweepConfig]:
    """The sweeps a ``cram`` command line asks for: one per (model, kind), checked first."""
    profiles.check(args.profile)  # everything is checked before the model loads
    if min(args.m) <= 0 or (args.strings is not None and args.strings <= 0):
        raise ValueError(f"--m values and --strings must be positive, got --m {args.m} "
                         f"--strings {args.strings}")
    if args.only_m and not set(args.only_m) <= set(args.m):
        raise ValueError(f"--only-m {args.only_m} must be among --m {args.m}")
    if args.run_batch is not None and args.run_batch <= 0:
        raise ValueError(f"--run-batch must be positive, got {args.run_batch}")
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    if args.time_limit is not None and args.time_limit <= 0:
        raise ValueError(f"--time-limit must be positive seconds, got {args.time_limit:g}")
    if args.backend == "ray" and (args.jobs > 1 or args.time_limit):
        raise ValueError("--jobs and --time-limit are for the inprocess backend; Ray sizes its "
                         "own workers (--workers)")
    common = dict(dtype=args.dtype, ms=tuple(args.m), n_strings=args.strings or 16,
                  n_max_base=args.n_max[0], n_max_per_m=args.n_max[1], batch_size=args.batch,
                  seed=args.seed)
    names = ([args.model] if args.model else []) + list(args.models)
    if args.remeasure or args.budget_curves:
        flag = "--remeasure" if args.remeasure else "--budget-curves"
        if names or args.recipe or args.only_m:
            raise ValueError(f"{flag} names its own models, recipes and m values: drop "
                             "MODEL, --models, --recipe and --only-m")
        from . import plans

        todo = plans.remeasure_sweeps(args.strings or 16, rehearsal=_rehearsal(args)) \
            if args.remeasure else []
        if args.budget_curves:
            todo += plans.budget_sweeps(args.strings, rehearsal=_rehearsal(args))
        return [replace(cfg, dtype=args.dtype) for cfg in todo]
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


def _run_jobs(args, cfgs, folders, root) -> int:
    """``--jobs``/``--time-limit``: copies of this command share the work (``cramming.jobs``)."""
    import sys

    from . import jobs, units

    ms = {cfg: tuple(args.only_m or cfg.ms) for cfg in cfgs}
    todo = [(f, m, me, i) for cfg, f in zip(cfgs, folders) for me in cfg.methods for m in ms[cfg]
            for i in range(cfg.n_strings)]
    argv = jobs.child_argv(getattr(args, "argv", None) or sys.argv[1:])
    status = jobs.run_jobs(argv, args.jobs, store=root, total=len(todo), time_limit=args.time_limit,
                           count_done=lambda: sum(units.unit_path(*t).exists() for t in todo))
    if status == 0:
        for cfg, folder in zip(cfgs, folders):
            counts = summarise(load_sweep(folder))["counts"]
            print(json.dumps({"model": cfg.model, "kind": cfg.kind, "counts": counts}))
    return status


def _hours(s: float) -> str:
    return f"{s / 60:.0f} min" if s < 3600 else f"{s / 3600:.1f} h"


def _flying(f) -> str:
    """One batch in flight, in words."""
    of = f"{{:,}} of at most {f.step_cap:,} steps" if f.step_cap else "{:,} steps"
    where = [f"string {i} at {v} tokens after {of.format(n)}" if v is not None
             else f"string {i} after {of.format(n)}"
             for i, v, n in zip(f.strings, f.verified, f.steps)]
    rounds = f", {f.rounds} round{'s' * (f.rounds > 1)} done" if f.rounds else ""
    state = "running" if f.running else "paused"
    return f"{state}: {'; '.join(where)}{rounds} ({_hours(f.wall_s)})"


def show_progress(args) -> int:
    """``cram --progress``: print where every sweep of the store stands (``cramming.progress``)."""
    from . import progress

    profiles.check(args.profile)
    names = ([args.model] if args.model else []) + list(args.models)
    folders = progress.sweeps(results.store_root(args.profile, heavy=True), models=names)
    if not folders:
        print("no sweep in this store" + (f" for {', '.join(names)}" if names else ""))
    for folder in folders:
        p = progress.progress(folder, stale_s=args.claim_stale)
        recipe = f"recipe {p.recipe}" if p.recipe else "settings by hand"
        print(f"{folder.name}: {p.model}, {p.kind}, {recipe}, {p.dtype}"
              + (", finished" if p.done else ""))
        for c in p.cells:
            head = f"  {c.method} m={c.m}: {len(c.finished)}/{p.n_strings} finished"
            if c.finished:
                cap = f"; {c.censored} at the {c.n_max}-token cap" if c.censored else ""
                took = f"; {c.inherited} taken over from a narrower cap" if c.inherited else ""
                head += f" (median {c.median:g}{cap}{took}; {_hours(c.wall_s)})"
            if c.not_started and c.not_started < p.n_strings:
                head += f", {c.not_started} not started"
            print(head)
            for f in c.in_flight:
                print(f"    in flight, {_flying(f)}")
    return 0


def run(args) -> int:
    """Run the ``cram`` command line ``args``; returns the exit status."""
    from .. import models  # loaded only once the command line is checked

    if args.progress:
        return show_progress(args)
    cfgs = configs_from_args(args)
    for cfg in cfgs:
        models.check_name(cfg.model)  # a wrong name stops before anything is printed or written
    root = results.store_root(args.profile, heavy=True)
    folders = [sweep_dir(cfg, root) for cfg in cfgs]
    if _rehearsal(args):
        print("rehearsal: the first m of each sweep with a hundredth of every step cap, in a "
              "temporary store; it checks the setup, its thresholds measure nothing", flush=True)
    print("sweep folders:", *folders, sep="\n  ", flush=True)
    part = dict(only_ms=args.only_m, batch_size=args.run_batch)  # what this process runs
    if args.jobs > 1 or args.time_limit:
        return _run_jobs(args, cfgs, folders, root)
    if args.backend == "ray":
        from . import cluster

        try:
            cluster.import_ray()
        except ImportError as err:
            raise SystemExit(str(err)) from None
        stats = cluster.run_sweeps(list(zip(cfgs, folders)), distributed.from_args(args),
                                   verbose=True, **part)
        print(json.dumps(stats), flush=True)
    else:
        device = checks.device(args.device)
        for cfg, folder in zip(cfgs, folders):
            run_sweep(models.load(cfg.model, dtype=args.dtype, device=device), cfg, folder,
                      verbose=True, claim_stale_s=args.claim_stale,
                      continued_only=args.continued_only, **part)
    for cfg, folder in zip(cfgs, folders):
        summary = summarise(load_sweep(folder))
        print(json.dumps({"model": cfg.model, "kind": cfg.kind, "counts": summary["counts"],
                          "n50": summary["n50"], "fit": summary["fit"]}, indent=1))
    return 0 if args.backend != "ray" or not stats["failed"] else 1
