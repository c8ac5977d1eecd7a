"""A wider prefix cap keeps the strings a narrower one finished below it (cramming.widen)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from howmany import cramming, results
from howmany.cramming.scaling import tiny_lm

NARROW = cramming.sweep.SweepConfig(
    model="tiny-llama-d32-v64-lecun", kind="random-tokens", ms=(1, 2), n_strings=6, n_max_base=2,
    n_max_per_m=2, batch_size=6, methods=("grow",), cram=cramming.CramConfig(max_steps=60, patience=30))
WIDE = replace(NARROW, n_max_per_m=8)
SAME_RUN = ("threshold", "censored", "status", "steps", "history", "restarts")


def _unit(folder, m, i):
    return json.loads(cramming.units.unit_path(folder, m, "grow", i).read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The narrow sweep, then the wide one beside it (inheriting), and the wide one alone."""
    lm = tiny_lm(d_model=32, d_vocab=64)
    root, alone = tmp_path_factory.mktemp("store"), tmp_path_factory.mktemp("alone")
    run = lambda cfg, r: cramming.sweep.run_sweep(lm, cfg, cramming.sweep.sweep_dir(cfg, r))  # noqa: E731
    return run(NARROW, root), run(WIDE, root), run(WIDE, alone)


def test_a_string_finished_below_the_cap_runs_the_same_under_a_wider_cap(runs):
    narrow, _, alone = runs
    below = [(m, i) for m in NARROW.ms for i in range(NARROW.n_strings)
             if not _unit(narrow, m, i)["result"]["censored"]]
    assert 0 < len(below) < len(NARROW.ms) * NARROW.n_strings  # both cases occur here
    for m, i in below:  # the argument of cramming.widen, checked on a real run
        a, b = _unit(narrow, m, i)["result"], _unit(alone, m, i)["result"]
        assert {k: a[k] for k in SAME_RUN} == {k: b[k] for k in SAME_RUN}, (m, i)


def test_the_wider_sweep_inherits_those_and_reruns_the_censored(runs):
    narrow, wide, alone = runs
    for m in NARROW.ms:
        for i in range(NARROW.n_strings):
            old, new, fresh = _unit(narrow, m, i), _unit(wide, m, i), _unit(alone, m, i)
            assert new["config"]["n_max"] == WIDE.n_max(m)
            assert {k: new["result"][k] for k in SAME_RUN} == {k: fresh["result"][k] for k in SAME_RUN}
            took = new["provenance"].get("inherited_from")
            if old["result"]["censored"]:
                assert took is None and new["result"]["threshold"] >= NARROW.n_max(m)
            else:
                assert took == {"folder": narrow.name, "file": f"m{m}-grow-s{i:03d}.json",
                                "n_max": NARROW.n_max(m)}
    assert cramming.store.load_sweep(wide)["units"]["grow"].keys() == {1, 2}
    took = {m: sum(not _unit(narrow, m, i)["result"]["censored"] for i in range(NARROW.n_strings))
            for m in NARROW.ms}
    assert {c.m: c.inherited for c in cramming.progress.progress(wide).cells} == took


