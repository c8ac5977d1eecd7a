"""A(n), n50 (median, logistic), bootstrap CIs and the OLS slope on synthetic thresholds."""

import numpy as np
import pytest

from howmany.cramming import accessibility as acc


def test_accessible_fraction_counts_thresholds():
    a = acc.accessible_fraction([1, 2, 2, 5], [0, 1, 2, 3, 5, 6])
    assert a.tolist() == [1.0, 1.0, 0.75, 0.25, 0.25, 0.0]


def test_n50_median_and_logistic_recover_a_known_midpoint():
    rng = np.random.default_rng(0)
    thr = np.round(rng.logistic(loc=40.0, scale=3.0, size=4000))  # A(n) is a logistic in n
    assert acc.n50_median(thr) == pytest.approx(40, abs=1)
    n50, width = acc.n50_logistic(thr)
    assert n50 == pytest.approx(40.5, abs=1) and width == pytest.approx(3.0, rel=0.2)


def test_bootstrap_ci_contains_estimate_and_shrinks_with_more_strings():
    rng = np.random.default_rng(1)
    small = acc.n50_with_ci(1, rng.normal(30, 5, 16).round(), n_boot=200)
    large = acc.n50_with_ci(1, rng.normal(30, 5, 400).round(), n_boot=200)
    assert small.median_lo <= small.median <= small.median_hi
    assert large.median_hi - large.median_lo < small.median_hi - small.median_lo


def test_ols_exact_line_and_paper_example():
    assert acc.ols([1, 2, 3], [3, 5, 7]) == pytest.approx((2.0, 1.0, 1.0))
    # THEORY.md §7: digitised Qwen2.5-1.5B PG-19 n50 values give slope 79.56, intercept -32.7
    slope, intercept, r2 = acc.ols([1, 2, 3, 4, 5], [50.0, 121.6, 204.3, 291.0, 363.1])
    assert slope == pytest.approx(79.56, abs=0.01) and intercept == pytest.approx(-32.7, abs=0.1)
    assert r2 > 0.99


def test_slope_fit_recovers_slope_with_ci():
    rng = np.random.default_rng(2)
    by_m = {m: 10 * m + 5 + rng.normal(0, 1, 64).round() for m in (1, 2, 3, 4)}
    fit = acc.slope_fit(by_m, n_boot=200)
    assert fit.slope == pytest.approx(10, abs=0.5) and fit.r2 > 0.99
    assert fit.slope_lo <= fit.slope <= fit.slope_hi
    with pytest.raises(ValueError, match="at least two"):
        acc.slope_fit({1: by_m[1]})
