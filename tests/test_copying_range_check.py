"""Tests for howmany.copying.range_check: every training length, many fresh strings, from the
checkpoint of a trained copier, never training one."""

from dataclasses import replace

import pytest

from howmany import copying, results
from howmany.copying import range_check


def _trained(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    cfg = copying.config("smoke", "rope", stop_exact=0.0, ramp=0, min_len=2, max_len=4,
                         steps=150, lr=1e-2)
    copying.train(cfg)
    return {"cfg": cfg, "lr": cfg.lr}


def test_check_copies_every_training_length_with_fresh_strings(tmp_path, monkeypatch):
    run = _trained(tmp_path, monkeypatch)
    out = range_check.check(run["cfg"], 40)
    assert [r["n"] for r in out["rows"]] == [2, 3, 4]
    assert all(r["strings"] == 40 for r in out["rows"])
    assert out["worst"]["exact"] == min(r["exact"] for r in out["rows"])
    again = range_check.check(run["cfg"], 40)  # loads the checkpoint: no training in between
    assert again["rows"] == out["rows"]
    assert range_check.at_least(out["rows"], out["worst"]["exact"])
    assert not range_check.at_least(out["rows"], out["worst"]["exact"] + 1e-9)


def test_check_never_trains_a_missing_copier(tmp_path, monkeypatch):
    run = _trained(tmp_path, monkeypatch)
    with pytest.raises(FileNotFoundError, match="train the run first"):
        range_check.check(replace(run["cfg"], seed=7))


def test_cached_check_is_heavy_outside_smoke(tmp_path, monkeypatch):
    run = _trained(tmp_path, monkeypatch)
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("HOWMANY_STORE", raising=False)
    with pytest.raises(results.MissingResultError):
        range_check.cached_check(run, "default")
    rec = range_check.cached_check(run, "smoke")
    assert [r["strings"] for r in rec.result["rows"]] == [50, 50, 50]
