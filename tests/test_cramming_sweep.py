"""Resumable sweeps, summaries of partial sweeps, target strings, the tiny scaling experiment."""

import json

import pytest
import torch

from howmany import cramming, results
from howmany.paths import data_dir

CFG = cramming.sweep.SweepConfig(model="tiny-llama-d32-v64-l2", kind="random-tokens", ms=(1, 2),
                             n_strings=3, n_max_base=2, n_max_per_m=2, methods=("grow",),
                             batch_size=2, cram=cramming.CramConfig(max_steps=40, patience=20))


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return cramming.scaling.tiny_lm(d_model=32, d_vocab=64)


def test_killed_sweep_resumes_without_recomputing(lm, tmp_path, monkeypatch):
    calls, kill = [], [True]
    real = cramming.THRESHOLD_METHODS["grow"]

    def counting(*a, **k):
        calls.append(len(a[2]))
        if kill[0] and len(calls) == 3:
            raise KeyboardInterrupt  # simulated kill in the third batch
        return real(*a, **k)

    monkeypatch.setitem(cramming.THRESHOLD_METHODS, "grow", counting)
    folder = cramming.sweep.sweep_dir(CFG, tmp_path)
    with pytest.raises(KeyboardInterrupt):
        cramming.sweep.run_sweep(lm, CFG, folder)
    done = sorted(p.name for p in folder.glob("m*.json"))
    assert done == ["m1-grow-s000.json", "m1-grow-s001.json", "m2-grow-s000.json",
                    "m2-grow-s001.json"]
    before = {p: p.stat().st_mtime_ns for p in folder.glob("m*.json")}
    calls.clear()
    kill[0] = False
    cramming.sweep.run_sweep(lm, CFG, folder)
    assert calls == [1, 1]  # only string 2, for m = 1 and m = 2
    assert all(p.stat().st_mtime_ns == t for p, t in before.items())
    sweep = cramming.store.load_sweep(folder)
    summary = cramming.store.summarise(sweep, n_boot=20)
    for m in (1, 2):  # counts recomputed from the unit files, not from the summary itself
        rows = [json.loads(p.read_text())["result"] for p in sorted(folder.glob(f"m{m}-grow-*.json"))]
        assert summary["counts"][m] == {"done": 3, "nan": sum(r["status"] == "nan" for r in rows),
                                        "censored": sum(bool(r["censored"]) for r in rows
                                                        if r["status"] != "nan")}
    assert summary["fit"] is not None and len(summary["n50"]) == 2


def test_part_of_a_sweep_runs_in_its_folder_with_another_batch(lm, tmp_path, monkeypatch):
    calls = []
    real = cramming.THRESHOLD_METHODS["grow"]
    monkeypatch.setitem(cramming.THRESHOLD_METHODS, "grow",
                        lambda *a, **k: calls.append((a[3], len(a[2]))) or real(*a, **k))
    folder = cramming.sweep.sweep_dir(CFG, tmp_path)
    cramming.sweep.run_sweep(lm, CFG, folder, only_ms=(2,), batch_size=3)
    assert calls == [(2, 3)]  # only m = 2, all three strings in one batch of 3
    assert sorted(p.name for p in folder.glob("m*.json")) == [f"m2-grow-s00{i}.json" for i in range(3)]
    head = cramming.store.load_sweep(folder)
    assert cramming.sweep.SweepConfig.from_dict(head["config"]) == CFG  # the sweep is unchanged
    assert {json.loads(p.read_text())["config"]["batch"] for p in folder.glob("m2*.json")} == {3}
    calls.clear()
    cramming.sweep.run_sweep(lm, CFG, folder)  # the whole sweep then skips what is done
    assert calls == [(1, 2), (1, 1)]
    with pytest.raises(ValueError, match="not part"):
        cramming.sweep.run_sweep(lm, CFG, folder, only_ms=(5,))
    with pytest.raises(ValueError, match="positive"):
        cramming.sweep.run_sweep(lm, CFG, folder, batch_size=0)


