"""Tests for howmany.bounds: SymPy form == NumPy form, monotonicity, known values."""

import doctest

import numpy as np
import pytest
import sympy as sp
from scipy import special

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
        ("slope_cells", (sym.log_P, sym.mu), (R, EPS)),
        ("log_unit_ball_volume", (sym.d,), (D,)),
    ],
)
def test_sympy_equals_numpy(name, args, np_args):
    np_name = {"C": "slope_bound"}.get(name, name)
    expected = lam(getattr(sym, name), *args)(*np_args)
    np.testing.assert_allclose(getattr(bounds, np_name)(*np_args), expected, rtol=1e-12)


def test_sympy_cone_box_cells_equal_numpy():
    d, phi = np.array([2.0, 3, 5, 10, 40]), RNG.uniform(0.05, 1.5, 5)
    f = lam(sym.frac_cone, sym.d, sym.phi)(d, phi)
    np.testing.assert_allclose(np.exp(bounds.log_frac_cone(d, phi)), f, rtol=1e-10)
    w = RNG.uniform(0, 5, 3)
    box = sym.slope_box.subs(sym.d, 3).doit().subs({sym.w[i + 1]: w[i] for i in range(3)})
    assert float(box.subs({sym.eps: 0.1, sym.V: 7})) == pytest.approx(bounds.slope_box(w, 0.1, 7))
    p = RNG.dirichlet(np.ones(4))
    mu = sym.mu_cells.subs(sym.V, 4).doit().subs({sym.p[i + 1]: p[i] for i in range(4)})
    assert float(mu) == pytest.approx(bounds.mu_from_fractions(p))


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


@pytest.mark.parametrize("d", [3, 5, 10, 768])
def test_cone_beta_equals_cone_plus_cap(d):
    phi = np.linspace(0.3, 3.0, 12) if d < 768 else np.linspace(0.8, 2.5, 12)
    np.testing.assert_allclose(bounds.frac_cone_cap_split(d, phi), np.exp(bounds.log_frac_cone(d, phi)), rtol=1e-10)


def test_cone_known_values_and_stability():
    phi = np.linspace(0.01, np.pi - 0.01, 40)
    np.testing.assert_allclose(np.exp(bounds.log_frac_cone(2, phi)), phi / np.pi, rtol=1e-12)
    np.testing.assert_allclose(np.exp(bounds.log_frac_cone(3, phi)), (1 - np.cos(phi)) / 2, rtol=1e-12)
    tiny = bounds.log_frac_cone(768, np.array([0.01, 0.1]))  # I_x underflows: series branch
    assert np.all(np.isfinite(tiny)) and tiny[0] < tiny[1] < -1000
    x, a = np.sin(0.3) ** 2, 40.0  # series branch == direct betainc where both work
    assert bounds._log_half_betainc(a, x) == pytest.approx(np.log(special.betainc(a, 0.5, x) / 2), rel=1e-12)
    assert np.all(np.diff(bounds.log_frac_cone(768, phi[phi < 2])) > 0)
    assert np.all(bounds.log_frac_cone(768, phi) <= 0)
    assert bounds.log_frac_cone_authors(3, np.pi / 2 - 1e-9) == pytest.approx(np.log(2))


def test_box_and_cone_slopes_refine_ball():
    r, eps, V, d = 3.0, 0.01, 1000, 16
    ball = bounds.slope_bound(d, r, eps, V)
    assert bounds.slope_box(np.full(d, 2 * r), eps, V) == pytest.approx(ball)
    assert bounds.slope_box(RNG.uniform(0, 2 * r, d), eps, V) < ball
    assert bounds.slope_cone(d, r, eps, V, 1.0) < ball < bounds.slope_cone(d, r, eps, V, np.pi / 2, authors=True)


def test_mu_and_cell_slope():
    p = RNG.dirichlet(np.ones(50), size=20)
    assert np.all(bounds.mu_from_fractions(p) >= np.log(50))  # Jensen
    assert bounds.mu_from_fractions(np.full(50, 0.02)) == pytest.approx(np.log(50))
    assert bounds.mu_from_fractions([0.5, 0.5, 0.0]) == np.inf
    with pytest.raises(ValueError):
        bounds.mu_from_fractions([1.5, -0.5])
    log_P = bounds.log_packing_upper(1.0, 0.01, 8)
    assert bounds.slope_cells(log_P, bounds.mu_from_fractions(p)).max() <= log_P / np.log(50)


def test_ball_volume_and_ellipsoid_counts():
    assert np.exp(bounds.log_unit_ball_volume(np.array([1, 2, 3]))) == pytest.approx([2, np.pi, 4 * np.pi / 3])
    assert bounds.log_unit_ball_volume(768) - 768 * np.log(2) == pytest.approx(-1997.7, abs=0.05)
    a = RNG.uniform(0.5, 3, (4, 10))
    box = bounds.slope_box(2 * a, np.full(4, 0.01), np.e)  # ln|V| = 1: the log count itself
    assert np.all(bounds.log_ellipsoid_volume_count(a, np.full(4, 0.01)) < box)
