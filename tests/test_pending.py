"""Planning without computing (``howmany.pending``): ``results.cached`` hands back what it would
compute, and ``results.save`` writes the very file ``cached`` writes."""

import json

import pytest

from howmany import pending, results

CFG = {"k": 1, "seed": 3}


def _call(calls):
    return lambda: results.cached("toy", lambda: calls.append(1) or {"v": [1, 2]}, CFG,
                                  chapter="t", profile="full", heavy=True, device="cpu")


def test_plan_defers_a_missing_result_and_save_writes_what_cached_writes(tmp_path, monkeypatch):
    calls = []
    job = pending.plan(_call(calls))
    assert isinstance(job, pending.Pending) and not calls and not job.path.exists()
    assert not pending.planning()  # planning ends with the call
    assert job.fn() == {"v": [1, 2]} and job.meta == {"seed": 3, "device": "cpu",
                                                       "dtype": None, "profile": "full"}
    rec = results.save(job, job.fn(), wall_s=1.5, device="cuda", extra={"backend": "ray"})
    blob = json.loads(job.path.read_text())
    assert blob["config"] == CFG and blob["result"] == rec.result == {"v": [1, 2]}
    assert blob["provenance"]["device"] == "cuda" and blob["provenance"]["backend"] == "ray"
    assert blob["provenance"]["wall_time_s"] == 1.5 and blob["provenance"]["seed"] == 3
    # in-process, the same call writes the same file name with the same config and result
    monkeypatch.setenv("HOWMANY_STORE", str(tmp_path / "inprocess"))
    direct = _call(calls)()
    assert direct.path.name == job.path.name and direct.result == rec.result
    assert set(json.loads(direct.path.read_text())["provenance"]) | {"backend"} == set(
        blob["provenance"])


def test_plan_returns_a_stored_result_and_passes_other_errors_through():
    calls = []
    _call(calls)()  # stored
    rec = pending.plan(_call(calls))
    assert isinstance(rec, results.Record) and rec.loaded and calls == [1]
    with pytest.raises(results.MissingResultError):  # default never computes heavy results
        pending.plan(lambda: results.cached("x", lambda: 1, CFG, chapter="t", profile="default",
                                            heavy=True))
