"""Tests for howmany.cells: Monte Carlo cell volumes against exact areas, Voronoi vs argmax, mu bound."""

import numpy as np
import pytest
import torch

from howmany import cells, geometry, models

SQUARE = torch.tensor([[-1.0, -1.0], [1.0, 1.0]])  # states whose bounding box is [-1, 1]^2


def fractions(W, b, support, n=2**16, rule="argmax"):
    cfg = cells.CellsConfig(n_samples=n, support=support.kind, rule=rule, chunk=5000)
    counts = cells.count_cells(W, b, support, cfg)
    return counts / counts.sum(), counts


def test_hand_built_2d_decoder_matches_exact_areas():
    """Rows e1, e2, 0 on [-1, 1]^2: cells x>=max(y,0), y>=max(x,0), x,y<=0 → 3/8, 3/8, 1/4."""
    W = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    p, counts = fractions(W, None, cells.Support(SQUARE, "box"))
    se = np.sqrt(p * (1 - p) / counts.sum())
    assert np.all(np.abs(p - [0.375, 0.375, 0.25]) < 4 * se)


def test_bias_shifts_the_boundary_exactly():
    """Rows +e1, -e1 with bias (0.5, 0): cell 0 is x >= -1/4, area fraction 5/8."""
    W, b = torch.tensor([[1.0, 0.0], [-1.0, 0.0]]), torch.tensor([0.5, 0.0])
    p, _ = fractions(W, b, cells.Support(SQUARE, "box"))
    assert p[0] == pytest.approx(0.625, abs=0.01)


def test_ball_fractions_are_angles_without_bias():
    angles = np.array([0.0, 1.0, 2.5, 4.0])
    W = torch.tensor(np.stack([np.cos(angles), np.sin(angles)], 1), dtype=torch.float32)
    mids = (angles + np.roll(angles, -1) + np.array([0, 0, 0, 2 * np.pi])) / 2
    widths = np.diff(np.concatenate([mids[-1:] - 2 * np.pi, mids]))  # angular width of each cone
    p, _ = fractions(W, None, cells.Support(SQUARE * 3, "ball"))
    np.testing.assert_allclose(p, widths / (2 * np.pi), atol=0.01)


def test_fractions_sum_to_one_and_voronoi_differs_only_with_unequal_norms():
    torch.manual_seed(0)
    W = torch.randn(30, 4)
    sup = cells.Support(torch.randn(100, 4), "box")
    p, _ = fractions(W, None, sup, n=4000)
    assert p.sum() == pytest.approx(1.0)
    h = sup.sample(3000, torch.Generator().manual_seed(1))
    assert (cells.assign(h, W) != cells.assign(h, W, rule="voronoi")).any()
    Wn = torch.nn.functional.normalize(W, dim=1)
    assert torch.equal(cells.assign(h, Wn), cells.assign(h, Wn, rule="voronoi"))


def test_bf16_screen_with_recheck_equals_fp32():
    torch.manual_seed(1)
    W, h = torch.randn(500, 16), torch.randn(2000, 16)
    assert torch.equal(cells.assign(h, W), cells.assign(h, W, screen_dtype="bfloat16"))


def test_statistics_mu_bound_and_rank_volume():
    rng = np.random.default_rng(0)
    p_true = rng.dirichlet(np.full(200, 0.3))
    counts = np.bincount(rng.choice(200, size=20_000, p=p_true), minlength=200)
    st = cells.cell_statistics(counts, top=5)
    mu_true = -np.log(p_true).mean()
    assert np.log(200) <= mu_true and st["mu_lower"] <= mu_true  # Jensen; our bound holds here
    assert st["n_hit"] == (counts > 0).sum() and st["top_ids"][0] == counts.argmax()
    rv = cells.rank_volume(st)
    np.testing.assert_allclose(rv, np.sort(counts[counts > 0])[::-1] / 20_000)
    assert st["n80"] == np.searchsorted(np.cumsum(rv), 0.8) + 1


def test_uniform_cells_give_mu_ln_v():
    st = cells.cell_statistics(np.full(50, 1000))
    assert st["mu_hit"] == pytest.approx(np.log(50)) and st["mu_lower"] == pytest.approx(np.log(50))


def test_supports_sample_inside_their_sets():
    x = torch.randn(300, 6) * torch.tensor([5.0, 1, 1, 1, 1, 0.1]) + 2
    g = torch.Generator().manual_seed(0)
    box, ball = cells.Support(x, "box"), cells.Support(x, "ball")
    pts = box.sample(1000, g)
    assert (pts >= box.lo).all() and (pts <= box.hi).all()
    assert ball.sample(1000, g).norm(dim=1).max() <= ball.r2 + 1e-4
    emp = cells.Support(x, "empirical").sample(50, g)
    assert all((emp[i] == x).all(1).any() for i in range(50))
    with pytest.raises(ValueError):
        cells.Support(x, "cube")


def test_plane_labels_and_tiny_measure():
    lm = models.tiny("llama", d_model=16, n_layers=1, n_heads=2, d_vocab=40)
    states, _ = geometry.sample_states(lm, geometry.GeometryConfig(n_prompts=2, length=16))
    W, b = cells.decoder(lm.model)
    labels, extent = cells.plane_labels(W, b, states[0, :3], n=20)
    assert labels.shape == (20, 20) and labels.max() < 40 and extent == (-0.5, 1.5, -0.5, 1.5)
    out = cells.measure(lm, states, cells.CellsConfig(n_samples=2000, n_other=500))
    assert sum(np.multiply(out["count_values"], out["count_freq"])) == 2000
    assert set(out["supports"]) == {"ball", "ellipsoid", "empirical"}
    assert 0 <= out["voronoi"]["agree"] <= 1 and out["top_strings"][0].startswith("#")


def test_blocked_argmax_equals_brute_force_across_blocks():
    g = torch.Generator().manual_seed(3)
    W, b, h = torch.randn(1000, 8, generator=g), torch.randn(1000, generator=g), torch.randn(300, 8, generator=g)
    for block in (64, 1000, 4096):  # several blocks with a ragged last one, exactly one, fewer rows
        assert torch.equal(cells._argmax_blocked(h, W, b, block=block), (h @ W.T + b).argmax(1))
        assert torch.equal(cells._argmax_blocked(h, W, None, block=block), (h @ W.T).argmax(1))
    vor = ((h[:, None, :] - W[None]) ** 2).sum(-1).argmin(1)
    assert (cells.assign(h, W, b, rule="voronoi") == vor).float().mean() > 0.99  # rounding ties only
