"""Evaluating copy models: greedy decoding, exact-string and per-character accuracy, the cliff fit.

Exact-string accuracy is what greedy decoding achieves; it is computed in one teacher-forced pass
(equivalent, see ``score``) with 95 % Wilson intervals; a sigmoid fit locates the length where
accuracy halves and how many letters the drop takes. Paper: Sec. 5 (copying experiments, sigmoid
fits of exact-match accuracy).

Explained in: book/copying.md
"""

from __future__ import annotations

import math

import numpy as np
import torch
from tqdm import tqdm

from .models import CopyTransformer, reserve
from .task import BOS, EOS, SEP, random_strings


@torch.no_grad()
def greedy_copy(model, strings: torch.Tensor) -> torch.Tensor:
    """Greedy continuation of ``$ s |`` for each row of ``strings`` [batch, n]: [batch, n+1] ids.

    Decoding uses the model's cache, so each new symbol costs one position.

    Explained in: book/copying.md
    """
    b, n = strings.shape
    col = lambda v: torch.full((b, 1), v, device=strings.device)  # noqa: E731
    prompt = torch.cat([col(BOS), strings, col(SEP)], dim=1)
    logits, cache = model(prompt)
    if isinstance(model, CopyTransformer):  # room for n+1 more positions
        cache = reserve(cache, n + 1)
    out = [logits[:, -1].argmax(-1)]
    for _ in range(n):
        logits, cache = model(out[-1][:, None], cache)
        out.append(logits[:, -1].argmax(-1))
    return torch.stack(out, dim=1)


