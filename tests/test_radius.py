"""Tests for howmany.radius: the authors' r_inf statistic, dtype handling and non-finite counting."""

import math

import numpy as np
import pytest
import torch

from howmany import models, radius

CFG = radius.RadiusConfig(lengths=(4, 8), n_samples=(6, 5), batch_tokens=16, cell_points=256)


@pytest.fixture(scope="module")
def lm():
    return models.tiny("llama", d_model=16, n_layers=1, n_heads=2, d_vocab=48, seed=3)


def test_random_ids_cover_the_whole_embedding_and_are_seeded():
    ids = radius.random_ids(48, 50, 40, seed=0)
    assert ids.shape == (40, 50) and ids.min() == 0 and ids.max() == 47  # special ids included
    assert len(set(ids[:, 0].tolist())) > 1  # no fixed BOS in front
    assert torch.equal(ids, radius.random_ids(48, 50, 40, seed=0))
    assert not torch.equal(ids[:, :8], radius.random_ids(48, 8, 40, seed=0))  # seed + length


def test_last_states_are_the_lm_head_input_at_the_last_position(lm):
    ids = radius.random_ids(lm.d_vocab, 7, 5, seed=1)
    seen = []
    hook = lm.model.get_output_embeddings().register_forward_pre_hook(
        lambda mod, args: seen.append(args[0].detach()))
    try:
        lm.model(ids)
    finally:
        hook.remove()
    states = radius.last_states(lm.model.base_model, ids, batch_size=2)
    assert states.dtype == torch.float32 and states.shape == (5, lm.d_model)
    torch.testing.assert_close(states, seen[0][:, -1])


@pytest.mark.parametrize("dtype, tol", [("float16", 2e-2), ("bfloat16", 1e-1)])
def test_low_precision_states_come_back_as_float32_close_to_fp32(dtype, tol):
    lo = models.tiny("llama", d_model=16, n_layers=1, n_heads=2, d_vocab=48, seed=3, dtype=dtype)
    hi = models.tiny("llama", d_model=16, n_layers=1, n_heads=2, d_vocab=48, seed=3)
    ids = radius.random_ids(48, 6, 4, seed=0)
    a, b = radius.last_states(lo.model.base_model, ids), radius.last_states(hi.model.base_model, ids)
    assert a.dtype == torch.float32 and next(lo.model.parameters()).dtype == getattr(torch, dtype)
    assert (a - b).abs().max() < tol * b.abs().max() and not torch.equal(a, b)


def test_authors_statistic_is_max_linf_and_propagates_nan_and_inf():
    x = torch.tensor([[1.0, -3.0], [2.0, 2.0]])
    assert radius.authors_statistic(x) == 3.0
    assert radius.linf_norms(x).tolist() == [3.0, 2.0]
    with_inf = torch.cat([x, torch.tensor([[math.inf, 0.0]])])
    assert radius.authors_statistic(with_inf) == math.inf
    with_nan = torch.cat([with_inf, torch.tensor([[math.nan, 0.0]])])
    assert math.isnan(radius.authors_statistic(with_nan))  # NaN wins over inf and over any number


def test_nonfinite_counts_and_summary_ignore_bad_states_for_r_inf():
    x = torch.tensor([[1.0, -3.0], [math.inf, 0.0], [math.nan, 1.0], [math.nan, -math.inf], [0.5, 0.5]])
    assert radius.nonfinite_counts(x) == {"n": 5, "n_nan": 2, "n_inf": 1}
    s = radius.summarize(x)
    assert s["r_inf"] == 3.0 and s["authors"] == "nan" and s["r_2"] == pytest.approx(math.sqrt(10))
    assert s["linf"] == [3.0, None, None, None, 0.5]
    assert radius.running_max(s["linf"]).tolist() == [3.0, 3.0, 3.0, 3.0, 3.0]


