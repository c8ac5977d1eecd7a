"""Recipes, cold restarts and budget curves of howmany.cramming (tiny LeCun model)."""

import dataclasses

import numpy as np
import pytest

from howmany import cramming
from howmany.cramming import budget, recipes


@pytest.fixture(scope="module")
def lm():
    return cramming.scaling.tiny_lm(d_model=32, d_vocab=64, seed=0)


@pytest.fixture(scope="module")
def strings():
    return np.random.default_rng(5).integers(2, 64, size=(3, 8))


STALL = cramming.CramConfig(max_steps=8, patience=4)  # warm growth that stalls at once


def test_a_stalled_curriculum_gets_cold_restarts_and_no_crammable_string_reads_zero(lm, strings):
    stalled = cramming.thresholds_grow(lm.model, lm.bos_id, strings, 1, STALL, seeds=range(3))
    assert [r["threshold"] for r in stalled] == [0, 0, 0]
    cold = cramming.thresholds_bisect(lm.model, lm.bos_id, strings, 1,
                                      cramming.CramConfig(max_steps=150, patience=50),
                                      seeds=range(3))
    cfg = cramming.CramConfig(max_steps=8, patience=4, restarts=1, cold_steps=150)
    fixed = cramming.thresholds_grow(lm.model, lm.bos_id, strings, 1, cfg, seeds=range(3))
    for c, f in zip(cold, fixed):
        assert f["restarts"], "a stalled string must get a cold restart"
        if c["threshold"] > 0:  # crammable from cold: the threshold is no longer zero
            assert f["threshold"] > 0


def test_no_threshold_below_a_cold_start_at_the_next_length(lm, strings):
    """Every stored threshold t: a cold start of the same recipe at t + 1 (its restart seed)
    fails. Each string runs alone so the restart is bit-for-bit the cold run checked here."""
    cfg = cramming.CramConfig(max_steps=8, patience=4, restarts=1, cold_steps=150)
    for i in range(len(strings)):
        r = cramming.thresholds_grow(lm.model, lm.bos_id, strings[i:i + 1], 1, cfg, seeds=[i])[0]
        if r["censored"]:
            continue
        last_step, length = r["restarts"][-1]
        assert length == r["threshold"] + 1
        k = len(r["restarts"])
        cold = cramming.CramConfig(max_steps=150, patience=4)
        res = cramming.cram(lm.model, lm.bos_id, strings[i:i + 1], 1, cold, lengths=[length],
                            seeds=[i + 104_729 * k])[0]
        assert res["status"] == "failed"


def test_history_is_a_budget_curve_and_threshold_at_reads_it(lm, strings):
    cfg = cramming.CramConfig(max_steps=100, patience=50)
    rows = cramming.thresholds_grow(lm.model, lm.bos_id, strings, 1, cfg, seeds=range(3))
    for r in rows:
        steps = [s for s, _ in r["history"]]
        assert steps == sorted(steps) and all(s <= r["steps"] for s in steps)
        assert cramming.threshold_at(r["history"], r["steps"]) == r["threshold"]
        assert cramming.threshold_at(r["history"], 0) == 0
    med = budget.curve(rows, [1, 10, 10_000])
    assert list(med) == sorted(med) and med[-1] == np.median([r["threshold"] for r in rows])


def test_budget_ended_names_the_strings_stopped_by_their_step_budget(lm, strings):
    tight = cramming.CramConfig(max_steps=100, patience=50, string_steps=12)
    rows = cramming.thresholds_grow(lm.model, lm.bos_id, strings, 1, tight, seeds=range(3))
    ended = cramming.thresholds.budget_ended(rows, tight.string_steps)
    assert ended == [r for r in rows if not r["censored"]] and all(r["steps"] == 12 for r in ended)
    assert cramming.thresholds.budget_ended(rows, 0) == []
    own_rule = cramming.thresholds_grow(lm.model, lm.bos_id, strings, 1, STALL, seeds=range(3))
    assert cramming.thresholds.budget_ended(own_rule, 10_000) == []  # stalled long before


