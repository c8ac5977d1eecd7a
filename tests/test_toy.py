"""Tests for howmany.toy: exhaustive enumeration obeys Thm 4.5, and the grid rounding (Ass. 4.3)."""

import numpy as np

from howmany import toy


def test_grid_has_floor_plus_one_points_per_coordinate():
    cfg = toy.ToyConfig(r=1.0, eps=0.5, m=2)
    prompts = toy.grid_prompts(cfg)
    assert prompts.shape == (5**4, 2, 2)
    assert len(np.unique(prompts.reshape(len(prompts), -1), axis=0)) == len(prompts)


def test_distinct_outputs_below_grid_count_and_vocab_power():
    for m, eps in [(1, 0.25), (2, 1.0)]:
        cfg = toy.ToyConfig(eps=eps, m=m, n_max=6)
        res = toy.enumerate_outputs(cfg)
        assert res.n_prompts == cfg.grid_side ** (2 * m)
        for n, k in zip(res.n, res.n_distinct):
            assert 1 <= k <= min(res.n_prompts, cfg.d_vocab**n)
        assert res.n_distinct == sorted(res.n_distinct)  # prefixes: counts never decrease with n
        assert res.n_distinct[-1] > 1  # the prompt matters


def test_same_cell_gives_same_output_and_other_cells_can_differ():
    cfg = toy.ToyConfig(eps=0.25, n_max=5)
    assert toy.same_cell_invariance(cfg, 500, 5) == 1.0
    model = toy.ToyTransformer(cfg)
    x = np.array([[[0.3, -0.7]]])
    assert np.array_equal(model.quantise(x), np.array([[[0.25, -0.75]]]))


def test_labels_number_the_distinct_outputs():
    tokens = np.array([[2, 1], [0, 3], [2, 1], [0, 0]])
    assert toy.prefix_labels(tokens, 2).tolist() == [0, 1, 0, 2]
    assert toy.prefix_labels(tokens, 1).tolist() == [0, 1, 0, 1]
