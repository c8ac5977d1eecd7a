"""Resumable cramming: a killed run resumed from its snapshot, and a recipe that goes on from
another recipe's stored run, both give exactly the rows of one uninterrupted run."""

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from howmany import cramming
from howmany.cramming import recipes, resume

# Progressive-like growth that stalls on the tiny model within a few hundred steps
BASE = cramming.CramConfig(lr=0.1, init="fixed", init_scale=0.02, schedule="cosine", warmup=5,
                           max_steps=25, patience=25, string_steps=400)
WITH_RESTART = replace(BASE, restarts=1, cold_steps=60)


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return cramming.scaling.tiny_lm(d_model=32, d_vocab=64, seed=0)


@pytest.fixture(scope="module")
def strings():
    return np.random.default_rng(11).integers(2, 64, size=(3, 16))


def _same(a: dict, b: dict) -> None:
    for k in ("threshold", "censored", "steps", "status", "history", "restarts"):
        assert a[k] == b[k], k


class Killed(Exception):
    pass


def test_a_killed_run_resumes_from_its_snapshot_exactly(lm, strings):
    whole = cramming.thresholds_grow(lm.model, lm.bos_id, strings, 1, WITH_RESTART,
                                     seeds=[1, 2, 3])
    snaps = []

    def kill(step, info):
        if step == 40:
            raise Killed

    with pytest.raises(Killed):
        cramming.cram(lm.model, lm.bos_id, strings, 1, WITH_RESTART, seeds=[1, 2, 3], grow=True,
                      callback=kill, snapshot=snaps.append, snapshot_s=0.0)
    assert len(snaps) == 39  # one per finished step (the killed step wrote none)
    resumed = cramming.thresholds_grow(lm.model, lm.bos_id, strings, 1, WITH_RESTART,
                                       seeds=[1, 2, 3], resume=snaps[-1])
    for a, b in zip(whole, resumed):
        _same(a, b)


def test_a_recipe_with_restarts_goes_on_from_its_base_recipes_stored_run(lm, strings):
    for i in range(len(strings)):  # alone, as the sweeps run them (--run-batch 1)
        row = strings[i:i + 1]
        whole = cramming.thresholds_grow(lm.model, lm.bos_id, row, 1, WITH_RESTART, seeds=[i])[0]
        base = cramming.thresholds_grow(lm.model, lm.bos_id, row, 1, BASE, seeds=[i])[0]
        state = resume.continuation(base, lm.model, 1, WITH_RESTART, i)
        went_on = cramming.thresholds_grow(lm.model, lm.bos_id, row, 1, WITH_RESTART, seeds=[i],
                                           resume=[state])[0]
        _same(whole, went_on)
        assert whole["restarts"] or whole["censored"]  # the test exercises the restart
        assert whole["steps"] > base["steps"] or not whole["restarts"]


def test_continues_only_where_the_recipes_agree_up_to_the_first_restart():
    book, prog = recipes.get("book"), recipes.get("progressive")
    assert resume.continues(book, prog)
    assert resume.continues(recipes.get("book@x0.5"), recipes.get("progressive@x0.5"))
    assert not resume.continues(book, recipes.get("progressive@x2"))
    assert not resume.continues(recipes.get("budget-limited"), prog)
    assert not resume.continues(prog, book)  # the base must not restart itself