def test_a_median_is_a_lower_bound_when_a_lower_bound_sits_at_or_below_it():
    med = cramming.thresholds.median_unaffected
    assert med([87, 102, 112], [False, False, True])  # only the top one may rise
    assert not med([87, 102, 112], [False, True, True])  # the middle one may rise too
    assert med([1, 2, 3, 4, 9, 9], [False] * 4 + [True] * 2)
    assert not med([1, 2, 3, 4, 9, 9], [False] * 3 + [True] * 3)  # an even median's upper middle


def test_every_preset_runs_on_a_tiny_model(lm, strings):
    for name in recipes.PRESETS:
        rec = recipes.get(name).scaled(0.01)
        if rec.method == "grid":
            rec = dataclasses.replace(rec, grid_step=2)
        rows = recipes.run(rec, lm.model, lm.bos_id, strings[:2], 1, seeds=[0, 1], n_max=6)
        assert len(rows) == 2 and all(r["method"] == rec.method for r in rows)
        assert all(0 <= r["threshold"] <= 6 and r["steps"] > 0 for r in rows)


def test_grid_protocol_records_every_length(lm, strings):
    cfg = cramming.CramConfig(max_steps=200, patience=50)
    rows = cramming.thresholds_grid(lm.model, lm.bos_id, strings[:2], 1, cfg, seeds=[0, 1],
                                    grid=[1, 3, 5])
    for r in rows:
        assert r["grid"] == [1, 3, 5] and len(r["solved"]) == 3
        solved = [n for n, ok in zip(r["grid"], r["solved"]) if ok]
        assert r["threshold"] == (max(solved) if solved else 0)


def test_grid_stop_ends_a_string_after_consecutive_failures(lm, strings):
    cfg = cramming.CramConfig(max_steps=60, patience=30)
    grid = [1, 2, 4, 6, 8]
    full = cramming.thresholds_grid(lm.model, lm.bos_id, strings[:2], 1, cfg, seeds=[0, 1],
                                    grid=grid)
    cut = cramming.thresholds_grid(lm.model, lm.bos_id, strings[:2], 1, cfg, seeds=[0, 1],
                                   grid=grid, stop=1)
    for f, c in zip(full, cut):
        first_miss = f["solved"].index(False) if False in f["solved"] else len(grid)
        assert c["tried"] == min(len(grid), first_miss + 1)  # ran up to its first failure
        assert c["solved"][:c["tried"]] == f["solved"][:c["tried"]]  # same seeds, same outcomes
        assert not any(c["solved"][c["tried"]:]) and len(c["solved"]) == len(grid)
        assert c["steps"] <= f["steps"] and c["threshold"] <= f["threshold"]
    assert any(c["tried"] < len(grid) for c in cut), "the cap must make some length fail"
    with pytest.raises(ValueError, match="grid_stop"):
        recipes.Recipe("x", method="grid", grid_stop=-1)
    assert recipes.get("paper").grid_stop == 2


def test_recipe_names_scales_and_bad_values():
    assert recipes.get("book@x2").cram.max_steps == 2 * recipes.get("book").cram.max_steps
    assert recipes.get("paper").method == "grid" and recipes.get("kuratov").method == "bisect"
    for bad in ("nope", "book@x0", "book@x-1", "book@xfast"):
        with pytest.raises(ValueError, match="recipe|scale"):
            recipes.get(bad)
    with pytest.raises(ValueError, match="threshold method"):
        recipes.Recipe("x", method="anneal")
    for kw in (dict(lr=-1.0), dict(max_steps=0), dict(patience=-3), dict(schedule="step"),
               dict(init="zeros"), dict(restarts=-1), dict(init_scale=0.0)):
        with pytest.raises(ValueError):
            cramming.CramConfig(**kw)


