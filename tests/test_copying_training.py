"""Tests for howmany.copying.training and .experiments: curriculum training, early stopping,
weights-only checkpoints, the learning-rate sweep, and the per-profile runs."""

import pytest
import torch

from howmany import copying, results
from howmany.copying import evaluation as copyeval
from howmany.copying import models as copymodels


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



def test_curriculum_training_records_curves_and_stops_at_the_target(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    cfg = copying.config("smoke", "rope", min_len=2, max_len=4, steps=2000, lr=1e-2,
                         ramp=150, curve_every=50, curve_lengths=(2, 3, 4), curve_strings=30)
    model, info = copying.train(cfg)
    curve = info["curve"]
    his = [p["max_len"] for p in curve]
    assert his[0] < 4 and his == sorted(his)  # short strings first
    assert info["steps"] < cfg.steps and min(curve[-1]["exact"]) == 1.0  # stopped early
    state = torch.load(tmp_path / f"{cfg.key()}.pt", weights_only=True)  # plain tensors only
    assert state["step"] == info["steps"]
    rows = copyeval.evaluate(model, [2, 3, 4], 100)
    assert min(r["exact"] for r in rows) >= 0.95


def test_stricter_stop_rule_continues_from_the_laxer_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    lax = copying.config("smoke", "rope", min_len=2, max_len=4, steps=2000, lr=1e-2,
                         ramp=150, curve_every=50, curve_lengths=(2, 3, 4), curve_strings=30)
    from dataclasses import replace

    strict = replace(lax, stop_repeat=3)
    assert strict.key() == lax.key()  # where a run stops does not change its steps
    _, first = copying.train(lax)
    _, more = copying.train(strict)  # resumes at the lax stop and trains on
    assert more["curve"][: len(first["curve"])] == first["curve"]
    assert more["steps"] >= first["steps"] + 2 * lax.curve_every or more["steps"] == lax.steps
    tail = more["curve"][-3:]
    assert more["steps"] == lax.steps or all(min(p["exact"]) == 1.0 for p in tail)
    _, fresh = copying.train(strict, use_checkpoints=False)  # same run without the stop
    assert fresh["curve"] == more["curve"]


def test_lr_sweep_picks_the_lowest_final_loss(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    cfg = copying.config("smoke", "rope", min_len=2, max_len=3)
    sweep = copying.lr_sweep(cfg, (1e-4, 1e-2), 40)
    assert len(sweep["curves"]) == 2 and sweep["steps"] == 40
    assert sweep["best"] == 1e-2 and sweep["final_loss"][1] < sweep["final_loss"][0]


def test_profiles_default_reads_full_runs_and_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))
    monkeypatch.delenv("HOWMANY_STORE")
    full = copying.suite("default")
    assert [c.model.arch for c in full] == list(copying.ARCH_LABELS)
    assert all(c.max_len == 50 and c.stop_exact == 1.0 and 72 in c.eval_lengths for c in full)
    with pytest.raises(results.MissingResultError, match="make results"):
        copying.cached_run(full[0], "default")
    widths = copying.width_suite("full")
    for arch in copying.WIDTHS:
        assert len({c.model.d_model for c in widths if c.model.arch == arch}) >= 3


def test_smoke_run_evaluates_on_the_fine_grid(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    cfg = copying.config("smoke", "alibi", steps=60)
    rec = copying.cached_run(cfg, "smoke")
    ns = [r["n"] for r in rec.result["rows"]]
    assert ns == list(cfg.eval_lengths) and set(range(2, 17)) <= set(ns)
    assert rec.result["steps"] <= 60 and "n50" in rec.result["fit"]


def test_stored_short_finetune_is_found_by_its_config(monkeypatch):
    monkeypatch.delenv("HOWMANY_STORE")
    rec = copying.cached_finetune("default", "short")  # committed in data/copying/
    assert rec.loaded and rec.result["arch"] == "smollm2-135m" and len(rec.result["rows"]) == 12


def test_paper_protocol_finetune_runs_on_a_tiny_model(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    paper = copying.finetune_config("full", "paper")
    assert (paper.lr, paper.batch_size, paper.steps, paper.stop_exact) == (1e-5, 8, 10_000, 1.0)
    assert (paper.min_len, paper.max_len, max(paper.eval_lengths)) == (5, 50, 1000)
    rec = copying.cached_finetune("smoke", "paper")
    ft = rec.result
    assert ft["steps"] == 20 and len(ft["curve"]) == 2 and [r["n"] for r in ft["rows"]] == [2, 8]
    again = copying.cached_finetune("smoke", "paper")  # the stored result is read back
    assert again.loaded and again.result["rows"] == ft["rows"]


def test_continuation_starts_where_its_parent_stopped(tmp_path, monkeypatch):
    from dataclasses import replace

    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path))
    parent = copying.config("smoke", "rope", stop_exact=0.0, ramp=0, min_len=3, max_len=3,
                            steps=200, lr=1e-2, batch_size=32, curve_every=50)
    assert "init_from" not in parent.fields()  # keys of runs without a parent are unchanged
    _, first = copying.train(parent)
    cont = replace(parent, init_from=parent.key(), steps=50, lr=1e-6, warmup=1)
    assert cont.key() != parent.key() and cont.fields()["init_from"] == parent.key()
    _, more = copying.train(cont)
    assert more["init_steps"] == 200 and more["init_curve"] == first["curve"]
    assert more["steps"] == 50 and more["curve"][-1]["step"] == 50
    fresh = replace(cont, init_from="")  # the same 50 steps from a random start
    _, cold = copying.train(fresh, use_checkpoints=False)
    assert more["curve"][0]["loss"] < 0.5 * cold["curve"][0]["loss"]
    assert abs(more["curve"][0]["loss"] - first["curve"][-1]["loss"]) < 0.1
    with pytest.raises(FileNotFoundError, match="train that run first"):
        copying.train(replace(parent, init_from="rope-00000000"))
