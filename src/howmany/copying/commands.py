"""``python -m howmany copy``: train (or reuse) the copy-task models and say where each breaks.

Explained in: book/copying.md
"""

from __future__ import annotations

from . import evaluation, experiments, models


def _row(run: dict, train_max: int) -> str:
    row = evaluation.summary(run, train_max=train_max)
    return "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in row.items())


def _cli(args) -> int:
    if args.finetune:
        for protocol in args.finetune:
            rec = experiments.cached_finetune(args.profile, protocol, seed=args.seed,
                                              verbose=True)
            cfg = experiments.finetune_config(args.profile, protocol, seed=args.seed)
            print(_row(rec.result, cfg.max_len), rec.path, flush=True)
        return 0
    cfgs = (experiments.width_suite if args.widths else experiments.suite)(args.profile,
                                                                            seed=args.seed)
    for cfg in cfgs:
        if args.arch and cfg.model.arch not in args.arch:
            continue
        name = f"copy-{cfg.model.arch}-w{cfg.model.d_model}" if args.widths else ""
        rec = experiments.cached_run(cfg, args.profile, name=name, verbose=True)
        print(_row(rec.result, cfg.max_len), rec.path, flush=True)
    return 0


def add_cli(sub) -> None:
    """Register the ``copy`` sub-command (checkpoints go to ``training.checkpoint_dir()``).

    Explained in: book/copying.md
    """
    p = sub.add_parser("copy", help="train/evaluate the copy-task models of book/copying.md")
    p.add_argument("--profile", default="full", help="smoke | default | full")
    p.add_argument("--arch", nargs="*", choices=models.ARCHS, help="default: all five")
    p.add_argument("--widths", action="store_true", help="the width-vs-cliff runs instead")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--finetune", nargs="*", choices=("paper", "short"),
                   help="fine-tune the pretrained model instead (SmolLM2-135M; hours on a CPU)")
    p.set_defaults(func=_cli)
