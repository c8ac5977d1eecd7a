"""Tests for howmany.copying.mistakes: the kind of each failed copy's first wrong symbol."""

import pytest
import torch

from howmany import copying, results
from howmany.copying import mistakes
from howmany.copying.task import EOS


class Scripted(torch.nn.Module):
    """A copier that copies exactly, except that it writes the letter ``shift`` positions away
    at copy position ``at`` (``shift=None``: writes the end symbol there)."""

    def __init__(self, at: int, shift):
        super().__init__()
        self.at, self.shift = at, shift
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, idx):
        b, length = idx.shape
        n = (length - 2) // 2  # input is $ s | s (without the final end symbol)
        s = idx[:, 1:n + 1]
        nxt = torch.cat([s, torch.full((b, 1), EOS)], dim=1)  # what position n+1+j must write
        if self.at < n:
            nxt[:, self.at] = EOS if self.shift is None else s[:, self.at + self.shift]
        logits = torch.zeros(b, length, 30)
        logits[:, n + 1:].scatter_(2, nxt[:, :, None], 1.0)
        return logits, None


def test_kinds_are_told_apart():
    s = [0, 1, 2, 3]
    assert mistakes.kind(s, 1, 2) == "skip"
    assert mistakes.kind(s, 2, 1) == "repeat"
    assert mistakes.kind(s, 1, 3) == "elsewhere"
    assert mistakes.kind(s, 1, 9) == "absent"
    assert mistakes.kind(s, 1, EOS) == "end"  # stops early
    assert mistakes.kind(s, 4, 2) == "end"  # a letter where the end symbol belongs
    assert mistakes.kind(s, 3, 0) == "elsewhere"  # the last letter has nothing to skip to


def test_first_mistake_of_a_scripted_copier():
    strings = torch.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    assert mistakes.first_mistakes(Scripted(at=99, shift=1), strings) == [None, None]
    assert mistakes.first_mistakes(Scripted(at=2, shift=1), strings) == ["skip", "skip"]
    assert mistakes.first_mistakes(Scripted(at=2, shift=-1), strings) == ["repeat", "repeat"]
    assert mistakes.first_mistakes(Scripted(at=1, shift=None), strings) == ["end", "end"]


def test_tally_counts_every_failed_string_once():
    rows = mistakes.tally(Scripted(at=3, shift=1), [3, 5, 8], 20, batch_size=7)
    assert [r["n"] for r in rows] == [3, 5, 8]
    assert rows[0]["wrong"] == 0  # length 3: position 3 is past the letters
    for r in rows[1:]:
        assert r["wrong"] == sum(r[k] for k in mistakes.KINDS) == r["skip"]
        assert r["wrong"] >= 15  # the copy is right anyway where the two letters agree (1 in 26)


def _trained(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    cfg = copying.config("smoke", "lstm", stop_exact=0.0, ramp=0, min_len=2, max_len=6,
                         steps=60, lr=1e-2)
    copying.train(cfg)
    return {"cfg": cfg, "lr": cfg.lr, "label": "LSTM"}


def test_cached_tally_reads_the_checkpoint_and_is_heavy_outside_smoke(tmp_path, monkeypatch):
    run = _trained(tmp_path, monkeypatch)
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("HOWMANY_STORE", raising=False)
    with pytest.raises(results.MissingResultError):
        mistakes.cached(run, "default")
    rows = mistakes.cached(run, "smoke").result["rows"]
    assert [r["n"] for r in rows] == [5, 6]  # the examined lengths, clipped to the range
    assert all(r["strings"] == 100 for r in rows)
    assert mistakes.stored([run], "smoke") == {"LSTM": rows}
    missing = {**run, "cfg": copying.config("smoke", "lstm", seed=9), "label": "other"}
    assert mistakes.stored([missing], "smoke") == {}  # no checkpoint here: left out


def test_doctests():
    import doctest

    assert doctest.testmod(mistakes).failed == 0
