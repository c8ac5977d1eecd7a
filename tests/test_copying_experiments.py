"""Tests for howmany.copying.experiments: the profiles' configs and stored-run lookups."""

import json
from dataclasses import replace

import pytest

from howmany import copying, results


def _write(folder, arch, n_layers, key, steps=20_000):
    blob = {"config": {"model": {"arch": arch, "n_layers": n_layers}, "steps": steps},
            "result": {"steps": 10 * n_layers}, "provenance": {"git_commit": "x"}}
    results.atomic_write_json(folder / f"copy-{arch}-{key}.json", blob)


def test_stored_variants_filters_by_model_fields(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))
    folder = tmp_path / "copying"
    folder.mkdir()
    _write(folder, "hard_alibi", 2, "0000aaaa")
    _write(folder, "hard_alibi", 4, "0000bbbb")
    _write(folder, "nope", 2, "0000cccc")
    (folder / "copy-hard_alibi-w32-0000dddd.json").write_text(json.dumps({}))  # width runs: skipped
    got = copying.experiments.stored_variants("hard_alibi", n_layers=2)
    assert [g["steps"] for g in got] == [20]
    assert len(copying.experiments.stored_variants("hard_alibi")) == 2
    assert copying.experiments.stored_variants("lstm") == []
    _write(folder, "hard_alibi", 4, "0000ffff", steps=40_000)
    assert len(copying.experiments.stored_variants("hard_alibi", n_layers=4)) == 2
    longer = copying.experiments.stored_variants("hard_alibi", steps=40_000, n_layers=4)
    assert [g["config"]["steps"] for g in longer] == [40_000]


def test_stored_variants_rejects_a_damaged_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))
    (tmp_path / "copying").mkdir()
    (tmp_path / "copying" / "copy-nope-0000eeee.json").write_text("{truncated")
    with pytest.raises(results.CorruptResultError):
        copying.experiments.stored_variants("nope")


def test_full_profile_trains_each_transformer_deep_enough():
    depth = {a: copying.config("full", a).model.n_layers for a in copying.ARCH_LABELS}
    assert depth["hard_alibi"] == depth["nope"] == 4 and depth["rope"] == depth["alibi"] == 2
    cfg = copying.config("full", "rope")
    assert cfg.length_power == 1.0 and cfg.curve_strings == 100 and cfg.stop_repeat == 3
    assert cfg.curve_lengths == tuple(range(5, 51, 5))


def test_full_profile_gives_hard_alibi_twice_the_steps_but_keeps_the_width_runs():
    assert copying.config("full", "hard_alibi").steps == 2 * copying.config("full", "rope").steps
    assert {c.steps for c in copying.experiments.width_suite("full")} == {20_000}


def test_only_the_widest_lstm_takes_two_threads_and_the_narrower_runs_keep_their_keys():
    runs = copying.experiments.width_suite("full")
    threads = {(c.model.arch, c.model.d_model): c.threads for c in runs}
    assert threads.pop(("lstm", 512)) == 2 and set(threads.values()) == {1}
    suite_lstm = copying.config("full", "lstm")
    w256 = next(c for c in runs if c.model.arch == "lstm" and c.model.d_model == 256)
    assert w256 == suite_lstm  # the width-256 run is the suite's LSTM, one stored result
    assert all(c.threads == 1 for c in copying.experiments.width_suite("smoke"))


def test_short_range_is_the_full_protocol_on_fewer_letters():
    ten, short = copying.experiments.short_suite("full")
    full = copying.config("full", "lstm")
    assert short.model == ten.model == full.model and ten.max_len == 10
    assert short.max_len == 20 < full.max_len
    same = ("steps", "ramp", "length_power", "stop_exact", "stop_repeat", "curve_strings",
            "batch_size", "min_len")
    assert all(getattr(short, k) == getattr(full, k) == getattr(ten, k) for k in same)
    assert short.curve_lengths == (5, 10, 15, 20) and ten.curve_lengths == (5, 10)
    assert set(range(5, 41)) <= set(short.eval_lengths) and max(short.eval_lengths) == 300
    assert set(range(5, 21)) <= set(ten.eval_lengths)
    assert len({short.key(), ten.key(), full.key()}) == 3
    assert copying.experiments.run_name(short, "short") == "copy-lstm-r20"


def test_default_profile_reads_the_short_range_run_and_never_trains_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))

    def no_training(*a, **k):
        raise AssertionError("the default profile must not train the short-range run")

    monkeypatch.setattr(copying.experiments, "run", no_training)
    runs, missing = copying.load_suite("default", short=True)
    assert runs == [] and missing == copying.experiments.short_suite("full")
    with pytest.raises(ValueError, match="one of widths, short and depths"):
        copying.load_suite("default", widths=True, short=True)
    with pytest.raises(ValueError, match="one of widths, short and depths"):
        copying.load_suite("default", short=True, depths=True)


def test_deeper_lstm_is_the_suite_lstm_stacked_two_high():
    (deep,) = copying.experiments.depth_suite("full")
    full = copying.config("full", "lstm")
    assert deep.model.n_layers == 2 and full.model.n_layers == 1
    assert replace(deep, model=replace(deep.model, n_layers=1)) == full  # nothing else changes
    assert deep.key() != full.key()
    assert copying.experiments.run_name(deep, "depths") == "copy-lstm-l2"
    (tiny,) = copying.experiments.depth_suite("smoke")
    assert tiny.model.n_layers == 2 and tiny.max_len == copying.config("smoke", "lstm").max_len


def test_copy_command_checks_every_copier_whose_checkpoint_is_here(tmp_path, monkeypatch, capsys):
    from functools import partial

    from howmany import cli
    from howmany.copying import cluster, training

    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("HOWMANY_CHECKPOINTS", str(tmp_path / "ckpt"))
    here, elsewhere = (copying.config("smoke", "lstm", steps=30, curve_every=10, eval_strings=10,
                                      eval_lengths=(2, 8), seed=s) for s in (0, 1))
    stored = copying.cached_run(elsewhere, "smoke")  # a result whose checkpoint is then gone
    (training.checkpoint_dir() / f"{elsewhere.key()}.pt").unlink()
    jobs = [(partial(copying.cached_run, here, "smoke"), here),
            (lambda verbose=False: stored, elsewhere)]
    monkeypatch.setattr(cluster, "units", lambda *a, **k: jobs)
    assert cli.main(["copy", "--profile", "smoke", "--widths"]) == 0
    out = capsys.readouterr().out
    assert out.count("range check: worst n=") == 1 and out.count("checks skipped") == 1
    assert "/8 copied" not in out  # the check covers the training lengths 2-8, 50 strings each
    assert "/50 copied" in out
    assert out.count("first mistakes: ") == 1  # tallied where the range check ran
    assert cli.main(["copy", "--profile", "smoke", "--widths", "--checks", "mistakes"]) == 0
    out = capsys.readouterr().out
    assert "range check" not in out and out.count("first mistakes: ") == 1
    assert cli.main(["copy", "--profile", "smoke", "--widths", "--checks"]) == 0
    assert "first mistakes" not in capsys.readouterr().out
