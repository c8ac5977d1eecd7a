"""Where a copier goes wrong: the first wrong symbol of each failed copy, sorted by kind.

A copier that fails at a training length can fail in several ways: it can *skip* a letter
(write the letter that comes one position later, having lost its place), *repeat* one (write
the previous letter again), write a letter from *elsewhere* in the string, write a letter that
is *absent* from it, or misplace the *end* symbol. Which of these dominates says what runs out:
a copier that skips still holds the letters but not its position among them. The first wrong
symbol is the one greedy decoding would produce (same induction as ``evaluation.score``), so one
teacher-forced pass per batch finds it. Paper: Sec. 5 (copying experiments).

Explained in: book/copying.md
"""

from __future__ import annotations

import time

import torch

from .. import results
from ..devices import resolve_device
from .range_check import load_trained, trained_config
from .task import BOS, EOS, LETTERS, SEP
from .training import CopyConfig

KINDS = ("skip", "repeat", "elsewhere", "absent", "end")  # in the order they are tested
MISTAKE_LENGTHS = (5, 10, 20, 30, 40, 50)  # string lengths examined (full profile)
MISTAKE_STRINGS = 1000  # strings per length (full profile)
MISTAKE_SEED = 3000  # offset of the strings' seed from the run's seed (apart from other checks)


def kind(string: list[int], k: int, predicted: int) -> str:
    """The kind of a first mistake: ``predicted`` written at copy position ``k`` of ``string``.

    >>> [kind([0, 1, 2], 1, p) for p in (2, 0, 7, EOS)]
    ['skip', 'repeat', 'absent', 'end']
    >>> kind([0, 1, 2, 3], 3, 0), kind([0, 1, 2], 3, 1)
    ('elsewhere', 'end')

    Explained in: book/copying.md
    """
    n = len(string)
    if k >= n or predicted == EOS:
        return "end"  # the end symbol missing, early, or misplaced
    if k + 1 < n and string[k + 1] == predicted:
        return "skip"
    if k >= 1 and string[k - 1] == predicted:
        return "repeat"
    return "elsewhere" if predicted in string else "absent"


@torch.no_grad()
def first_mistakes(model, strings: torch.Tensor) -> list[str | None]:
    """For each row of ``strings`` [batch, n]: ``None`` if copied exactly, else its mistake kind.

    Explained in: book/copying.md
    """
    b, n = strings.shape
    strings = strings.to(next(model.parameters()).device)
    col = lambda v: torch.full((b, 1), v, device=strings.device)  # noqa: E731
    seq = torch.cat([col(BOS), strings, col(SEP), strings, col(EOS)], dim=1)
    logits, _ = model(seq[:, :-1])
    pred = logits[:, n + 1:].argmax(-1)  # n letters + EOS
    wrong = pred != seq[:, n + 2:]
    first = wrong.float().argmax(1)
    rows = strings.tolist()
    return [kind(rows[i], int(first[i]), int(pred[i, first[i]])) if wrong[i].any() else None
            for i in range(b)]


def tally(model, lengths, n_strings: int, *, seed: int = 0, batch_size: int = 250) -> list[dict]:
    """Per length: ``n``, ``strings``, ``wrong`` (failed copies) and the count of each kind.

    Explained in: book/copying.md
    """
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n in lengths:
        counts = dict.fromkeys(KINDS, 0)
        for start in range(0, n_strings, batch_size):
            s = torch.randint(0, LETTERS, (min(batch_size, n_strings - start), int(n)),
                              generator=gen)
            for k in first_mistakes(model, s):
                if k is not None:
                    counts[k] += 1
        out.append({"n": int(n), "strings": int(n_strings), "wrong": sum(counts.values()),
                    **counts})
    return out


def check(cfg: CopyConfig, strings: int = MISTAKE_STRINGS, lengths=MISTAKE_LENGTHS) -> dict:
    """``tally`` of the copier trained under ``cfg``, loaded from its checkpoint (never trains).

    Raises:
        FileNotFoundError: the checkpoint is not on this machine.

    Explained in: book/copying.md
    """
    model = load_trained(cfg)
    t0 = time.perf_counter()
    rows = tally(model, lengths, strings, seed=MISTAKE_SEED + cfg.seed)
    return {"rows": rows, "eval_s": time.perf_counter() - t0}


def cached(run: dict, profile: str):
    """:func:`check` of a stored or fresh run (a ``load_suite`` entry) through the results store:
    heavy (``data/copying/mistakes-<arch>-<hash>.json``) except in ``smoke``, where it is
    computed with 100 strings per length.

    Explained in: book/copying.md
    """
    cfg = trained_config(run)
    n = 100 if profile == "smoke" else MISTAKE_STRINGS
    lengths = sorted({min(max(L, cfg.min_len), cfg.max_len) for L in MISTAKE_LENGTHS})
    key = {"checkpoint": cfg.key(), "strings": n, "seed": MISTAKE_SEED + cfg.seed,
           "lengths": lengths}
    return results.cached(f"mistakes-{cfg.model.arch}", lambda: check(cfg, n, lengths), key,
                          chapter="copying", profile=profile, heavy=profile != "smoke",
                          seed=cfg.seed, device=resolve_device(cfg.device), dtype="float32")


def stored(runs: list, profile: str) -> dict:
    """``{label: rows}`` for the runs whose tally is stored (or computable here); others left out.

    Explained in: book/copying.md
    """
    out = {}
    for run in runs:
        try:
            out[run["label"]] = cached(run, profile).result["rows"]
        except (results.MissingResultError, FileNotFoundError):
            continue
    return out
