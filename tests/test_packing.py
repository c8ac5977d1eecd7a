"""Tests for howmany.packing: exact small cases, bounds on random maximal sets, lattices."""

import math

import numpy as np
import pytest

from howmany import packing as pk


@pytest.mark.parametrize("r,eps", [(1.0, 0.1), (1.0, 0.3), (2.5, 1.0), (0.4, 1.0), (3.0, 0.75)])
def test_1d_exact_is_floor_plus_one_and_bruteforce_agrees(r, eps):
    n = pk.packing_number_1d(r, eps)
    assert n == math.floor(2 * r / eps + 1e-9) + 1
    fine = pk.grid_points(r, eps / 3, 1)  # candidate set that contains the optimal grid
    if len(fine) <= 40:
        assert pk.max_packing_bruteforce(fine, eps, norm="linf") == n


@pytest.mark.parametrize("r,eps,dim", [(1.0, 0.5, 2), (1.0, 1.0, 2), (1.0, 2 / 3, 2), (0.5, 1.0, 3)])
def test_linf_grid_count_and_bruteforce(r, eps, dim):
    grid = pk.grid_points(r, eps, dim)
    assert len(grid) == (math.floor(2 * r / eps + 1e-9) + 1) ** dim
    assert pk.min_distance(grid, "linf") >= eps - 1e-12
    fine = pk.grid_points(r, eps / 2, dim)
    if len(fine) <= 40:  # exhaustive search over a finer candidate grid finds no better packing
        assert pk.max_packing_bruteforce(fine, eps, norm="linf") == len(grid)


def test_hexagon_plus_centre_seven_points():
    pts = pk.disc_optimal_points(7, r=1.0)
    assert len(pts) == 7 and np.all(np.linalg.norm(pts, axis=1) <= 1 + 1e-12)
    assert pk.min_distance(pts) >= 1 - 1e-12
    assert pk.disc_packing_number(1.0, 1.0) == 7
    assert 1.0 <= 7 <= (1 + 2 * 1.0) ** 2  # (r/ε)^2 ≤ P ≤ (1+2r/ε)^2 at ε = r
    for k in range(2, 8):
        assert abs(pk.min_distance(pk.disc_optimal_points(k)) - pk.DISC_DELTA[k]) < 1e-12


def test_disc_packing_number_decreases_with_eps():
    values = [pk.disc_packing_number(1.0, e) for e in np.linspace(1.0, 2.0, 21)]
    assert values == sorted(values, reverse=True) and values[-1] == 2
    with pytest.raises(ValueError):
        pk.disc_packing_number(1.0, 0.5)


@pytest.mark.parametrize("dim,ratio", [(2, 2.0), (2, 4.0), (3, 2.0)])
def test_random_maximal_sets_lie_between_the_bounds(dim, ratio):
    rng = np.random.default_rng(0)
    for norm in ("l2", "linf"):
        pts = pk.random_maximal_packing(ratio, 1.0, dim, norm=norm, oversample=20, rng=rng)
        assert pk.min_distance(pts, norm) >= 1 - 1e-9
        assert ratio**dim <= len(pts) <= (1 + 2 * ratio) ** dim


def test_greedy_is_maximal_among_candidates():
    rng = np.random.default_rng(1)
    cand = rng.uniform(-3, 3, size=(3000, 2))
    pts = pk.greedy_packing(cand, 1.0, chunk=500)
    d = np.min(np.linalg.norm(cand[:, None] - pts[None], axis=2), axis=1)
    assert np.all(d < 1.0 + 1e-12)  # every candidate is blocked by an accepted point


@pytest.mark.parametrize("kind,dim", [("cubic", 2), ("hex", 2), ("cubic", 3), ("fcc", 3)])
def test_lattices_are_separated_and_below_the_volume_bound(kind, dim):
    pts = pk.lattice_packing(4.0, 1.0, dim, kind=kind)
    assert pk.min_distance(pts) >= 1 - 1e-9
    assert len(pts) <= 9.0**dim


def test_hex_beats_square_lattice_in_a_large_disc():
    assert len(pk.lattice_packing(10, 1, 2, kind="hex")) > len(pk.lattice_packing(10, 1, 2, kind="cubic"))


def test_packing_sweep_rows_between_bounds():
    rows = pk.packing_sweep([1.0, 2.0], 2, oversample=5, seed=0, n_random=2)
    assert [r["grid"] for r in rows] == [9, 25] and set(rows[0]) >= {"hex lattice", "random maximal"}
    for x, row in zip([1.0, 2.0], rows):
        assert all(x**2 <= v <= (1 + 2 * x) ** 2 for k, v in row.items() if k != "cubic lattice")