def test_find_sweeps_missing_names_make_results(tmp_path):
    with pytest.raises(results.MissingResultError, match="make results"):
        cramming.store.find_sweeps("smollm2-135m", root=tmp_path)


def test_config_round_trip():
    assert cramming.sweep.SweepConfig.from_dict(results.to_jsonable(CFG)) == CFG


def test_targets_are_reproducible_and_checked():
    a = cramming.targets.make_targets("random-tokens", 3, 5, seed=1, d_vocab=50)
    b = cramming.targets.make_targets("random-tokens", 5, 5, seed=1, d_vocab=50)
    assert a.shape == (3, 5) and (a == b[:3]).all() and a.max() < 50
    with pytest.raises(cramming.targets.TargetError, match="unknown target kind"):
        cramming.targets.make_targets("poems", 1, 4, seed=0, d_vocab=50)
    with pytest.raises(cramming.targets.TargetError, match="positive"):
        cramming.targets.make_targets("random-tokens", 1, 0, seed=0, d_vocab=50)
    with pytest.raises(cramming.targets.TargetError, match="tokenizer"):
        cramming.targets.make_targets("random-words", 1, 4, seed=0, d_vocab=50)


def test_offline_english_corpus_and_word_list():
    words = cramming.targets.word_list()
    assert len(words) > 2000 and all(w.isalpha() and w.islower() for w in words[:100])
    assert "the" in cramming.targets.english_corpus().split()


def test_scaling_grid_is_a_cross_and_proportionality_fit():
    grid = cramming.scaling.ScalingConfig().grid()
    assert (32, 64) in grid and len(grid) == 5
    fits = [{"d_over_lnV": x, "slope": 2 * x} for x in (1.0, 2.0, 4.0)]
    assert cramming.scaling.proportionality(fits) == pytest.approx({"k": 2.0, "r2": 1.0})


def test_default_profile_reads_partial_sweeps_and_refuses_empty_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))
    cfg = cramming.sweep.SweepConfig(model="smollm2-135m", ms=(1, 2), n_strings=4)
    folder = cramming.sweep.sweep_dir(cfg, tmp_path)
    results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance": {}})
    with pytest.raises(results.MissingResultError, match="no finished string"):
        cramming.store.book_sweeps("default")
    unit = {"config": {"m": 1, "method": "grow", "string": 0, "n_max": cfg.n_max(1)},
            "provenance": {"wall_time_s": 1.0},
            "result": {"threshold": 7, "censored": False, "status": "ok", "steps": 10}}
    results.atomic_write_json(folder / "m1-grow-s000.json", unit)
    sweeps = cramming.store.book_sweeps("default")
    summary = cramming.store.summarise(sweeps["smollm2-135m"], method="grow", n_boot=10)
    assert summary["counts"] == {1: {"done": 1, "nan": 0, "censored": 0}} and summary["fit"] is None


def test_default_profile_leaves_the_recipe_sweeps_to_their_own_sections(tmp_path, monkeypatch):
    """A larger sweep that ran a named recipe (the book's, the paper's) never stands in for the
    chapter's sweep with settings by hand."""
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))
    mine = cramming.sweep.SweepConfig(model="smollm2-135m", ms=(1,), n_strings=4)
    recipe = cramming.sweep.SweepConfig.for_recipe("smollm2-135m", cramming.recipes.get("book"),
                                                   ms=(1,), n_strings=4)
    for cfg, k in ((mine, 1), (recipe, 3)):
        folder = cramming.sweep.sweep_dir(cfg, tmp_path)
        meth = cfg.methods[0]
        results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance": {}})
        for i in range(k):
            results.atomic_write_json(folder / f"m1-{meth}-s{i:03d}.json", {
                "config": {"m": 1, "method": meth, "string": i, "n_max": cfg.n_max(1)},
                "provenance": {"wall_time_s": 1.0},
                "result": {"threshold": 7, "censored": False, "status": "ok", "steps": 10}})
    got = cramming.store.book_sweeps("default")["smollm2-135m"]
    assert got["folder"] == str(cramming.sweep.sweep_dir(mine, tmp_path))
    assert got["folders"] == [got["folder"]]
    mine_dir = cramming.sweep.sweep_dir(mine, tmp_path)
    for f in mine_dir.iterdir():
        f.unlink()
    mine_dir.rmdir()
    with pytest.raises(results.MissingResultError, match="ran a named recipe"):
        cramming.store.book_sweeps("default")


