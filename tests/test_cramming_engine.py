"""Cramming engine: exact recovery, batch = separate runs, no free token, verification, NaN, AdamW."""

import math

import numpy as np
import pytest
import torch

from howmany import cramming

CFG = cramming.CramConfig(max_steps=300, patience=100)


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return cramming.scaling.tiny_lm(d_model=64, d_vocab=64, seed=0)


@pytest.mark.parametrize("layout", ["bos-mem", "mem-bos", "mem"])
def test_crams_four_tokens_exactly_and_greedy_confirms_in_every_layout(lm, layout):
    target = np.array([[5, 9, 3, 7]])
    cfg = cramming.CramConfig(max_steps=300, patience=100, layout=layout)
    out = cramming.cram(lm.model, lm.bos_id, target, 2, cfg, seeds=[4])[0]
    assert out["status"] == "solved" and out["n_verified"] == 4
    gen = cramming.greedy_generate(lm.model, lm.bos_id, layout, out["prompt"][None], 4)
    assert gen.tolist() == target.tolist()


def test_layouts_place_the_fixed_token_around_the_prompt(lm):
    mem, ids = torch.randn(1, 2, 64), torch.tensor([[7]])
    bos = lm.model.get_input_embeddings()(torch.tensor([[lm.bos_id]]))
    frame = {k: cramming.decoding.frame(lm.model, lm.bos_id, k, mem, ids) for k in ("bos-mem", "mem-bos", "mem")}
    assert torch.equal(frame["bos-mem"][:, :1], bos) and torch.equal(frame["bos-mem"][:, 1:3], mem)
    assert torch.equal(frame["mem-bos"][:, :2], mem) and torch.equal(frame["mem-bos"][:, 2:3], bos)
    assert frame["mem"].shape[1] == 3 and torch.equal(frame["mem"][:, :2], mem)


def test_batch_equals_separate_runs(lm):
    tg = np.random.default_rng(1).integers(0, 64, size=(3, 4))
    cfg = cramming.CramConfig(max_steps=25, patience=25)
    batch = cramming.cram(lm.model, lm.bos_id, tg, 1, cfg, seeds=[10, 11, 12])
    for i in range(3):
        one = cramming.cram(lm.model, lm.bos_id, tg[i : i + 1], 1, cfg, seeds=[10 + i])[0]
        assert one["steps"] == batch[i]["steps"] and one["status"] == batch[i]["status"]
        assert one["loss"] == pytest.approx(batch[i]["loss"], rel=1e-4, abs=1e-5)


