"""Tests for howmany.bounds: SymPy form == NumPy form, monotonicity, known values."""

import doctest

import numpy as np
import pytest
import sympy as sp

from howmany import bounds, precision, table1
from howmany.bounds import sym

RNG = np.random.default_rng(0)
R, EPS = RNG.uniform(0.1, 100, 50), RNG.uniform(1e-4, 1, 50)
D, M = RNG.integers(1, 2000, 50).astype(float), RNG.integers(1, 10, 50).astype(float)
N, VOC, Q = RNG.uniform(1, 5000, 50), RNG.integers(2, 300_000, 50).astype(float), RNG.uniform(1, 3, 50)


@pytest.mark.parametrize("module", [bounds, precision, table1])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


def lam(expr, *args):
    return sp.lambdify(args, expr, modules=["scipy", "numpy"])


@pytest.mark.parametrize(
    "name, args, np_args",
    [
        ("log_packing_upper", (sym.r, sym.eps, sym.d), (R, EPS, D)),
        ("log_packing_lower", (sym.r, sym.eps, sym.d), (R, EPS, D)),
        ("log_grid_count", (sym.r, sym.eps, sym.d), (R, EPS, D)),
        ("log_n_accessible_upper", (sym.r, sym.eps, sym.d, sym.m), (R, EPS, D, M)),
        ("C", (sym.d, sym.r, sym.eps, sym.V), (D, R, EPS, VOC)),
        ("n_star", (sym.m, sym.d, sym.r, sym.eps, sym.V), (M, D, R, EPS, VOC)),
        ("log_accessible_fraction_upper", (sym.n, sym.m, sym.d, sym.r, sym.eps, sym.V), (N, M, D, R, EPS, VOC)),
        ("n50_upper", (sym.m, sym.d, sym.r, sym.eps, sym.V), (M, D, R, EPS, VOC)),
        ("log_log_N_infinity", (sym.d, sym.r, sym.eps, sym.q), (D, R, EPS, Q)),
        ("log_n_infinity", (sym.d, sym.r, sym.eps, sym.V, sym.q), (D, R, EPS, VOC, Q)),
    ],
)
def test_sympy_equals_numpy(name, args, np_args):
    np_name = {"C": "slope_bound"}.get(name, name)
    expected = lam(getattr(sym, name), *args)(*np_args)
    np.testing.assert_allclose(getattr(bounds, np_name)(*np_args), expected, rtol=1e-12)


def test_derivations_in_sympy():
    lhs = sp.solve(sp.Eq(sym.n * sp.log(sym.V), sym.d * sym.m * sym.L), sym.n)[0]
    assert sp.simplify(lhs - sym.n_star) == 0
    k = sp.Symbol("k")
    per_token = sp.expand_log(sp.log(sym.A_bound.subs(sym.n, sym.C * sym.m + k)), force=True)
    assert sp.simplify(per_token + k * sp.log(sym.V)) == 0
    assert sp.simplify(sp.diff(sym.C, sym.d) - sym.C / sym.d) == 0
    vol = ((sym.r + sym.eps / 2) / (sym.eps / 2)) ** sym.d
    assert sp.simplify(vol - sym.packing_upper) == 0


@pytest.mark.parametrize("arg", ["r", "eps", "d", "m"])
def test_monotone(arg):
    base = dict(r=5.0, eps=0.01, d=64.0, m=3.0)
    grid = np.linspace(1, 10, 20) * base[arg]
    vals = bounds.log_n_accessible_upper(**{**base, arg: grid})
    diffs = np.diff(vals)
    assert np.all(diffs < 0) if arg == "eps" else np.all(diffs > 0)
    slope = bounds.slope_bound(base["d"], base["r"], base["eps"], np.array([10.0, 100, 1e4]))
    assert np.all(np.diff(slope) < 0)  # larger vocabularies, fewer tokens per vector


def test_packing_bounds_ordered():
    lower, grid = bounds.log_packing_lower(R, EPS, D), bounds.log_grid_count(R, EPS, D)
    assert np.all(lower <= grid + 1e-9) and np.all(grid <= bounds.log_packing_upper(R, EPS, D) + 1e-9)


def test_fraction_bound_is_hinge():
    n = np.arange(0, 2000.0)
    log_a = bounds.log_accessible_fraction_upper(n, 2, 768, 63.62, 2.0**-10, 50304)
    n_star = float(bounds.n_star(2, 768, 63.62, 2.0**-10, 50304))
    assert np.all(log_a[n <= n_star] == 0) and np.all(np.diff(log_a[n > n_star]) == pytest.approx(-np.log(50304)))
    n50 = bounds.n50_upper(2, 768, 63.62, 2.0**-10, 50304)
    assert bounds.log_accessible_fraction_upper(n50, 2, 768, 63.62, 2.0**-10, 50304) == pytest.approx(-np.log(2))


def test_known_slopes_and_n_infinity():
    assert bounds.slope_bound(768, 63.62, 2.0**-10, 50304) == pytest.approx(835.5, abs=0.1)
    assert bounds.slope_bound(768, 1.0, 2.0**-11, 50304) == pytest.approx(590.1, abs=0.05)
    log10_n_inf = bounds.log_n_infinity(768, 1.0, 2.0**-11, 50304) / np.log(10)
    assert 2774 < log10_n_inf < 2775
    m = np.arange(1.0, 200)  # tiny model: d=2, 2r/eps=4, so n_inf = 25 ln(5e) / ln|V| tokens
    both = np.exp(bounds.log_threshold_both(m, 2, 1.0, 0.5, 50304))
    n_inf = 25 * np.log(5 * np.e) / np.log(50304)
    np.testing.assert_allclose(both, np.minimum(m * bounds.slope_bound(2, 1.0, 0.5, 50304), n_inf))
    assert both[0] < n_inf == pytest.approx(both[-1])  # linear, then flat