def test_a_sweep_continues_stored_base_units_and_snapshots_go_away(lm, tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_PARTIAL", str(tmp_path / "partial"))
    monkeypatch.setattr(cramming.sweep, "sweep_targets",
                        lambda cfg, lm_: np.random.default_rng(3).integers(2, 64, size=(2, 12)))
    common = dict(kind="random-tokens", ms=(1,), n_strings=2, n_max_base=0, n_max_per_m=12,
                  batch_size=1)
    scale = "@x0.025"  # book: 25 steps a length, 250 a string, a 25-step cold restart
    cfgs = {name: cramming.sweep.SweepConfig.for_recipe("tiny", recipes.get(name + scale),
                                                        **common)
            for name in ("progressive", "book")}
    folders = {k: cramming.sweep.sweep_dir(c, tmp_path) for k, c in cfgs.items()}
    cramming.sweep.run_sweep(lm, cfgs["progressive"], folders["progressive"])
    calls = []
    real = cramming.THRESHOLD_METHODS["grow"]
    monkeypatch.setitem(cramming.THRESHOLD_METHODS, "grow",
                        lambda *a, **k: calls.append(k["resume"]) or real(*a, **k))
    held = folders["progressive"] / "m1-grow-s001.json"
    kept = held.read_bytes()
    held.unlink()  # string 1's progressive run is not stored yet: left for a later run
    cramming.sweep.run_sweep(lm, cfgs["book"], folders["book"], continued_only=True)
    assert sorted(p.name for p in folders["book"].glob("m1-*.json")) == ["m1-grow-s000.json"]
    held.write_bytes(kept)
    cramming.sweep.run_sweep(lm, cfgs["book"], folders["book"])
    assert len(calls) == 2
    assert all(c is not None and c[0] is not None for c in calls)  # went on, not from scratch
    units = cramming.store.load_sweep(folders["book"])["units"]["grow"][1]
    for u in units:
        src = u["continued_from"]
        base = json.loads((folders["progressive"] / src["file"]).read_text())
        assert src["folder"] == folders["progressive"].name
        assert u["history"][:len(base["result"]["history"])] == base["result"]["history"]
        assert u["threshold"] >= base["result"]["threshold"]
        assert u["wall_s"] >= base["provenance"]["wall_time_s"]
    assert not any((tmp_path / "partial").rglob("*.pt"))
    # and the rows equal a book sweep run from scratch (no progressive folder beside it)
    alone = cramming.sweep.sweep_dir(cfgs["book"], tmp_path / "alone")
    cramming.sweep.run_sweep(lm, cfgs["book"], alone)
    scratch = cramming.store.load_sweep(alone)["units"]["grow"][1]
    for a, b in zip(sorted(units, key=lambda r: r["string"]),
                    sorted(scratch, key=lambda r: r["string"])):
        _same(a, b)


def _uninterrupted(lm, tmp_path, monkeypatch, recipe):
    """A two-string tiny sweep of ``recipe`` that snapshots every step, run once whole:
    (config, threshold method, its folder)."""
    monkeypatch.setenv("HOWMANY_PARTIAL", str(tmp_path / "partial"))
    monkeypatch.setattr(cramming.sweep, "SNAPSHOT_S", 0.0)  # a snapshot after every step
    monkeypatch.setattr(cramming.sweep, "sweep_targets",
                        lambda cfg, lm_: np.random.default_rng(4).integers(2, 64, size=(2, 12)))
    cfg = cramming.sweep.SweepConfig.for_recipe(
        "tiny", recipes.get(recipe), kind="random-tokens", ms=(1,), n_strings=2,
        n_max_base=0, n_max_per_m=12, batch_size=2)
    meth = recipes.get(recipe).method
    whole = cramming.sweep.sweep_dir(cfg, tmp_path / "whole")
    cramming.sweep.run_sweep(lm, cfg, whole)
    return cfg, meth, whole


@pytest.mark.parametrize("recipe", ["book@x0.025", "paper@x0.02"])  # grow; a cold-start grid
def test_a_killed_sweep_unit_resumes_from_its_snapshot_file(lm, tmp_path, monkeypatch, recipe):
    cfg, meth, whole = _uninterrupted(lm, tmp_path, monkeypatch, recipe)
    folder = cramming.sweep.sweep_dir(cfg, tmp_path / "killed")
    real, saves = resume.save, []

    def killing(path, states, meta, **kw):
        real(path, states, meta, **kw)
        saves.append((path, kw["wall_s"]))
        if len(saves) == 30:
            raise KeyboardInterrupt  # killed after its 30th step

    monkeypatch.setattr(resume, "save", killing)
    with pytest.raises(KeyboardInterrupt):
        cramming.sweep.run_sweep(lm, cfg, folder)
    killed_at, killed_wall = saves[29]
    assert killed_at.is_file() and not any(folder.glob("m1-*.json"))
    assert resume.spent(killed_at) == pytest.approx(killed_wall) and killed_wall > 0
    calls = []
    search = cramming.THRESHOLD_METHODS[meth]
    monkeypatch.setitem(cramming.THRESHOLD_METHODS, meth,
                        lambda *a, **k: calls.append(k["resume"]) or search(*a, **k))
    cramming.sweep.run_sweep(lm, cfg, folder)
    assert calls[0] is not None  # read back from the file
    if meth == "grow":
        assert calls[0][0]["out"]["steps"] == 30
    else:  # a journal: finished rounds and the states of the round in flight
        assert calls[0]["rounds"] or calls[0]["inflight"]
    assert not killed_at.exists()  # deleted once the unit is written
    for a, b in zip(*(cramming.store.load_sweep(f)["units"][meth][1] for f in (whole, folder))):
        _same(a, b)
        assert a.get("solved") == b.get("solved")
    unit = json.loads(next(folder.glob("m1-*.json")).read_text())
    assert unit["provenance"]["wall_time_s"] >= killed_wall  # the killed process's time counts
    assert "wall_is_partial" not in unit["result"]


@pytest.mark.parametrize("recipe", ["paper@x0.02", "book@x0.025"])  # a journal; warm states
def test_a_unit_whose_snapshot_is_lost_goes_on_from_its_copy_in_the_folder(lm, tmp_path,
                                                                          monkeypatch, recipe):
    cfg, meth, whole = _uninterrupted(lm, tmp_path, monkeypatch, recipe)
    folder = cramming.sweep.sweep_dir(cfg, tmp_path / "moved")
    real, kept_walls = resume.keep, []

    def killing(path, snap, meta, **kw):
        real(path, snap, meta, **kw)
        kept_walls.append(kw["wall_s"])
        if len(kept_walls) == 40:
            raise KeyboardInterrupt  # the machine goes away after 40 steps

    monkeypatch.setattr(resume, "keep", killing)
    with pytest.raises(KeyboardInterrupt):
        cramming.sweep.run_sweep(lm, cfg, folder)
    monkeypatch.setattr(resume, "keep", real)
    kept = list((folder / cramming.sweep.INFLIGHT_DIR).glob("*.json"))
    assert len(kept) == 1 and not any(folder.glob("m1-*.json"))
    rec = json.loads(kept[0].read_text())
    assert rec["provenance"]["wall_time_s"] == pytest.approx(kept_walls[-1])
    for snap in (tmp_path / "partial").rglob("*.pt"):
        snap.unlink()  # a fresh machine: only the repository came along
    rec["meta"]["seeds"] = [0, 0]  # a record of another run is not resumed from
    other = tmp_path / "other.json"
    other.write_text(json.dumps(rec))
    assert resume.load_kept(other, json.loads(kept[0].read_text())["meta"]) == (None, 0.0)
    calls = []
    search = cramming.THRESHOLD_METHODS[meth]
    monkeypatch.setitem(cramming.THRESHOLD_METHODS, meth,
                        lambda *a, **k: calls.append(k["resume"]) or search(*a, **k))
    cramming.sweep.run_sweep(lm, cfg, folder)
    if meth == "grow":
        assert calls[0][0]["out"]["steps"] == 40 and isinstance(calls[0][0]["p"], torch.Tensor)
    else:
        assert calls[0]["rounds"] or calls[0]["inflight"]
    assert not (folder / cramming.sweep.INFLIGHT_DIR).exists()  # gone once the unit is written
    for a, b in zip(*(cramming.store.load_sweep(f)["units"][meth][1] for f in (whole, folder))):
        _same(a, b)
        assert a.get("solved") == b.get("solved")
    unit = json.loads(next(folder.glob("m1-*.json")).read_text())
    assert unit["provenance"]["wall_time_s"] >= kept_walls[-1]  # the lost process's time counts


def test_a_kept_snapshot_is_exact_and_a_large_one_keeps_only_finished_rounds(tmp_path,
                                                                           monkeypatch):
    t = torch.randn(2, 8) * 1e-30
    snap = {"rounds": [[{"status": "failed", "steps": 3}]],
            "inflight": [{"p": t, "out": {"prompt": None, "loss": None}, "best": float("inf")}]}
    assert resume.keep(tmp_path / "k.json", snap, {"a": 1}, wall_s=2.0, provenance={})
    back, wall = resume.load_kept(tmp_path / "k.json", {"a": 1})
    assert wall == 2.0 and torch.equal(back["inflight"][0]["p"], t)
    assert back["inflight"][0]["best"] == float("inf") and back["rounds"] == snap["rounds"]
    monkeypatch.setattr(resume, "KEEP_MAX", 10)
    assert resume.keep(tmp_path / "k.json", snap, {"a": 1}, wall_s=3.0, provenance={})
    assert resume.load_kept(tmp_path / "k.json", {"a": 1})[0] == {"rounds": snap["rounds"],
                                                                 "inflight": None}
    assert not resume.keep(tmp_path / "w.json", snap["inflight"], {}, wall_s=1.0, provenance={})


def test_a_snapshot_without_its_time_marks_the_wall_time_partial(tmp_path):
    old = tmp_path / "old.pt"
    torch.save({"meta": {}, "states": []}, old)  # as snapshots were written before
    assert resume.spent(old) is None and resume.spent(tmp_path / "none.pt") == 0.0
    resume.save(tmp_path / "new.pt", [], {}, wall_s=12.5)
    assert resume.spent(tmp_path / "new.pt") == 12.5


COLD = cramming.CramConfig(lr=0.3, max_steps=60, patience=60)  # cold starts reach 0 to 2 tokens


@pytest.mark.parametrize("method", ["grid", "bisect"])
def test_a_killed_cold_start_search_resumes_from_its_journal_exactly(lm, strings, method,
                                                                     monkeypatch):
    search = cramming.THRESHOLD_METHODS[method]
    kw = dict(grid=[2, 4, 6, 8], stop=2) if method == "grid" else dict(n_max=12)
    calls, real = [], cramming.thresholds.cram
    monkeypatch.setattr(cramming.thresholds, "cram",
                        lambda *a, **k: calls.append(k["resume"]) or real(*a, **k))
    whole = search(lm.model, lm.bos_id, strings, 1, COLD, seeds=[1, 2, 3], **kw)
    n_rounds, journals = len(calls), []

    def keep(journal):
        journals.append(journal)
        if len(journals) == 75:  # in the second round
            raise Killed

    with pytest.raises(Killed):
        search(lm.model, lm.bos_id, strings, 1, COLD, seeds=[1, 2, 3], snapshot=keep,
               snapshot_s=0.0, **kw)
    last = journals[-2]  # the last one written before the kill
    assert last["rounds"] and last["inflight"] is not None
    calls.clear()
    resumed = search(lm.model, lm.bos_id, strings, 1, COLD, seeds=[1, 2, 3], resume=last, **kw)
    assert len(calls) == n_rounds - len(last["rounds"])  # finished rounds are not rerun
    assert calls[0] is last["inflight"]  # and the round in flight goes on from its states
    for a, b in zip(whole, resumed):
        _same(a, b)
        assert a.get("solved") == b.get("solved")
    assert any(r["threshold"] > 0 for r in whole) and any(not r["censored"] for r in whole)
