"""The copy-task trainings on a Ray cluster: one unit per copier, the same files as in-process.

``units`` lists the runs that ``python -m howmany copy`` makes, as zero-argument calls of
``experiments.cached_run`` (one per copier of ``suite`` or ``width_suite``) or
``finetuning.cached_finetune`` (one per protocol). ``run`` hands them to
``howmany.distributed.run_pending``: results already stored are skipped, the other trainings run
as Ray tasks (one GPU each when the cluster has GPUs, else one CPU), and the driver writes each
result into the file the in-process run would have written. A training seeds itself from its
config and resumes from its checkpoint (``training.train``, keyed by the config), so a task
retried after its worker died continues from the last checkpoint on that node, and on CPU every
result equals the in-process one. ``full_units`` are the trainings of the ``full`` profile.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from .. import distributed
from . import experiments, finetuning
from .training import CopyConfig

PROTOCOLS = ("paper", "short")  # fine-tuning protocols (finetuning.finetune_config)


def units(profile: str, *, seed: int = 0, archs=None, widths: bool = False, short: bool = False,
          depths: bool = False, finetune=()) -> list[tuple[Callable, CopyConfig]]:
    """The runs of one ``copy`` command: ``(call, config)`` per training, in the CLI's order.

    Args:
        profile: ``smoke``, ``default`` or ``full`` (as ``experiments.cached_run``).
        seed: the suite's seed.
        archs: keep only these architectures of the suite (default all five).
        widths: the width-vs-cliff runs (``experiments.width_suite``) instead of the suite.
        short: the shorter-range runs (``experiments.short_suite``) instead of the suite.
        depths: the deeper runs (``experiments.depth_suite``) instead of the suite.
        finetune: fine-tuning protocols instead of the from-scratch copiers.

    Returns:
        ``call(verbose=False)`` returns the run's ``results.Record``; ``config`` is its
        ``CopyConfig`` (its ``max_len`` is the training range).

    Explained in: book/reproducibility.md
    """
    if finetune:
        return [(partial(finetuning.cached_finetune, profile, p, seed=seed),
                 finetuning.finetune_config(profile, p, seed=seed)) for p in finetune]
    kind = experiments.suite_kind(widths=widths, short=short, depths=depths)
    return [(call, cfg) for cfg, call in experiments.suite_runs(profile, kind, seed=seed)
            if not archs or cfg.model.arch in archs]


def full_units(*, seed: int = 0) -> list[tuple[Callable, CopyConfig]]:
    """Every copy-task training of the ``full`` profile (what ``make results`` trains): the five
    copiers, the width-vs-cliff runs, the shorter-range runs, the deeper runs and both fine-tuning
    protocols.

    Explained in: book/reproducibility.md
    """
    return [*units("full", seed=seed), *units("full", seed=seed, widths=True),
            *units("full", seed=seed, short=True), *units("full", seed=seed, depths=True),
            *units("full", seed=seed, finetune=PROTOCOLS)]


def run(jobs: list[tuple[Callable, CopyConfig]], cluster: distributed.ClusterConfig | None = None,
        *, verbose: bool = False, callback=None) -> tuple[list, dict]:
    """Train ``jobs`` (from :func:`units`) on a Ray cluster; see ``distributed.run_pending``.

    Returns:
        ``(records, stats)``: a ``results.Record`` per job (``None`` where it failed) and the
        counts of units computed, skipped (already stored) and failed.

    Explained in: book/reproducibility.md
    """
    return distributed.run_pending([call for call, _ in jobs],
                                   cluster or distributed.ClusterConfig(), verbose=verbose,
                                   callback=callback, desc="copy on ray")
