"""Tests for howmany.copying.task: copy examples, training lengths and the length curriculum."""

import torch

from howmany import copying


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


def test_length_power_draws_lengths_in_proportion():
    lengths = torch.tensor(copying.sample_lengths(40_000, 5, 50, _gen(), power=1.0))
    assert lengths.min() == 5 and lengths.max() == 50
    counts = torch.bincount(lengths - 5, minlength=46).float()
    per_letter = counts / torch.arange(5, 51)  # P(n) ∝ n: flat after dividing by n
    assert 7 < float(counts[-5:].mean() / counts[:5].mean()) < 14  # ~ 48 / 7
    assert float(per_letter.std() / per_letter.mean()) < 0.15


def test_curriculum_opens_the_range_gradually():
    kw = dict(min_len=5, max_len=50, ramp=1000)
    his = [copying.curriculum_max(s, **kw) for s in range(0, 1200, 50)]
    assert his[0] == 10 and his[-1] == 50 and copying.curriculum_max(1000, **kw) == 50
    assert all(a <= b for a, b in zip(his, his[1:]))  # never shrinks
    assert copying.curriculum_max(0, min_len=5, max_len=50, ramp=0) == 50  # switched off
    assert copying.curriculum_max(0, min_len=5, max_len=50, ramp=10, start=20) == 20
    assert copying.curriculum_max(0, min_len=2, max_len=4, ramp=10) == 3
