"""Tests for howmany.copying (data, evaluation, training) and howmany.copymodels (architectures)."""

import math

import pytest
import torch

from howmany import copying
from howmany.copying import evaluation as copyeval
from howmany.copying import models as copymodels


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_batch_format_and_mask():
    inp, tgt, mask = copying.make_batch([3, 5], _gen())
    assert inp.shape == tgt.shape == mask.shape == (2, 2 * 5 + 2)
    seq = torch.cat([inp[:, :1], tgt], dim=1)  # the full padded sequences
    for row, n in zip(seq, [3, 5]):
        s = row[1 : n + 1]
        assert row[0] == copying.BOS and row[n + 1] == copying.SEP and row[2 * n + 2] == copying.EOS
        assert torch.equal(row[n + 2 : 2 * n + 2], s) and bool((s < copying.LETTERS).all())
        assert bool((row[2 * n + 3 :] == copying.PAD).all())
    # the loss sees exactly the copied letters and EOS, never the prompt or padding
    assert mask.sum(1).tolist() == [4, 6]
    assert bool((tgt[mask] != copying.PAD).all()) and bool((tgt[mask] != copying.SEP).all())
    assert torch.equal(tgt[0][mask[0]][-1], torch.tensor(copying.EOS))


def test_lengths_uniform_on_training_range():
    lengths = torch.tensor(copying.sample_lengths(20_000, 5, 50, _gen()))
    assert lengths.min() == 5 and lengths.max() == 50
    counts = torch.bincount(lengths - 5).float()
    assert len(counts) == 46 and bool((counts > 0).all())
    assert float(counts.std() / counts.mean()) < 0.1  # ~435 per length, sd ~21


def _smoke_model(arch):
    torch.manual_seed(0)
    return copymodels.build(copymodels.ModelConfig.smoke(arch)).eval()


@pytest.mark.parametrize("arch", copymodels.ARCHS)
def test_forward_shapes_and_causality(arch):
    model = _smoke_model(arch)
    x = torch.randint(0, 26, (3, 12))
    logits, _ = model(x)
    assert logits.shape == (3, 12, 30)
    y = x.clone()
    y[:, 7] = (y[:, 7] + 1) % 26  # change one token: earlier outputs must not move
    logits2, _ = model(y)
    assert torch.allclose(logits[:, :7], logits2[:, :7], atol=1e-5)
    assert not torch.allclose(logits[:, 7:], logits2[:, 7:], atol=1e-5)


@pytest.mark.parametrize("arch", copymodels.ARCHS)
def test_cached_decoding_matches_full_pass(arch):
    model = _smoke_model(arch)
    x = torch.randint(0, 26, (2, 10))
    full, _ = model(x)
    part, cache = model(x[:, :6])
    if arch != "lstm":
        cache = copymodels.reserve(cache, 4)
    steps = [part]
    for t in range(6, 10):
        out, cache = model(x[:, t : t + 1], cache)
        steps.append(out)
    assert torch.allclose(full, torch.cat(steps, dim=1), atol=1e-5)


def test_hard_alibi_heads_see_only_their_window():
    attn = copymodels.Attention(copymodels.ModelConfig(arch="hard_alibi", n_heads=4,
                                                       hard_windows=(2, 3, 0, 0)))
    bias = attn.bias(torch.arange(6), torch.arange(6))
    visible = torch.isfinite(bias).sum(-1)[:, -1].tolist()  # keys seen by the last query
    assert visible == [2, 3, 6, 6]


def test_wilson_interval():
    lo, hi = copyeval.wilson(50, 100)
    assert lo < 0.5 < hi and math.isclose(lo + hi, 1.0)
    assert copyeval.wilson(0, 100)[0] == 0.0 and math.isclose(copyeval.wilson(100, 100)[1], 1.0)


def test_fit_cliff_recovers_a_sigmoid():
    ns = torch.arange(5, 200, 5).double()
    acc = 1 / (1 + torch.exp((ns - 80) / 6))
    fit = copyeval.fit_cliff(ns.tolist(), acc.tolist())
    assert abs(fit["n50"] - 80) < 0.5 and abs(fit["width"] - 6) < 0.3 and fit["r2"] > 0.999


def test_tiny_model_learns_to_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    cfg = copying.config("smoke", "rope", stop_exact=0.0, ramp=0, min_len=3, max_len=3,
                         steps=200, lr=1e-2, batch_size=32)
    model, info = copying.train(cfg)
    assert (tmp_path / f"{cfg.key()}.pt").exists() and info["curve"][-1]["loss"] < 0.05
    rows = copyeval.evaluate(model, [3], 50)
    greedy = copyeval.evaluate(model, [3], 50, greedy=True)
    assert rows[0]["exact"] >= 0.95 and rows[0]["exact"] == greedy[0]["exact"]
    again, info2 = copying.train(cfg)  # resumes from the finished checkpoint: no new steps
    assert info2["curve"] == info["curve"]


def test_pretrained_wrapper_trains_and_decodes(tmp_path, monkeypatch):
    from howmany import models

    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    lm = models.tiny("llama", d_model=32, d_vocab=40, n_layers=1, device="cpu")
    model = copymodels.PretrainedCopier(lm, copying.SYMBOLS)
    cfg = copying.config("smoke", pretrained="tiny-test", min_len=2,
                                         max_len=3, steps=5)
    model, info = copying.train(cfg, model=model)
    logits, _ = model(torch.randint(0, 26, (2, 7)))
    assert logits.shape == (2, 7, len(copying.SYMBOLS)) and len(info["curve"]) == 1
    idx = torch.randint(0, 26, (2, 7))
    with torch.no_grad():  # the symbol-restricted head equals the full head read at the symbols
        full = lm.model(input_ids=model.ids[idx]).logits[..., model.ids]
        torch.testing.assert_close(model(idx)[0], full)
    rows = copyeval.evaluate(model, [3], 4)
    assert rows[0]["exact"] == copyeval.evaluate(model, [3], 4, greedy=True)[0]["exact"]