def test_cosine_schedule_warms_up_then_decays():
    cfg = recipes.get("progressive").cram
    lr = cfg.lr_at(np.array([0, 49, 99, 100, 5_000, 9_999]))
    assert lr[0] < lr[1] < lr[2] == pytest.approx(cfg.lr)
    assert lr[3] == pytest.approx(cfg.lr) and lr[3] > lr[4] > lr[5] >= 0
    assert np.all(cramming.CramConfig().lr_at([0, 10, 1000]) == 1e-2)


def test_new_knobs_left_at_off_keep_the_stored_hash():
    from howmany import results

    old = {k: v for k, v in cramming.CramConfig().to_dict().items()}
    assert "restarts" not in old and "schedule" not in old
    assert results.config_key(cramming.CramConfig(restarts=1)) != results.config_key(
        cramming.CramConfig())


def test_verdict_reads_the_table():
    def rows(ts, steps):
        return [dict(threshold=t, steps=s, censored=False, status="ok", history=[[s, t]])
                for t, s in zip(ts, steps)]

    tab = budget.table({"book": rows([10, 12, 14], [100] * 3),
                        "paper": rows([8, 10, 12], [900] * 3),
                        "book@x2": rows([10, 12, 14], [200] * 3)})
    v = budget.verdict(tab, "book")
    assert v["rival"] == "paper" and v["highest"] and v["third"]
    assert v["doubled"] and v["converged"] and v["change_when_doubled"] == 0
    with pytest.raises(KeyError):
        budget.verdict(tab, "kuratov")


def test_partial_recipes_are_compared_on_the_strings_they_share():
    def rows(strings):
        return [dict(string=i, threshold=i, steps=10, censored=False, status="ok") for i in strings]

    shared = budget.shared_strings({"book": rows([0, 1, 2, 3]), "paper": rows([3, 1]),
                                    "kuratov": []})
    assert set(shared) == {"book", "paper"}
    assert [r["string"] for r in shared["book"]] == [1, 3] == [r["string"] for r in shared["paper"]]
    assert budget.shared_strings({"book": rows([0]), "paper": rows([1])}) == {}
    assert budget.shared_strings({}) == {}
    kept = budget.shared_strings({"book": rows([0, 1, 2, 3]), "paper": rows([3, 1])}, min_strings=4)
    assert list(kept) == ["book"] and len(kept["book"]) == 4


def test_cold_floor_finds_warm_thresholds_below_a_cold_start():
    def rows(ts, strings=None):
        return [dict(threshold=t, **({} if strings is None else {"string": s}))
                for t, s in zip(ts, strings or range(len(ts)))]

    f = budget.cold_floor(rows([11, 4, 9], [0, 1, 2]), rows([5, 10, 9, 7], [0, 1, 2, 3]))
    assert f == {"compared": 3, "below": [[1, 4, 10]], "gap": 6}
    assert budget.cold_floor(rows([3, 8]), rows([3, 5])) == {"compared": 2, "below": [], "gap": 0}
    assert budget.cold_floor(rows([3], [4]), rows([9], [5]))["compared"] == 0


def test_a_folder_counts_for_a_recipe_only_while_the_preset_is_unchanged(tmp_path):
    from dataclasses import replace

    from howmany import results

    def stored(recipe, n_units, name=None, n_strings=8):
        cfg = cramming.sweep.SweepConfig.for_recipe("smollm2-135m", recipe, ms=(1,),
                                                    n_strings=n_strings)
        cfg = replace(cfg, recipe=name or recipe.name)
        folder = cramming.sweep.sweep_dir(cfg, tmp_path)
        results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance": {}})
        for i in range(n_units):
            results.atomic_write_json(folder / f"m1-{recipe.method}-s{i:03d}.json", {
                "config": {"m": 1, "method": recipe.method, "string": i, "n_max": cfg.n_max(1)},
                "provenance": {}, "result": {"threshold": 3, "censored": False, "status": "ok",
                                             "steps": 10}})
        return folder

    book, paper = cramming.recipes.get("book"), cramming.recipes.get("paper")
    old = stored(replace(book, cram=replace(book.cram, lr=0.5)), 8, name="book")  # since changed
    part, full = stored(book, 2), stored(paper, 8)
    assert cramming.budget.ran_recipe(cramming.store.load_sweep(full)["config"], "paper")
    assert not cramming.budget.ran_recipe(cramming.store.load_sweep(old)["config"], "book")
    assert not cramming.budget.ran_recipe(cramming.store.load_sweep(full)["config"], "book")
    found = cramming.budget.recipe_sweeps("smollm2-135m", ["book", "paper"], root=tmp_path)
    assert {k: s["folder"] for k, s in found.items()} == {"book": str(part), "paper": str(full)}
    more = stored(book, 5, n_strings=16)  # the same preset in a folder with more strings done
    found = cramming.budget.recipe_sweeps("smollm2-135m", ["book"], root=tmp_path)
    assert found["book"]["folder"] == str(more)