def test_only_a_narrower_sweep_of_the_same_protocol_and_strings_is_used(tmp_path):
    cfgs = {"narrow": NARROW, "other steps": replace(NARROW, cram=replace(NARROW.cram, max_steps=61)),
            "wider": replace(NARROW, n_max_per_m=20), "natural": replace(NARROW, kind="natural")}
    folders = {}
    for name, cfg in cfgs.items():
        folders[name] = cramming.sweep.sweep_dir(cfg, tmp_path)
        results.atomic_write_json(folders[name] / "sweep.json", {"config": cfg, "provenance": {}})
    wide = cramming.sweep.sweep_dir(WIDE, tmp_path)
    assert [f.name for _, f in cramming.widen.narrower_sweeps(WIDE, wide)] == [folders["narrow"].name]
    assert cramming.widen.narrower_sweeps(replace(WIDE, kind="natural"), wide) == []
    unit = lambda target, censored: {  # noqa: E731
        "config": {"m": 1, "method": "grow", "string": 0, "n_max": NARROW.n_max(1), "batch": 1},
        "provenance": {}, "result": {"threshold": 2, "censored": censored, "status": "stopped",
                                     "steps": 9, "target": target}}
    path = cramming.units.unit_path(folders["narrow"], 1, "grow", 0)
    tg = np.array([[5, 6, 7, 8, 9]])
    results.atomic_write_json(path, unit([5, 6, 7, 8], True))
    assert cramming.widen.inherit(WIDE, wide, tg) == 0  # censored: its threshold may lie beyond
    results.atomic_write_json(path, unit([5, 6, 1, 8], False))
    assert cramming.widen.inherit(WIDE, wide, tg) == 0  # another string
    results.atomic_write_json(path, unit([5, 6, 7, 8], False))
    assert cramming.widen.inherit(WIDE, wide, tg) == 1 and cramming.widen.inherit(WIDE, wide, tg) == 0


class _Chars:  # a tokenizer of one token per character
    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}


@pytest.mark.parametrize("kind", cramming.targets.KINDS[:3])
def test_prefix_stable_kinds_are_those_whose_strings_are_prefixes_of_longer_ones(kind):
    tok = None if kind == "random-tokens" else _Chars()
    short, long = (cramming.targets.make_targets(kind, 4, n, seed=3, tokenizer=tok, d_vocab=64)
                   for n in (20, 60))
    stable = bool((short == long[:, :20]).all())
    assert stable == (kind in cramming.targets.PREFIX_STABLE)


def _stopped(monkeypatch, tmp_path, steps, lm, cfg, folder, **kw):
    """Run the sweep with a snapshot after every step and stop it (Ctrl-C) after ``steps``."""
    monkeypatch.setattr(cramming.sweep, "SNAPSHOT_S", 0.0)
    monkeypatch.setenv("HOWMANY_PARTIAL", str(tmp_path / "partial"))
    real, kept = cramming.resume.keep, []

    def killing(path, snap, meta, **k):
        real(path, snap, meta, **k)
        kept.append(path)
        if len(kept) == steps:
            raise KeyboardInterrupt

    monkeypatch.setattr(cramming.resume, "keep", killing)
    with pytest.raises(KeyboardInterrupt):
        cramming.sweep.run_sweep(lm, cfg, folder, **kw)
    monkeypatch.setattr(cramming.resume, "keep", real)


def test_a_run_in_flight_under_the_narrower_cap_goes_on_under_the_wider_one(runs, tmp_path,
                                                                            monkeypatch):
    """Killed mid-run under the narrow cap, resumed by the wide sweep: the wide sweep's rows."""
    _, _, alone = runs
    lm = tiny_lm(d_model=32, d_vocab=64)
    # stopped after 40 steps, every string still in flight
    _stopped(monkeypatch, tmp_path, 40, lm, NARROW, cramming.sweep.sweep_dir(NARROW, tmp_path),
             only_ms=(1,))
    wide = cramming.sweep.sweep_dir(WIDE, tmp_path)
    calls, search = [], cramming.THRESHOLD_METHODS["grow"]
    monkeypatch.setitem(cramming.THRESHOLD_METHODS, "grow",
                        lambda *a, **k: calls.append(k["resume"]) or search(*a, **k))
    cramming.sweep.run_sweep(lm, WIDE, wide, only_ms=(1,))
    assert [s["out"]["steps"] for s in calls[0]] == [40] * NARROW.n_strings  # went on, not afresh
    for i in range(NARROW.n_strings):
        got, ref = _unit(wide, 1, i)["result"], _unit(alone, 1, i)["result"]
        assert {k: got[k] for k in SAME_RUN} == {k: ref[k] for k in SAME_RUN}, i
        assert got["resumed_from"]["file"] == "inflight/grow-m1-c0-b6.json"
    assert {c.m: c.inherited for c in cramming.progress.progress(wide).cells} == {1: 0, 2: 0}


