"""Tests for howmany.geometry: states are the unembedding input; statistics match brute force."""

import itertools

import numpy as np
import pytest
import torch

from howmany import geometry, models, precision, refinements

CFG = geometry.GeometryConfig(n_prompts=3, length=12, batch_size=2, max_cone_points=10_000)


@pytest.fixture(scope="module", params=["llama", "neox"])
def lm(request):
    return models.tiny(request.param, d_model=16, n_layers=1, n_heads=2, d_vocab=48, seed=2)


def test_states_are_what_lm_head_receives(lm):
    """last_hidden_state is post-final-norm: it equals the lm_head input, position by position."""
    states, bos_state = geometry.sample_states(lm, CFG)
    prompts = geometry.make_prompts(lm, CFG, "random")
    ids = torch.cat([torch.zeros(len(prompts), 1, dtype=torch.long), prompts], 1)
    with geometry.capture_unembedding_input(lm.model) as seen:
        lm.model(ids)
    assert len(lm.model.get_output_embeddings()._forward_pre_hooks) == 0  # hook removed
    torch.testing.assert_close(states, seen[0][:, 1:].float())
    torch.testing.assert_close(bos_state, seen[0][0, 0].float())


def test_hook_removed_even_on_error(lm):
    with pytest.raises(RuntimeError), geometry.capture_unembedding_input(lm.model):
        raise RuntimeError("boom")
    assert len(lm.model.get_output_embeddings()._forward_pre_hooks) == 0


def test_random_prompts_use_ordinary_tokens_only(lm):
    ids = geometry.make_prompts(lm, geometry.GeometryConfig(n_prompts=20, length=50), "random")
    assert ids.min() >= 1 and ids.max() < lm.d_vocab  # 0 is the tiny models' BOS
    assert set(geometry.allowed_token_ids(lm)) == set(range(1, lm.d_vocab))


def test_summary_matches_brute_force():
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.normal(size=(60, 5)) + np.array([3.0, 0, 0, 0, 0]))
    s = geometry.summarize(x)
    xn = x.numpy()
    assert s["r_inf"] == pytest.approx(np.abs(xn).max())
    assert s["r_2"] == pytest.approx(np.linalg.norm(xn, axis=1).max())
    assert s["r_2_pct"][0] == pytest.approx(np.median(np.linalg.norm(xn, axis=1)))
    np.testing.assert_allclose(s["widths"], xn.max(0) - xn.min(0))
    cos = min(a @ b / np.linalg.norm(a) / np.linalg.norm(b) for a, b in itertools.combinations(xn, 2))
    assert s["theta"] == pytest.approx(np.arccos(cos))
    mean = xn.mean(0) / np.linalg.norm(xn.mean(0))
    assert s["phi_mean"] == pytest.approx(np.arccos((xn @ mean / np.linalg.norm(xn, axis=1)).min()))
    np.testing.assert_allclose(np.square(s["pca_sd"]), np.sort(np.linalg.eigvalsh(np.cov(xn.T)))[::-1])
    assert s["pca_halfwidth"][0] <= np.linalg.norm(xn - xn.mean(0), axis=1).max() + 1e-9


def test_min_pairwise_cosine_chunked_equals_full():
    x = torch.randn(257, 7, dtype=torch.float64)
    u = torch.nn.functional.normalize(x, dim=1)
    assert geometry.min_pairwise_cosine(x, chunk=10) == pytest.approx(float((u @ u.T).min()))


def test_bound_table_uses_theory_conventions():
    s = {"r_inf": 10.74, "widths": [21.48] * 640, "theta": 1.82}
    rows = {(r["format"], r["convention"]): r for r in geometry.bound_table(s, 640, 262144)}
    fp16 = rows[("fp16", "absolute")]
    assert fp16["eps"] == 2**-10
    assert fp16["C_ball"] == pytest.approx(512.9, abs=0.1)  # THEORY §7, Gemma-3-270M, C_(b)
    assert rows[("fp16", "relative")]["C_ball"] == pytest.approx(426.7, abs=0.1)  # C_(a)
    assert fp16["C_box"] == pytest.approx(float(refinements.slope_box(np.full(640, 21.48), 2**-10, 262144)))
    assert fp16["C_cone"] < fp16["C_ball"]
    assert rows[("bf16", "absolute")]["eps"] == float(precision.epsilon("bf16", 1.0))


def test_radius_by_position_shapes():
    states = torch.tensor([[[1.0, -2.0], [0.5, 0.5]], [[3.0, 0.0], [0.1, -0.2]]])
    r = geometry.radius_by_position(states)
    assert r["max"] == [3.0, 0.5] and r["running_max"] == [3.0, 3.0]


def test_measure_tiny_end_to_end(lm):
    rep = geometry.measure(lm, CFG)
    assert set(rep["sources"]) == {"random"}  # no tokenizer, no natural text
    assert rep["all"]["n"] == CFG.n_prompts * CFG.length
    assert len(rep["table"]) == 6 and rep["d_model"] == 16


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2-135m", "gemma3-270m"])
def test_real_models_states_are_post_norm(name):
    lm = models.load(name)
    cfg = geometry.GeometryConfig(n_prompts=1, length=8)
    states, bos_state = geometry.sample_states(lm, cfg, "text")
    ids = torch.cat([torch.tensor([[lm.bos_id]]), geometry.make_prompts(lm, cfg, "text")], 1)
    with geometry.capture_unembedding_input(lm.model) as seen:
        lm.model(ids)
    torch.testing.assert_close(states, seen[0][:, 1:].float())
