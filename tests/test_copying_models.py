"""Tests for howmany.copying.models: the five copiers' shapes, causality, caches and masks."""

import pytest
import torch

from howmany.copying import models as copymodels


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