def test_a_sweep_finishes_the_batches_it_began_before_it_begins_new_ones(tmp_path):
    folder = cramming.sweep.sweep_dir(NARROW, tmp_path)
    plan = cramming.units.plan_units(NARROW, folder, batch_size=2)
    results.atomic_write_json(cramming.units.kept_path(folder, "grow-m2-c4-b2"), {})  # inherited
    order = [(m, idx) for _, m, idx in plan]
    assert order == [(2, [4, 5]), (1, [0, 1]), (2, [0, 1]), (1, [2, 3]), (2, [2, 3]), (1, [4, 5])]


def test_a_batch_begun_with_another_batch_size_is_resumed_as_it_began(tmp_path, monkeypatch):
    """Stopped one string at a time (``--run-batch 1``), resumed with the sweep's batch of 6:
    the begun string goes on from its snapshot, alone, and the others run once, together."""
    cfg = replace(NARROW, ms=(1,))
    lm = tiny_lm(d_model=32, d_vocab=64)
    ref = cramming.sweep.run_sweep(lm, cfg, cramming.sweep.sweep_dir(cfg, tmp_path / "ref"),
                                   batch_size=1)
    folder = cramming.sweep.sweep_dir(cfg, tmp_path / "run")
    _stopped(monkeypatch, tmp_path, 15, lm, cfg, folder, batch_size=1)  # 15 steps of string 0
    assert cramming.units.kept_batches(folder) == [("grow", 1, 0, 1)]
    order = [idx for _, _, idx in cramming.units.plan_units(cfg, folder)]
    assert order == [[0], [1, 2, 3, 4, 5]]  # the begun string first, then the rest together
    calls, search = [], cramming.THRESHOLD_METHODS["grow"]
    monkeypatch.setitem(cramming.THRESHOLD_METHODS, "grow",
                        lambda *a, **k: calls.append(k["resume"]) or search(*a, **k))
    cramming.sweep.run_sweep(lm, cfg, folder)
    assert [s["out"]["steps"] for s in calls[0]] == [15]  # went on, not afresh
    assert len(calls) == 2 and calls[1] is None  # strings 1..5 in one fresh batch
    got, want = _unit(folder, 1, 0)["result"], _unit(ref, 1, 0)["result"]
    assert {k: got[k] for k in SAME_RUN} == {k: want[k] for k in SAME_RUN}
    assert [_unit(folder, 1, i)["config"]["batch"] for i in range(6)] == [1] + [5] * 5
    assert not (folder / cramming.units.INFLIGHT_DIR).exists()


def test_the_book_reads_the_widest_sweep_with_the_narrower_ones_lower_bounds(tmp_path):
    book = cramming.recipes.get("book")
    narrow = cramming.sweep.SweepConfig.for_recipe("smollm2-135m", book, ms=(1,), n_strings=4)
    wide = replace(narrow, n_max_per_m=96)

    def stored(cfg, rows):
        folder = cramming.sweep.sweep_dir(cfg, tmp_path)
        results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance": {}})
        for i, threshold in rows.items():
            results.atomic_write_json(cramming.units.unit_path(folder, 1, "grow", i), {
                "config": {"m": 1, "method": "grow", "string": i, "n_max": cfg.n_max(1)},
                "provenance": {}, "result": {"threshold": threshold, "steps": 10, "status": "stopped",
                                             "censored": threshold >= cfg.n_max(1)}})
        return folder

    old = stored(narrow, {0: 20, 1: 64, 2: 30})  # string 1 crammed the whole 64-token prefix
    new = stored(wide, {0: 20, 3: 80})  # string 0 inherited, string 3 run; 1 and 2 not yet
    got = cramming.budget.recipe_sweeps("smollm2-135m", ["book"], root=tmp_path)["book"]
    assert got["folder"] == str(new)
    rows = got["units"]["grow"][1]
    assert [(r["string"], r["threshold"], r["censored"], r.get("folder")) for r in rows] == [
        (0, 20, False, None), (1, 64, True, old.name), (2, 30, False, old.name), (3, 80, False, None)]
