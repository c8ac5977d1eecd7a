"""Tests for howmany.volumes: each Monte Carlo fraction against its closed form."""

import numpy as np
import pytest
from scipy.special import betainc, gamma

from howmany import packing as pk
from howmany import volumes as vol


def _f_exact(d, phi):
    return 0.5 * betainc((d - 1) / 2, 0.5, np.sin(phi) ** 2)


@pytest.mark.parametrize("d,phi", [(2, 1.0), (3, 0.8), (5, 0.9), (10, 1.1)])
def test_mc_cone_fraction_matches_incomplete_beta(d, phi):
    est, se = vol.mc_cone_fraction(d, phi, 200_000, rng=np.random.default_rng(d))
    assert abs(est - _f_exact(d, phi)) < 5 * se
    if d == 2:
        assert abs(_f_exact(2, phi) - phi / np.pi) < 1e-12
    if d == 3:
        assert abs(_f_exact(3, phi) - (1 - np.cos(phi)) / 2) < 1e-12


def test_mc_ellipsoid_and_box():
    rng = np.random.default_rng(2)
    a = np.array([1.0, 0.5, 2.0])
    est, se = vol.mc_ellipsoid_volume(a, 200_000, rng=rng)
    exact = np.pi ** 1.5 / gamma(2.5) * a.prod()
    assert abs(est - exact) < 5 * se
    est, se = vol.mc_box_in_ball_fraction([1.0, 0.5], 1.0, 100_000, rng=rng)
    assert abs(est - 0.5 * 0.25) < 5 * se


def test_cell_fractions_argmax_vs_voronoi():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((6, 2)) * rng.uniform(0.3, 3, size=(6, 1))
    p_arg = vol.mc_cell_fractions(W, None, 50_000, rng=rng)
    p_vor = vol.mc_cell_fractions(W, None, 50_000, rng=rng, rule="voronoi")
    assert abs(p_arg.sum() - 1) < 1e-12 and np.abs(p_arg - p_vor).max() > 0.02
    U = W / np.linalg.norm(W, axis=1, keepdims=True)  # equal norms, no bias: the same cells
    h = pk.sample_support(20_000, 2, 1.0, rng=rng)
    assert np.array_equal((h @ U.T).argmax(1), (-((h[:, None] - U[None]) ** 2).sum(-1)).argmax(1))