def test_committed_sweeps_match_their_folder_and_make_results_resumes_them():
    """Every committed sweep's config hashes to its folder name, and the full profile's config is
    one of them for each book model, so ``make results`` resumes instead of starting afresh."""
    folders = sorted((data_dir() / "cramming").glob("sweep-*/sweep.json"))
    assert folders, "no committed sweep"
    for head in folders:
        cfg = cramming.sweep.SweepConfig.from_dict(json.loads(head.read_text())["config"])
        assert cramming.sweep.sweep_dir(cfg, data_dir().parent).name == head.parent.name
    names = {p.parent.name for p in folders}
    for model in cramming.store.BOOK_MODELS:
        assert cramming.sweep.sweep_dir(cramming.store.book_config(model, "full"), data_dir().parent).name in names


def _fake_sweep(folder, ms, kind="random-words", max_steps=300, rows=()):
    cfg = cramming.sweep.SweepConfig(model="smollm2-135m", kind=kind, ms=ms, n_strings=2,
                                 cram=cramming.CramConfig(max_steps=max_steps))
    units = {}
    for m, i, thr, tokens in rows:
        units.setdefault(m, []).append({"string": i, "threshold": thr, "target": tokens,
                                        "status": "ok", "censored": False})
    return {"config": results.to_jsonable(cfg), "provenance": {}, "units": {"grow": units},
            "folder": str(folder)}


def test_merge_joins_an_extension_and_refuses_other_strings_or_protocols():
    base = _fake_sweep("a", [1, 2], rows=[(1, 0, 5, [7, 8]), (2, 0, 9, [7, 8, 9]), (1, 1, 4, [3, 4])])
    ext = _fake_sweep("b", [1, 2, 3], rows=[(3, 0, 12, [7, 8, 9, 10]), (1, 0, 99, [7, 8])])
    other = _fake_sweep("c", [1], max_steps=50, rows=[(1, 0, 1, [1, 2])])
    merged = cramming.store.merge_sweeps([base, ext, other])
    assert merged["folders"] == ["a", "b"] and merged["skipped"] == ["c"]
    assert merged["config"]["ms"] == [1, 2, 3]
    assert [r["threshold"] for r in merged["units"]["grow"][1]] == [5, 4]  # base wins on overlap
    assert [r["threshold"] for r in merged["units"]["grow"][3]] == [12]
    summary = cramming.store.summarise(merged, n_boot=10)
    assert {r["m"] for r in summary["n50"]} == {1, 2, 3}
    few = cramming.store.summarise(merged, n_boot=10, min_strings=2)  # m = 2, 3 hold one string
    assert [r["m"] for r in few["n50"]] == [1] and few["fit"] is None
    assert few["counts"][3] == {"done": 1, "nan": 0, "censored": 0}
    clash = _fake_sweep("d", [3], rows=[(3, 1, 2, [3, 5, 6])])  # string 1 starts 3, 4 in `base`
    with pytest.raises(ValueError, match="string 1 has different tokens"):
        cramming.store.merge_sweeps([base, clash])
    with pytest.raises(ValueError, match="at least one"):
        cramming.store.merge_sweeps([])


def test_a_sweep_with_no_finished_string_summarises_to_empty_counts(tmp_path):
    # a process whose batches of this sweep were all claimed by others reaches its summary first
    cfg = cramming.sweep.SweepConfig(model="smollm2-135m", kind="random-words", ms=(1, 2), n_strings=2)
    folder = cramming.sweep.sweep_dir(cfg, tmp_path)
    results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance": {}})
    summary = cramming.store.summarise(cramming.store.load_sweep(folder), n_boot=10)
    assert summary["counts"] == {} and summary["n50"] == [] and summary["fit"] is None