def test_fp16_overflow_is_counted_and_makes_the_authors_statistic_nan():
    """Embeddings beyond the fp16 range overflow to inf; the RMSNorm turns them into NaN."""
    lm = models.tiny("llama", d_model=16, n_layers=1, n_heads=2, d_vocab=48, seed=3)
    lm.model.base_model.get_input_embeddings().weight.data *= 1e6  # |x| ~ 2e4 > 65504 often
    fp32 = radius.sweep(lm.model.base_model, CFG)
    fp16 = radius.sweep(lm.model.base_model.half(), CFG)
    assert fp32["pooled"]["n_nan"] == fp32["pooled"]["n_inf"] == 0
    assert math.isfinite(float(fp32["pooled"]["authors"]))
    assert fp16["pooled"]["n_nan"] + fp16["pooled"]["n_inf"] > 0
    assert not math.isfinite(float(fp16["pooled"]["authors"]))


def test_sweep_reports_every_length_and_pools_them(lm):
    out = radius.sweep(lm.model.base_model, CFG)
    assert [r["length"] for r in out["lengths"]] == [4, 8]
    assert [r["n"] for r in out["lengths"]] == [6, 5] and out["pooled"]["n"] == 11
    assert out["pooled"]["r_inf"] == max(r["r_inf"] for r in out["lengths"])
    assert out["states"].shape == (11, lm.d_model)
    assert float(out["pooled"]["authors"]) == pytest.approx(out["pooled"]["r_inf"])


def test_unloaded_twin_has_fresh_weights_and_norms_at_one(lm):
    twin = radius.unloaded_twin(lm, seed=11, norm_init=1.0)
    assert type(twin) is type(lm.model.base_model)
    norms = [m.weight for m in twin.modules() if "RMSNorm" in type(m).__name__]
    assert norms and all(torch.all(w == 1.0) for w in norms)
    emb = twin.get_input_embeddings().weight
    assert not torch.equal(emb, lm.model.base_model.get_input_embeddings().weight)
    assert not any(p.requires_grad for p in twin.parameters())


def test_largest_cells_rules_and_config_checks(lm):
    states = radius.sweep(lm.model.base_model, CFG)["states"]
    states = torch.cat([states, torch.full((1, lm.d_model), math.nan)])  # ignored by the box
    out = radius.largest_cells(lm, states, CFG)
    for rule in ("argmax", "voronoi"):
        assert out[rule]["n"] == CFG.cell_points and 0 < out[rule]["p_max"] <= 1
        assert out[rule]["string"].startswith("#")
    with pytest.raises(ValueError):
        radius.RadiusConfig(lengths=(4,), n_samples=(1, 2))
    with pytest.raises(ValueError):
        radius.run("tiny-llama-d16-v48-l1", "half-loaded", "float32", CFG)


def test_cached_run_smoke_on_a_tiny_model():
    rec = radius.cached_run("tiny-llama-d16-v48-l1-h2", "loaded", "float16", "smoke")
    res = rec.result
    assert res["dtype"] == "float16" and len(res["lengths"]) == 3
    assert np.isfinite(res["pooled"]["r_inf"]) and rec.provenance["dtype"] == "float16"


def test_pooled_norms_is_a_seeded_permutation_of_all_states(lm):
    out = radius.sweep(lm.model.base_model, CFG)
    pooled = radius.pooled_norms(out, seed=1)
    everything = [v for row in out["lengths"] for v in row["linf"]]
    assert sorted(pooled) == sorted(everything) and pooled == radius.pooled_norms(out, seed=1)
    assert radius.running_max(pooled)[-1] == out["pooled"]["r_inf"]


def test_cone_angle_is_the_widest_angle_between_the_sweeps_states(lm):
    name = "tiny-llama-d16-v48-l1-h2"
    out = radius.cone_angle(name, "loaded", "float32", CFG)
    states = radius.sweep(models.load(name).model.base_model, CFG)["states"]
    u = torch.nn.functional.normalize(states.double(), dim=1)
    widest = float(torch.arccos((u @ u.T).clamp(-1, 1).min()))
    assert out["n"] == 11 and out["theta"] == pytest.approx(widest, abs=1e-6)
    assert 0.0 <= radius.cone_angle(name, "unloaded", "float32", CFG)["theta"] <= math.pi
