"""Tests for howmany.refinements: SymPy form == NumPy form, known values, each refinement <= the ball."""

import doctest

import numpy as np
import pytest
import sympy as sp
from scipy import special

from howmany import bounds, refinements
from howmany.refinements import sym

RNG = np.random.default_rng(1)


def lam(expr, *args):
    return sp.lambdify(args, expr, modules=["scipy", "numpy"])


def test_doctests():
    assert doctest.testmod(refinements).failed == 0


def test_sym_extends_the_bounds_twins():
    assert sym.C is bounds.sym.C and sym.eps is bounds.sym.eps  # one set of symbols for both modules
    assert "frac_cone" not in vars(bounds.sym)


@pytest.mark.parametrize("name, args, np_args", [
    ("slope_cells", (sym.log_P, sym.mu), (RNG.uniform(0.1, 100, 50), RNG.uniform(1e-4, 1, 50))),
    ("log_unit_ball_volume", (sym.d,), (RNG.integers(1, 2000, 50).astype(float),)),
])
def test_sympy_equals_numpy(name, args, np_args):
    expected = lam(getattr(sym, name), *args)(*np_args)
    np.testing.assert_allclose(getattr(refinements, name)(*np_args), expected, rtol=1e-12)


def test_sympy_cone_box_cells_equal_numpy():
    d, phi = np.array([2.0, 3, 5, 10, 40]), RNG.uniform(0.05, 1.5, 5)
    f = lam(sym.frac_cone, sym.d, sym.phi)(d, phi)
    np.testing.assert_allclose(np.exp(refinements.log_frac_cone(d, phi)), f, rtol=1e-10)
    w = RNG.uniform(0, 5, 3)
    box = sym.slope_box.subs(sym.d, 3).doit().subs({sym.w[i + 1]: w[i] for i in range(3)})
    assert float(box.subs({sym.eps: 0.1, sym.V: 7})) == pytest.approx(refinements.slope_box(w, 0.1, 7))
    p = RNG.dirichlet(np.ones(4))
    mu = sym.mu_cells.subs(sym.V, 4).doit().subs({sym.p[i + 1]: p[i] for i in range(4)})
    assert float(mu) == pytest.approx(refinements.mu_from_fractions(p))



@pytest.mark.parametrize("d", [3, 5, 10, 768])
def test_cone_beta_equals_cone_plus_cap(d):
    phi = np.linspace(0.3, 3.0, 12) if d < 768 else np.linspace(0.8, 2.5, 12)
    np.testing.assert_allclose(refinements.frac_cone_cap_split(d, phi), np.exp(refinements.log_frac_cone(d, phi)), rtol=1e-10)


def test_cone_known_values_and_stability():
    phi = np.linspace(0.01, np.pi - 0.01, 40)
    np.testing.assert_allclose(np.exp(refinements.log_frac_cone(2, phi)), phi / np.pi, rtol=1e-12)
    np.testing.assert_allclose(np.exp(refinements.log_frac_cone(3, phi)), (1 - np.cos(phi)) / 2, rtol=1e-12)
    tiny = refinements.log_frac_cone(768, np.array([0.01, 0.1]))  # I_x underflows: series branch
    assert np.all(np.isfinite(tiny)) and tiny[0] < tiny[1] < -1000
    x, a = np.sin(0.3) ** 2, 40.0  # series branch == direct betainc where both work
    assert refinements._log_half_betainc(a, x) == pytest.approx(np.log(special.betainc(a, 0.5, x) / 2), rel=1e-12)
    assert np.all(np.diff(refinements.log_frac_cone(768, phi[phi < 2])) > 0)
    assert np.all(refinements.log_frac_cone(768, phi) <= 0)
    assert refinements.log_frac_cone_authors(3, np.pi / 2 - 1e-9) == pytest.approx(np.log(2))


def test_box_and_cone_slopes_refine_ball():
    r, eps, V, d = 3.0, 0.01, 1000, 16
    ball = bounds.slope_bound(d, r, eps, V)
    assert refinements.slope_box(np.full(d, 2 * r), eps, V) == pytest.approx(ball)
    assert refinements.slope_box(RNG.uniform(0, 2 * r, d), eps, V) < ball
    assert refinements.slope_cone(d, r, eps, V, 1.0) < ball < refinements.slope_cone(d, r, eps, V, np.pi / 2, authors=True)


def test_mu_and_cell_slope():
    p = RNG.dirichlet(np.ones(50), size=20)
    assert np.all(refinements.mu_from_fractions(p) >= np.log(50))  # Jensen
    assert refinements.mu_from_fractions(np.full(50, 0.02)) == pytest.approx(np.log(50))
    assert refinements.mu_from_fractions([0.5, 0.5, 0.0]) == np.inf
    with pytest.raises(ValueError):
        refinements.mu_from_fractions([1.5, -0.5])
    log_P = bounds.log_packing_upper(1.0, 0.01, 8)
    assert refinements.slope_cells(log_P, refinements.mu_from_fractions(p)).max() <= log_P / np.log(50)


def test_ball_volume_and_ellipsoid_counts():
    assert np.exp(refinements.log_unit_ball_volume(np.array([1, 2, 3]))) == pytest.approx([2, np.pi, 4 * np.pi / 3])
    assert refinements.log_unit_ball_volume(768) - 768 * np.log(2) == pytest.approx(-1997.7, abs=0.05)
    a = RNG.uniform(0.5, 3, (4, 10))
    box = refinements.slope_box(2 * a, np.full(4, 0.01), np.e)  # ln|V| = 1: the log count itself
    assert np.all(refinements.log_ellipsoid_volume_count(a, np.full(4, 0.01)) < box)
