"""Has a copier learned its training range? Every training length, a thousand fresh strings.

The final evaluation of a run copies 100 strings per length, whose 95 % Wilson interval at
98 copied is 93–99.4 %: it cannot tell a copier at 98 % from one at 99.5 %. This check reloads
a trained copier from its checkpoint (it never trains one) and copies ``strings`` fresh strings
(seed ``2000 + seed``, apart from the training stream, the curve's and the evaluation's strings)
at every length of its training range, so that "≥ 99 % at every training length" is measured
with an interval narrower than the gap it decides. Paper: Sec. 5 (copying experiments).

Explained in: book/copying.md
"""

from __future__ import annotations

import time
from dataclasses import replace

from .. import results
from ..devices import resolve_device
from . import evaluation
from .training import CopyConfig, checkpoint_dir, train

RANGE_STRINGS = 1000  # strings per training length (full profile)
RANGE_SEED = 2000  # offset of the check's string seed from the run's seed


def trained_config(run: dict) -> CopyConfig:
    """The config that names a stored run's checkpoint: its ``cfg`` with the swept ``lr``.

    Explained in: book/copying.md
    """
    return replace(run["cfg"], lr=run["lr"])


def load_trained(cfg: CopyConfig):
    """The copier trained under ``cfg``, reloaded from its checkpoint; this never trains one.

    Raises:
        FileNotFoundError: the checkpoint is not on this machine.

    Explained in: book/copying.md
    """
    path = checkpoint_dir() / f"{cfg.key()}.pt"
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint {path} for {cfg.key()}: train the run first "
                                "(python -m howmany copy)")
    model, _ = train(cfg)  # loads the finished checkpoint
    return model


def check(cfg: CopyConfig, strings: int = RANGE_STRINGS, *, verbose: bool = False) -> dict:
    """Copy ``strings`` fresh strings at every length ``cfg.min_len..cfg.max_len`` with the copier
    trained under ``cfg``, loaded from its checkpoint.

    Raises:
        FileNotFoundError: the checkpoint is not on this machine (this check never trains).

    Returns:
        ``{"rows": evaluate rows, "worst": the row copied least well, "eval_s": seconds}``.

    Explained in: book/copying.md
    """
    model = load_trained(cfg)
    t0 = time.perf_counter()
    rows = evaluation.evaluate(model, range(cfg.min_len, cfg.max_len + 1), strings,
                               seed=RANGE_SEED + cfg.seed, verbose=verbose)
    return {"rows": rows, "worst": min(rows, key=lambda r: r["exact"]),
            "eval_s": time.perf_counter() - t0}


def cached_check(run: dict, profile: str, *, strings: int | None = None, verbose: bool = False):
    """:func:`check` of a stored or fresh run (a ``load_suite`` entry) through the results store:
    heavy (``data/copying/range-<arch>-<hash>.json``) except in ``smoke``, where it is computed
    with 50 strings per length.

    Explained in: book/copying.md
    """
    cfg = trained_config(run)
    n = strings or (50 if profile == "smoke" else RANGE_STRINGS)
    key = {"checkpoint": cfg.key(), "strings": n, "seed": RANGE_SEED + cfg.seed,
           "lengths": [cfg.min_len, cfg.max_len]}
    return results.cached(f"range-{cfg.model.arch}", lambda: check(cfg, n, verbose=verbose),
                          key, chapter="copying", profile=profile, heavy=profile != "smoke",
                          seed=cfg.seed, device=resolve_device(cfg.device), dtype="float32")


def at_least(rows: list, target: float = 0.99) -> bool:
    """Whether every row's exact accuracy is at least ``target``.

    Explained in: book/copying.md
    """
    return bool(rows) and min(r["exact"] for r in rows) >= target


def merged(rows: list, check_rows: list) -> list:
    """Evaluation rows with every length the larger check measured taken from the check.

    Where a length was measured twice, the check (more strings) wins; rows come back sorted by
    length, so ``summary`` reads the training range from the check and the rest from ``rows``.

    Explained in: book/copying.md
    """
    by_n = {r["n"]: r for r in rows}
    by_n.update({r["n"]: r for r in check_rows})
    return [by_n[n] for n in sorted(by_n)]


def stored_checks(runs: list, profile: str) -> dict:
    """``{label: check result}`` for the runs (``load_suite`` entries) whose check is stored
    (or computed: ``smoke``, and ``full`` where the checkpoint is on this machine); runs without
    one are left out.

    Explained in: book/copying.md
    """
    out = {}
    for run in runs:
        try:
            out[run["label"]] = cached_check(run, profile).result
        except (results.MissingResultError, FileNotFoundError):
            continue
    return out
