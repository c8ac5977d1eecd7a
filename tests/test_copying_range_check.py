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


def test_merged_reads_the_training_range_from_the_check_and_the_rest_from_the_evaluation():
    evaluation = [{"n": n, "exact": e} for n, e in [(4, 0.98), (2, 1.0), (6, 0.5), (3, 0.97)]]
    check = [{"n": n, "exact": e} for n, e in [(2, 0.999), (3, 0.995), (4, 0.993)]]
    rows = range_check.merged(evaluation, check)
    assert [(r["n"], r["exact"]) for r in rows] == [(2, 0.999), (3, 0.995), (4, 0.993), (6, 0.5)]
    # 98 of 100 below 0.99 at n = 3 and 4 in the evaluation; the larger check puts it above
    summary = copying.summary({"rows": rows, "arch": "x", "fit": {"n50": 5.0, "width": 1.0,
                                                                  "r2": 1.0}}, train_max=4)
    assert summary["last n ≥ 99 %"] == 4
    assert range_check.merged(evaluation, []) == sorted(evaluation, key=lambda r: r["n"])
