"""The copy task (paper Sec. 5): a subpackage, imported one way, bottom to top.

``task`` (alphabet, examples, curriculum) ← ``models`` (the five copiers and a pretrained
wrapper) ← ``evaluation`` (greedy copying, Wilson intervals, the fine grid, the sigmoid fit with
bootstrap intervals) ← ``training`` (curriculum training, curves, checkpoints, the lr sweep) ←
``range_check`` (every training length at a thousand strings, from the checkpoint) ←
``mistakes`` (the kind of each failed copy's first wrong symbol, from the checkpoint) and
``experiments`` (the chapter's runs per profile and the results store) ← ``finetuning`` (a
pretrained LM on the copy task, two protocols) ← ``cluster`` (the
trainings as units of a Ray cluster) ← ``commands`` (CLI).
The names below are re-exported so ``from howmany import copying`` reaches them all.

Explained in: book/copying.md
"""

from . import evaluation, experiments, finetuning, mistakes, models, range_check, task, training
from .commands import add_cli
from .evaluation import evaluate, fine_grid, fit_cliff, greedy_copy, score, summary, wilson
from .experiments import (ARCH_LABELS, WIDTHS, cached_run, config, fit, load_suite,
                          reached_range, run, short_suite, suite, width_suite)
from .finetuning import cached_finetune, finetune_config
from .task import (BOS, EOS, LETTERS, PAD, SEP, SYMBOLS, curriculum_max, make_batch,
                   random_strings, sample_lengths)
from .training import CopyConfig, checkpoint_dir, lr_sweep, train

__all__ = ["ARCH_LABELS", "BOS", "EOS", "LETTERS", "PAD", "SEP", "SYMBOLS", "WIDTHS", "CopyConfig",
           "add_cli", "cached_finetune", "cached_run", "checkpoint_dir", "config",
           "curriculum_max", "evaluate", "evaluation", "experiments", "fine_grid", "fit",
           "fit_cliff", "finetune_config", "finetuning", "greedy_copy", "load_suite", "lr_sweep",
           "make_batch", "mistakes", "models",
           "random_strings", "range_check", "reached_range", "run", "sample_lengths", "score",
           "short_suite", "suite", "summary", "task",
           "train", "training", "width_suite", "wilson"]