def test_unfinished_recipes_are_listed_beside_ours_on_their_strings():
    row = lambda i, t: {"string": i, "threshold": t}  # noqa: E731
    rows = {"book": [row(i, 10 + i) for i in range(4)], "paper": [row(i, 5) for i in range(4)],
            "progressive": [row(2, 30), row(0, 20)], "kuratov": [row(7, 9)]}
    out = budget.unfinished(rows, 4)
    assert out == [{"recipe": "progressive", "strings": 2, "theirs": [20, 30], "ours": [10, 12]},
                   {"recipe": "kuratov", "strings": 1, "theirs": [], "ours": []}]
    assert budget.unfinished(rows, 1) == []
    rows["book"] = rows["book"][:2]  # ours unfinished too: listed, not compared with itself
    assert budget.unfinished(rows, 4)[0] == {"recipe": "book", "strings": 2, "theirs": [],
                                             "ours": []}
    with_base = budget.unfinished(rows, 4, baseline="paper")  # every recipe beside paper's
    assert with_base[1] == {"recipe": "progressive", "strings": 2, "theirs": [20], "ours": [10],
                            "own": [20, 30], "base": [5, 5]}
    assert with_base[2]["own"] == [9] and with_base[2]["base"] == []  # paper lacks string 7


def test_restart_gains_counts_the_restarts_that_went_past_the_stall():
    rows = [{"threshold": 9, "restarts": [[100, 8], [300, 10]]},  # raised 7 -> 9
            {"threshold": 4, "restarts": [[50, 5]]},  # restart failed at 5
            {"threshold": 6, "restarts": []}]
    assert budget.restart_gains(rows) == dict(restarted=2, raised=1, gain=2, strings=3)
    assert budget.restart_gains([]) == dict(restarted=0, raised=0, gain=0, strings=0)


def test_repeat_spread_pairs_two_runs_on_their_shared_strings():
    row = lambda i, t: {"string": i, "threshold": t}  # noqa: E731
    first, second = [row(0, 6), row(1, 9), row(2, 4)], [row(2, 33), row(0, 9), row(5, 1)]
    out = budget.repeat_spread(first, second)
    assert out["strings"] == [0, 2] and out["first"] == [6, 4] and out["second"] == [9, 33]
    assert out["median_first"] == 5.0 and out["median_second"] == 21.0
    assert out["max_diff"] == 29 and out["worst"] == 2
    assert out["batches_first"] == out["batches_second"] == [] and out["code_differs"] is None
    assert budget.repeat_spread(first, [row(7, 1)]) == {"strings": []}
    tag = lambda rows, batch, commit: [{**r, "batch": batch, "commit": commit} for r in rows]  # noqa: E731
    out = budget.repeat_spread(tag(first, 8, "a"), tag(second, 2, "b"))
    assert out["batches_first"] == [8] and out["batches_second"] == [2] and out["code_differs"]
    assert budget.repeat_spread(tag(first, 8, "a"), tag(second, 8, "a"))["code_differs"] is False
