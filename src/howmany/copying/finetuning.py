"""Fine-tuning a pretrained LM on the copy task, in two protocols, through the results store.

``paper`` is the authors' protocol (full fine-tuning of SmolLM2-135M, lr 1e-5, until every
held-out string is copied or 10,000 steps), evaluated up to 1,000 letters until two lengths in
a row copy nothing; ``short`` is the book's earlier 150-step budget. The training and the
evaluation are the from-scratch copiers' (``experiments.run``). Paper: Sec. 5.

Explained in: book/copying.md
"""

from __future__ import annotations

from .. import profiles, results
from ..devices import resolve_device
from . import models
from .experiments import config, run
from .task import SYMBOLS
from .training import CopyConfig


def finetune_config(profile: str, protocol: str = "paper", *, seed: int = 0) -> CopyConfig:
    """Fine-tuning SmolLM2-135M (a tiny random Llama in ``smoke``).

    ``paper``: the authors' protocol (full fine-tuning, batch 8, lr 1e-5, lengths 5–50, until
    every held-out string of the check lengths is copied or 10,000 steps), evaluated up to 1,000
    letters. ``short``: 150 steps of 16 strings at lr 1e-4, the book's earlier budget.

    Explained in: book/copying.md
    """
    if profiles.check(profile) == "smoke":
        return config("smoke", pretrained="tiny-llama-d32-v64-l1", steps=20, curve_every=10,
                      eval_lengths=(2, 8), seed=seed, stop_exact=0.0)
    if protocol == "short":
        return CopyConfig(model=models.ModelConfig(d_model=64), pretrained="smollm2-135m",
                          steps=150, lr=1e-4, warmup=10, batch_size=16, threads=2, seed=seed,
                          eval_lengths=(5, 10, 20, 30, 40, 50, 60, 75, 100, 150, 200, 300))
    return CopyConfig(pretrained="smollm2-135m", steps=10_000, lr=1e-5, warmup=0, batch_size=8,
                      curve_every=500, curve_lengths=(5, 25, 50), curve_strings=24,
                      stop_exact=1.0, threads=2, seed=seed,
                      eval_lengths=(*range(5, 101, 5), *range(125, 301, 25),
                                    *range(400, 1001, 100)))


PAPER_STOP_ZERO = 2  # the paper protocol's evaluation ends after two lengths with no copy
PAPER_EVAL_BATCH = 10  # strings per forward pass at up to 2,000 positions of a 135M model
_SHORT_FIELDS = ("batch_size", "device", "eval_lengths", "eval_strings", "lr", "max_len",
                 "min_len", "model", "pretrained", "seed", "steps", "threads", "warmup")


def cached_finetune(profile: str, protocol: str = "paper", *, seed: int = 0,
                    verbose: bool = False):
    """A fine-tuning run through the results store (heavy: committed in ``data/copying``).

    Returns:
        A ``results.Record``; ``record.result`` is :func:`run`'s dict. Outside ``full`` (and
        ``smoke``, which computes a tiny one) a missing file raises ``MissingResultError``.

    Explained in: book/copying.md
    """
    from .. import models as lms

    cfg = finetune_config(profile, protocol, seed=seed)
    key = cfg.fields()
    evaluation_kw = {}
    if protocol == "short" and profile != "smoke":  # stored before curves and stopping existed
        key = {k: v for k, v in key.items() if k in _SHORT_FIELDS}
    elif protocol == "paper":  # lengths up to 1,000 cost minutes each: stop once nothing copies
        evaluation_kw = dict(stop_zero=PAPER_STOP_ZERO, eval_batch=PAPER_EVAL_BATCH)
        key = {**key, **{f"eval_{k}": v for k, v in evaluation_kw.items()}}
    name = "copy-finetune" if protocol == "short" else "copy-finetune-paper"

    def go():
        lm = lms.load(cfg.pretrained, device=resolve_device(cfg.device))
        return run(cfg, model=models.PretrainedCopier(lm, SYMBOLS), verbose=verbose,
                   **evaluation_kw)

    return results.cached(name, go, key, chapter="copying", profile=profile, heavy=True,
                          seed=seed, device=resolve_device(cfg.device), dtype="float32")