def test_manual_adamw_matches_torch(lm):
    """The engine's elementwise AdamW equals torch.optim.AdamW with the paper's settings."""
    tg = np.array([[1, 2, 3, 4, 5, 6]])
    cfg = cramming.CramConfig(max_steps=5, patience=5)
    ours = cramming.cram(lm.model, lm.bos_id, tg, 1, cfg, seeds=[3])[0]["loss"]
    x = cramming.init_prompts(lm.model, 1, [3], cfg).requires_grad_(True)
    opt = torch.optim.AdamW([x], lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    for _ in range(5):
        logits = lm.model(inputs_embeds=cramming.decoding.frame(lm.model, lm.bos_id, cfg.layout, x,
                                                          torch.tensor(tg[:, :5])), logits_to_keep=6).logits
        loss = torch.nn.functional.cross_entropy(logits[0], torch.tensor(tg[0]))
        if _ < 4:
            opt.zero_grad(), loss.backward(), opt.step()
    assert loss.item() == pytest.approx(ours, rel=1e-4)


def test_no_free_token_first_target_predicted_from_prompt(lm):
    """The first target is scored at the last prompt position: logits_to_keep = n, inputs end at t_{n-1}."""
    x = cramming.init_prompts(lm.model, 2, [0], CFG)
    ids = torch.tensor([[7, 8, 9]])
    emb = cramming.decoding.frame(lm.model, lm.bos_id, "bos-mem", x, ids[:, :2])
    assert emb.shape[1] == 1 + 2 + 2  # BOS, 2 prompt vectors, t1, t2 (t3 never fed)
    full = lm.model(inputs_embeds=emb).logits
    kept = lm.model(inputs_embeds=emb, logits_to_keep=3).logits
    # position 2 = last prompt vector predicts t1 (a shifted slice would differ by O(1), not by
    # the 1e-4 that another matmul blocking of the sliced lm_head can give)
    assert torch.allclose(full[:, 2:], kept, rtol=1e-4, atol=1e-3)
    gen = cramming.greedy_generate(lm.model, lm.bos_id, "bos-mem", x, 1)
    assert gen[0, 0] == full[0, 2].argmax()


def test_verification_rejects_a_teacher_forced_false_positive(lm):
    """A prompt solved in fp32 is rejected when the stated precision rounds it to a coarse grid."""
    target = np.array([[5, 9, 3, 7]])
    out = cramming.cram(lm.model, lm.bos_id, target, 2, CFG, seeds=[4])[0]
    coarse = cramming.CramConfig(precision="4.0")  # grid step 4: the prompt collapses to ~0
    ok_fine = cramming.verify(lm.model, lm.bos_id, CFG, out["prompt"][None], torch.tensor(target), [4])
    ok_coarse = cramming.verify(lm.model, lm.bos_id, coarse, out["prompt"][None], torch.tensor(target), [4])
    assert ok_fine[0] and not ok_coarse[0]


def test_nan_is_reported_per_string(lm):
    tg = np.array([[1, 2, 3], [4, 5, 6]])
    cfg = cramming.CramConfig(max_steps=5, patience=5, init_scale=math.inf)  # inf prompt → NaN
    out = cramming.cram(lm.model, lm.bos_id, tg, 1, cfg, seeds=[0, 1])
    assert [o["status"] for o in out] == ["nan", "nan"]


def test_grow_and_bisect_thresholds_are_close(lm):
    tg = np.random.default_rng(2).integers(0, 64, size=(2, 8))
    cfg = cramming.CramConfig(max_steps=60, patience=25)
    grow = cramming.thresholds_grow(lm.model, lm.bos_id, tg, 1, cfg, seeds=range(2))
    bis = cramming.thresholds_bisect(lm.model, lm.bos_id, tg, 1, cfg, seeds=range(2))
    for g, b in zip(grow, bis):
        assert 1 <= g["threshold"] <= 8 and 1 <= b["threshold"] <= 8
        assert abs(g["threshold"] - b["threshold"]) <= 4


@pytest.mark.parametrize("bad", [dict(m=0, n=3), dict(m=1, n=0), dict(m=-1, n=2)])
def test_bad_arguments_raise(lm, bad):
    with pytest.raises(ValueError, match="must be positive"):
        cramming.cram(lm.model, lm.bos_id, np.ones((1, 4), int), bad["m"], CFG, seeds=[0],
                      lengths=[bad["n"]])


def test_unknown_layout_raises(lm):
    with pytest.raises(ValueError, match="unknown layout"):
        cramming.cram(lm.model, lm.bos_id, np.ones((1, 2), int), 1,
                      cramming.CramConfig(layout="sideways"), seeds=[0])


def test_bfloat16_model_crams_with_fp32_master_prompt():
    lm16 = cramming.scaling.tiny_lm(d_model=64, d_vocab=64, seed=0)
    lm16.model.to(torch.bfloat16)
    out = cramming.cram(lm16.model, lm16.bos_id, np.array([[5, 9, 3]]), 2, CFG, seeds=[4])[0]
    assert out["status"] == "solved" and out["prompt"].dtype == torch.float32


def test_tiny_lm_resolves_auto_device_and_keeps_its_weights():
    from howmany.cramming import scaling
    from howmany.devices import resolve_device

    cpu, auto = scaling.tiny_lm(seed=3), scaling.tiny_lm(seed=3, device="auto")
    assert auto.device == resolve_device("auto") and cpu.device == "cpu"
    w_cpu = next(cpu.model.parameters())
    assert torch.equal(w_cpu, next(auto.model.parameters()).cpu())  # drawn on the CPU either way
