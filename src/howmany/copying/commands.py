"""``python -m howmany copy``: train (or reuse) the copy-task models and say where each breaks;
in-process, each from-scratch copier whose checkpoint is on this machine is then checked at
every training length (``range_check``) and its failed copies sorted by their first mistake
(``mistakes``).

``--backend ray [--address auto|HOST:PORT] [--workers N]`` trains them on a Ray cluster
(``copying.cluster``), with the same result files as the default in-process backend.

Explained in: book/copying.md
"""

from __future__ import annotations

import json

from .. import distributed
from . import evaluation, mistakes, models, range_check


def _row(run: dict, train_max: int) -> str:
    row = evaluation.summary(run, train_max=train_max)
    return "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in row.items())


def _checks(result: dict, cfg, args) -> None:
    """The checks of ``args.checks`` on one trained copier (skipped where its checkpoint is not
    on this machine): every training length, and the kinds of its first mistakes."""
    run = {**result, "cfg": cfg}
    try:
        if "range" in args.checks:
            check = range_check.cached_check(run, args.profile)
            w = check.result["worst"]
            print(f"  range check: worst n={w['n']} {w['k']}/{w['strings']} copied", check.path,
                  flush=True)
        if "mistakes" in args.checks:
            tally = mistakes.cached(run, args.profile)
            print("  first mistakes: " + "  ".join(
                f"n={r['n']} " + ",".join(f"{k}={r[k]}" for k in mistakes.KINDS if r[k])
                for r in tally.result["rows"] if r["wrong"]), tally.path, flush=True)
    except FileNotFoundError as err:  # stored run, trained on another machine
        print(f"  checks skipped: {err}", flush=True)


def _cli(args) -> int:
    from . import cluster

    jobs = cluster.units(args.profile, seed=args.seed, archs=args.arch, widths=args.widths,
                         short=args.short_range, depths=args.depths, finetune=args.finetune)
    if args.backend == "inprocess":
        for call, cfg in jobs:
            rec = call(verbose=True)
            print(_row(rec.result, cfg.max_len), rec.path, flush=True)
            if not args.finetune:  # every from-scratch copier whose checkpoint is here
                _checks(rec.result, cfg, args)
        return 0
    try:
        distributed.import_ray()
    except ImportError as err:
        raise SystemExit(str(err)) from None
    records, stats = cluster.run(jobs, distributed.from_args(args), verbose=True)
    for (_, cfg), rec in zip(jobs, records):
        if rec is not None:
            print(_row(rec.result, cfg.max_len), rec.path, flush=True)
    for line in stats["errors"]:
        print(f"failed: {line}", flush=True)
    print(json.dumps(stats), flush=True)
    return 1 if stats["failed"] else 0


def add_cli(sub) -> None:
    """Register the ``copy`` sub-command (checkpoints go to ``training.checkpoint_dir()``).

    Explained in: book/copying.md
    """
    p = sub.add_parser("copy", help="train/evaluate the copy-task models of book/copying.md")
    p.add_argument("--profile", default="full", help="smoke | default | full")
    p.add_argument("--arch", nargs="*", choices=models.ARCHS, help="default: all five")
    runs = p.add_mutually_exclusive_group()
    runs.add_argument("--widths", action="store_true", help="the width-vs-cliff runs instead")
    runs.add_argument("--short-range", action="store_true",
                      help="the shorter-range runs instead (the LSTM on 5-10 and 5-20 letters)")
    runs.add_argument("--depths", action="store_true",
                      help="the deeper runs instead (the LSTM stacked two high)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--finetune", nargs="*", choices=("paper", "short"),
                   help="fine-tune the pretrained model instead (SmolLM2-135M; hours on a CPU)")
    p.add_argument("--checks", nargs="*", choices=("range", "mistakes"), default=["range", "mistakes"],
                   help="after each from-scratch copier (in-process, where its checkpoint is here): "
                        "every training length at 1,000 strings, and the kinds of its first "
                        "mistakes (default both; none: --checks)")
    distributed.add_arguments(p, inprocess="one training after another, here",
                              workers="trainings")
    p.set_defaults(func=_cli)
