"""The copy task itself: the alphabet, copy examples, and which lengths a training step sees.

A training example is ``$ s | s .`` with ``s`` a uniformly random string over 26 letters; the
loss counts only the copied part (``s`` after the separator, and the end symbol). Training
lengths follow a curriculum: the longest allowed length grows from a few letters to the training
maximum, so a model first learns to copy short strings. Paper: Sec. 5 (copying experiments).

Explained in: book/copying.md
"""

from __future__ import annotations

import torch

LETTERS = 26  # ids 0..25 are the letters a..z
BOS, SEP, EOS, PAD = 26, 27, 28, 29  # "$", "|", ".", padding
SYMBOLS = "abcdefghijklmnopqrstuvwxyz$|._"


def random_strings(n_strings: int, length: int, gen: torch.Generator) -> torch.Tensor:
    """Uniform random letter ids [n_strings, length].

    Explained in: book/copying.md
    """
    return torch.randint(0, LETTERS, (n_strings, length), generator=gen)


def make_batch(lengths: list[int], gen: torch.Generator):
    """Padded copy examples for the given string lengths.

    Returns:
        ``(inputs, targets, mask)``, each [batch, 2*max(lengths)+2]: ``inputs`` are the ids of
        ``$ s | s .`` without the last symbol, ``targets`` the next ids, and ``mask`` is True
        exactly where the target is a copied letter or the end symbol.

    Explained in: book/copying.md
    """
    width = 2 * max(lengths) + 3
    seqs = torch.full((len(lengths), width), PAD)
    mask = torch.zeros(len(lengths), width, dtype=torch.bool)
    for i, n in enumerate(lengths):
        s = random_strings(1, n, gen)[0]
        seqs[i, : 2 * n + 3] = torch.cat([torch.tensor([BOS]), s, torch.tensor([SEP]), s,
                                          torch.tensor([EOS])])
        mask[i, n + 2 : 2 * n + 3] = True  # copied letters and EOS, as positions in seqs
    return seqs[:, :-1], seqs[:, 1:], mask[:, 1:]


def sample_lengths(n: int, lo: int, hi: int, gen: torch.Generator, *,
                   power: float = 0.0) -> list[int]:
    """``n`` lengths on {lo, ..., hi}, drawn with probability proportional to ``length**power``.

    ``power = 0`` is uniform; with ``power = 1`` a string of 50 letters is drawn ten times as
    often as one of 5, so the last positions of the range, which only the longest strings reach,
    are trained more often than under the uniform draw.

    Explained in: book/copying.md
    """
    if power == 0:
        return torch.randint(lo, hi + 1, (n,), generator=gen).tolist()
    weights = torch.arange(lo, hi + 1, dtype=torch.float64) ** power
    return (lo + torch.multinomial(weights, n, replacement=True, generator=gen)).tolist()


def curriculum_max(step: int, *, min_len: int, max_len: int, ramp: int, start: int = 0) -> int:
    """Longest training length allowed at ``step``: a linear ramp, short strings first.

    The ramp starts at ``start`` letters (at least ``min_len``; 0 means a ninth of the way from
    ``min_len`` to ``max_len``, at least one letter above ``min_len``) and
    reaches ``max_len`` after ``ramp`` steps; ``ramp = 0`` switches the curriculum off.

    >>> [curriculum_max(s, min_len=5, max_len=50, ramp=100) for s in (0, 50, 100, 500)]
    [10, 30, 50, 50]

    Explained in: book/copying.md
    """
    first = max(min_len, start or min_len + max(1, (max_len - min_len) // 9))
    if ramp <= 0 or step >= ramp:
        return max_len
    return min(max_len, first + (max_len - first) * step // ramp)