def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval for ``k`` successes out of ``n``.

    >>> [round(x, 3) for x in wilson(100, 100)]
    [0.963, 1.0]

    Explained in: book/copying.md
    """
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@torch.no_grad()
def score(model, strings: torch.Tensor, *, greedy: bool = False):
    """Which strings are copied exactly, and the fraction of right letters, for [batch, n] ids.

    With ``greedy=False`` one teacher-forced pass suffices: greedy decoding reproduces ``s``
    exactly iff the argmax is right at every copied position given the right prefix (induction
    on the position), so ``exact`` equals greedy decoding's; ``char`` is then the teacher-forced
    per-letter accuracy. With ``greedy=True`` both come from ``greedy_copy``.

    Returns:
        ``(exact, char)``: bool [batch] and float [batch].

    Explained in: book/copying.md
    """
    b, n = strings.shape
    strings = strings.to(next(model.parameters()).device)
    if greedy:
        out = greedy_copy(model, strings)
        ok = out[:, :n] == strings
        return ok.all(1) & (out[:, n] == EOS), ok.float().mean(1)
    col = lambda v: torch.full((b, 1), v, device=strings.device)  # noqa: E731
    seq = torch.cat([col(BOS), strings, col(SEP), strings, col(EOS)], dim=1)
    logits, _ = model(seq[:, :-1])
    ok = logits[:, n + 1 :].argmax(-1) == seq[:, n + 2 :]  # n letters + EOS
    return ok.all(1), ok[:, :n].float().mean(1)


def fine_grid(train_max: int, *, start: int = 40, top: int = 300, coarse: int = 10,
              train_min: int = 5) -> tuple:
    """Evaluation lengths: every training length, every length from ``start`` to ``2*train_max``,
    then steps of ``coarse`` up to ``top``.

    >>> g = fine_grid(50); (g[:3], 40 in g, 99 in g, 100 in g, 105 in g, g[-1])
    ((5, 6, 7), True, True, True, False, 300)

    Explained in: book/copying.md
    """
    fine = set(range(train_min, train_max + 1)) | set(range(start, 2 * train_max + 1))
    far = range(2 * train_max + coarse, top + 1, coarse)
    return tuple(sorted(fine | set(far)))


@torch.no_grad()
def evaluate(model, lengths, n_strings: int, *, seed: int = 0, batch_size: int = 50,
             greedy: bool = False, stop_zero: int = 0, verbose: bool = False) -> list[dict]:
    """Exact-string and per-character copy accuracy at each length (see ``score``).

    A string counts as copied when all ``n`` letters and the end symbol are right. With
    ``stop_zero = k > 0`` the lengths are taken in increasing order and evaluation ends after
    ``k`` consecutive lengths at which no string is copied: the longer ones, the costliest for a
    large model, are left out of the rows rather than computed.

    Returns:
        One dict per length: ``n``, ``k`` copied strings out of ``strings``, ``exact`` with
        ``exact_lo``/``exact_hi`` (Wilson 95 %), ``char`` with ``char_lo``/``char_hi`` (normal
        95 % interval over strings).

    Explained in: book/copying.md
    """
    model.eval()
    rows, zeros = [], 0
    lengths = sorted(lengths) if stop_zero else list(lengths)
    for n in tqdm(lengths, disable=not verbose, desc="evaluate"):
        if stop_zero and zeros >= stop_zero:
            break
        gen = torch.Generator().manual_seed(10_000 * seed + n)  # same test strings for every model
        exact, chars = [], []
        for start in range(0, n_strings, batch_size):
            e, c = score(model, random_strings(min(batch_size, n_strings - start), n, gen),
                         greedy=greedy)
            exact.append(e.cpu())
            chars.append(c.cpu())
        exact, chars = torch.cat(exact), torch.cat(chars)
        k, half = int(exact.sum()), 1.96 * float(chars.std()) / math.sqrt(len(chars))
        lo, hi = wilson(k, len(exact))
        rows.append({"n": int(n), "k": k, "strings": len(exact), "exact": k / len(exact),
                     "exact_lo": lo, "exact_hi": hi, "char": float(chars.mean()),
                     "char_lo": max(0.0, float(chars.mean()) - half),
                     "char_hi": min(1.0, float(chars.mean()) + half)})
        zeros = zeros + 1 if k == 0 else 0
    return rows


def _sigmoid(n, n50, w):
    return 1 / (1 + np.exp(np.clip((n - n50) / w, -50, 50)))


def _fit(ns: np.ndarray, acc: np.ndarray):
    """Least-squares sigmoid; ``None`` when accuracy never crosses 50 %."""
    from scipy.optimize import curve_fit

    if acc.max() < 0.5 or acc.min() > 0.5:
        return None
    n0, best = float(ns[np.argmax(acc < 0.5)]), None
    for w0 in (5.0, 1.0, 0.2):  # a drop sharper than the grid needs a sharp start
        try:
            p, _ = curve_fit(_sigmoid, ns, acc, p0=(n0, w0), bounds=([0, 0.05], [1e4, 1e3]))
        except RuntimeError:
            continue
        sse = float(((acc - _sigmoid(ns, *p)) ** 2).sum())
        if best is None or sse < best[0]:
            best = (sse, float(p[0]), float(p[1]))
    return None if best is None else best[1:]


def grid_step_at(ns, x: float) -> float:
    """Spacing of the evaluation grid ``ns`` around length ``x`` (the resolution there).

    Explained in: book/copying.md
    """
    ns = np.unique(np.asarray(ns, float))
    j = int(np.clip(np.searchsorted(ns, x), 1, len(ns) - 1))
    return float(ns[j] - ns[j - 1])


def fit_cliff(ns, acc, *, strings=None, n_boot: int = 200, seed: int = 0) -> dict:
    """Fit ``acc ≈ 1 / (1 + exp((n - n50) / width))``: where the cliff is and how sharp.

    With ``strings`` (strings evaluated per length), a bootstrap over strings gives 95 %
    intervals: each replicate redraws the strings of every length with replacement (a binomial
    draw of the copied count) and refits. The drop is called a ``step`` only when the whole width
    interval lies below one letter and the grid tries every length around ``n50``: a drop that
    narrow could not be told apart from a jump between two consecutive lengths. A coarser grid
    never shows a step (a fit with no point inside the drop says nothing of its width).

    Returns:
        ``n50`` (length at 50 % accuracy), ``width`` (lengths from 73 % to 27 % span 2·width),
        ``r2``; with ``strings`` also ``n50_lo``/``n50_hi``, ``width_lo``/``width_hi``,
        ``resolution`` and ``step`` (bool). ``n50`` is NaN when accuracy never crosses 50 %.

    Explained in: book/copying.md
    """
    ns, acc = np.asarray(ns, float), np.asarray(acc, float)
    nan = float("nan")
    fit = _fit(ns, acc)
    if fit is None:
        return {"n50": nan, "width": nan, "r2": nan}
    n50, w = fit
    resid = acc - _sigmoid(ns, n50, w)
    out = {"n50": n50, "width": w,
           "r2": float(1 - (resid**2).sum() / max(((acc - acc.mean()) ** 2).sum(), 1e-12))}
    if strings is None:
        return out
    rng = np.random.default_rng(seed)
    m = np.broadcast_to(np.asarray(strings, int), ns.shape)
    boots = []
    for _ in range(n_boot):
        again = _fit(ns, rng.binomial(m, acc) / m)
        if again is not None:
            boots.append(again)
    b = np.array(boots).reshape(-1, 2)
    (n_lo, w_lo), (n_hi, w_hi) = np.percentile(b, [2.5, 97.5], axis=0) if len(b) else [[nan] * 2] * 2
    res = grid_step_at(ns, n50)
    return {**out, "n50_lo": float(n_lo), "n50_hi": float(n_hi), "width_lo": float(w_lo),
            "width_hi": float(w_hi), "resolution": res, "step": bool(res <= 1 and w_hi < 1),
            "n_boot": len(b)}


def summary(run: dict, *, train_max: int) -> dict:
    """Where one model breaks: a table row from a ``copying.run`` result.

    Returns:
        ``model``; ``last n ≥ 99 %`` (longest n with exact accuracy ≥ 0.99 at every evaluated
        length up to n, 0 if none); ``first n < 10 %`` (NaN if never); ``n50``, ``width w`` and
        ``R²`` of ``fit_cliff`` with their intervals where the fit has them; ``n50 / train max``.

    Explained in: book/copying.md
    """
    rows = sorted(run["rows"], key=lambda r: r["n"])
    last = 0
    for r in rows:
        if r["exact"] < 0.99:
            break
        last = r["n"]
    first = next((r["n"] for r in rows if r["exact"] < 0.10), float("nan"))
    fit, nan = run["fit"], float("nan")
    return {"model": run.get("label", run["arch"]), "last n ≥ 99 %": last,
            "first n < 10 %": first, "n50": fit["n50"], "n50 lo": fit.get("n50_lo", nan),
            "n50 hi": fit.get("n50_hi", nan), "width w": fit["width"],
            "w lo": fit.get("width_lo", nan), "w hi": fit.get("width_hi", nan),
            "step": fit.get("step"), "R²": fit["r2"], "n50 / train max": fit["n50"] / train_max}
