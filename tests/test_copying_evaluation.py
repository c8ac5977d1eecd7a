"""Tests for howmany.copying.evaluation: Wilson intervals, the fine grid, the cliff fit and its
bootstrap intervals, and when a drop may be called a step."""

import math

import numpy as np
import torch

from howmany.copying import evaluation as copyeval
from howmany.copying import models as copymodels


def test_wilson_interval():
    lo, hi = copyeval.wilson(50, 100)
    assert lo < 0.5 < hi and math.isclose(lo + hi, 1.0)
    assert copyeval.wilson(0, 100)[0] == 0.0 and math.isclose(copyeval.wilson(100, 100)[1], 1.0)


def test_fit_cliff_recovers_a_sigmoid():
    ns = torch.arange(5, 200, 5).double()
    acc = 1 / (1 + torch.exp((ns - 80) / 6))
    fit = copyeval.fit_cliff(ns.tolist(), acc.tolist())
    assert abs(fit["n50"] - 80) < 0.5 and abs(fit["width"] - 6) < 0.3 and fit["r2"] > 0.999


def test_fine_grid_steps_one_letter_to_twice_the_training_max():
    grid = copyeval.fine_grid(50)
    assert set(range(5, 101)) <= set(grid)  # every training length and every length 40..100
    assert grid[-1] == 300 and 105 not in grid and 110 in grid
    assert copyeval.grid_step_at(grid, 72.4) == 1 and copyeval.grid_step_at(grid, 143) == 10


def _binomial_curve(width, n50=70.0, strings=100, seed=0):
    ns = np.arange(40, 101)
    p = 1 / (1 + np.exp((ns - n50) / width))
    return ns, np.random.default_rng(seed).binomial(strings, p) / strings


def test_bootstrap_interval_covers_the_true_cliff_and_calls_a_slope_a_slope():
    ns, acc = _binomial_curve(width=4.0)
    fit = copyeval.fit_cliff(ns, acc, strings=100, n_boot=200)
    assert fit["n50_lo"] < 70 < fit["n50_hi"] and fit["width_lo"] < 4 < fit["width_hi"]
    assert fit["n50_hi"] - fit["n50_lo"] < 3 and fit["resolution"] == 1
    assert fit["step"] is False  # a 4-letter drop is resolved by a 1-letter grid


def test_a_drop_narrower_than_the_grid_is_called_a_step():
    ns, acc = _binomial_curve(width=0.2)
    fit = copyeval.fit_cliff(ns, acc, strings=100, n_boot=100)
    assert fit["width_hi"] < 1 and fit["step"] is True
    flat = copyeval.fit_cliff(ns, np.ones(len(ns)), strings=100)
    assert math.isnan(flat["n50"]) and "step" not in flat  # never crosses 50 %: no cliff


def test_a_coarse_grid_never_shows_a_step():
    # a 70-letter-wide fall sampled every 100 letters: its width interval lies below the grid's
    # spacing, but a drop that wide is no step, and a sharp one could not be seen on that grid
    ns = np.array([100, 200, 300, 400, 500, 600, 700])
    p = 1 / (1 + np.exp((ns - 330) / 70))
    acc = np.random.default_rng(0).binomial(100, p) / 100
    fit = copyeval.fit_cliff(ns, acc, strings=100, n_boot=100)
    assert fit["resolution"] == 100 and fit["width_hi"] < 100 and fit["step"] is False
    sharp = copyeval.fit_cliff(ns, (ns < 350).astype(float), strings=100, n_boot=50)
    assert sharp["width_hi"] < 1 and sharp["step"] is False


def test_evaluate_counts_strings_and_agrees_with_greedy_decoding():
    torch.manual_seed(0)
    model = copymodels.build(copymodels.ModelConfig.smoke("alibi")).eval()
    rows = copyeval.evaluate(model, [3, 4], 30, batch_size=7)
    assert [r["strings"] for r in rows] == [30, 30] and all(0 <= r["k"] <= 30 for r in rows)
    assert all(math.isclose(r["exact"], r["k"] / 30) for r in rows)
    greedy = copyeval.evaluate(model, [3, 4], 30, greedy=True)
    assert [r["k"] for r in rows] == [r["k"] for r in greedy]


class _CopiesUpTo(torch.nn.Module):
    """A stand-in copier whose every prediction is right for strings of at most ``limit``
    letters and always wrong beyond (it reads the length off the separator's position)."""

    def __init__(self, limit):
        super().__init__()
        self.limit, self.w = limit, torch.nn.Parameter(torch.zeros(1))
        self.seen = []

    def forward(self, idx, cache=None):
        from howmany.copying.task import EOS, SEP

        n = int((idx[0] == SEP).nonzero()[0]) - 1
        self.seen.append(n)
        nxt = torch.cat([idx[:, 1:], torch.full((len(idx), 1), EOS)], dim=1)  # teacher's next ids
        if n > self.limit:
            nxt = (nxt + 1) % 26
        return torch.nn.functional.one_hot(nxt, 30).float(), None


def test_stop_zero_ends_the_evaluation_after_lengths_that_copy_nothing():
    model = _CopiesUpTo(limit=6)
    rows = copyeval.evaluate(model, [8, 4, 7, 5, 9, 6, 10, 12], 6, batch_size=4, stop_zero=2)
    assert [r["n"] for r in rows] == [4, 5, 6, 7, 8]  # sorted; 7 and 8 copy nothing: stop
    assert [r["exact"] for r in rows] == [1, 1, 1, 0, 0] and max(model.seen) == 8
    every = copyeval.evaluate(_CopiesUpTo(limit=6), [4, 7, 5], 6)  # default: every length, as given
    assert [r["n"] for r in every] == [4, 7, 5]
