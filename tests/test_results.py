"""The results store: round trip, key stability, atomic writes, clear errors."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import numpy as np
import pytest

from howmany import profiles, results


@dataclass(frozen=True)
class Cfg:
    n: int = 3  # a size
    seed: int = 0  # a seed
    dtype: str = "float32"  # recorded in the provenance


def test_round_trip_computes_then_loads_identical(tmp_path):
    calls = []

    def fn():
        calls.append(1)
        return {"x": np.arange(3), "mean": np.float64(1.5), "ok": np.bool_(True)}

    first = results.cached("toy", fn, Cfg(), chapter="t", profile="full", heavy=True)
    second = results.cached("toy", fn, Cfg(), chapter="t", profile="full", heavy=True)
    assert calls == [1] and not first.loaded and second.loaded
    assert first.result == second.result == {"x": [0, 1, 2], "mean": 1.5, "ok": True}
    prov = second.provenance
    assert prov["seed"] == 0 and prov["dtype"] == "float32" and prov["wall_time_s"] >= 0
    for key in ("git_commit", "git_dirty", "versions", "utc_time", "machine", "command"):
        assert key in prov
    assert first.path.name == f"toy-{results.config_key(Cfg())}.json"


def test_key_is_stable_and_sensitive():
    assert results.config_key({"a": 1, "b": [1, 2]}) == results.config_key({"b": [1, 2], "a": 1})
    assert results.config_key(Cfg()) == results.config_key({"n": 3, "seed": 0, "dtype": "float32"})
    assert results.config_key(Cfg()) != results.config_key(Cfg(n=4))
    # pinned: a change of canonicalisation would silently orphan every file in data/
    assert results.config_key({"a": 1}) == "015abd7f"


def test_cheap_results_recompute_in_default_profile():
    calls = []
    for _ in range(2):
        results.cached("cheap", lambda: calls.append(1) or 1, {"k": 1}, chapter="t",
                       profile="default")
    assert len(calls) == 2


def test_missing_heavy_result_names_make_results(monkeypatch, tmp_path):
    monkeypatch.delenv("HOWMANY_STORE")
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path / "data"))
    with pytest.raises(results.MissingResultError, match="make results"):
        results.cached("sweep", lambda: 1, {"k": 1}, chapter="t", profile="default", heavy=True)


def test_corrupt_file_error_names_file(tmp_path):
    rec = results.cached("c", lambda: {"v": 1}, {"k": 2}, chapter="t", profile="full", heavy=True)
    rec.path.write_text('{"config": {"k": 2}, "result": ')  # torn by hand
    with pytest.raises(results.CorruptResultError, match=str(rec.path)):
        results.cached("c", lambda: {"v": 1}, {"k": 2}, chapter="t", profile="full", heavy=True)


def test_config_mismatch_is_an_error(tmp_path):
    rec = results.cached("m", lambda: 1, {"k": 3}, chapter="t", profile="full", heavy=True)
    blob = json.loads(rec.path.read_text())
    blob["config"] = {"k": 999}
    rec.path.write_text(json.dumps(blob))
    with pytest.raises(results.ConfigMismatchError, match="different config"):
        results.load(rec.path, {"k": 3})


def test_atomic_write_survives_a_kill(tmp_path):
    """A writer SIGKILLed in the middle of a large write leaves the old file intact."""
    target = tmp_path / "r.json"
    results.atomic_write_json(target, {"version": "old"})
    child = textwrap.dedent(f"""
        import json, time
        import howmany.results as r
        real_dump = json.dump
        def slow_dump(obj, fh, **kw):  # write half, then hang until killed
            fh.write('{{"version": "new", "pad": "'); fh.flush()
            print("writing", flush=True); time.sleep(60)
        r.json.dump = slow_dump
        r.atomic_write_json({str(target)!r}, {{"version": "new"}})
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert json.loads(target.read_text()) == {"version": "old"}
    # the orphan temp file is hidden (".r.json.*.tmp") and never read as a result
    assert [p.name for p in tmp_path.glob("*.json")] == ["r.json"]


def test_bad_profile_is_one_clear_line():
    with pytest.raises(profiles.ProfileError, match="valid profiles are smoke, default, full"):
        results.cached("x", lambda: 1, {}, chapter="t", profile="nonsense")
    assert profiles.pick("full", smoke=1, default=2) == 2
    assert profiles.pick("full", smoke=1, default=2, full=3) == 3


def test_cli_lists_records_and_sweep_headers(tmp_path, monkeypatch, capsys):
    """`python -m howmany results` lists every JSON in data/, also sweep headers without a result."""
    from howmany import cli

    data = tmp_path / "data"
    monkeypatch.setenv("HOWMANY_DATA", str(data))
    results.atomic_write_json(data / "c" / "sweep.json", {"config": {}, "provenance": {"device": "cpu"}})
    results.atomic_write_json(data / "c" / "r-1.json", {"config": {}, "result": 1,
                                                        "provenance": {"dtype": "float32",
                                                                       "wall_time_s": 1234.4}})
    assert cli.main(["results"]) == 0
    out = capsys.readouterr().out
    assert "c/sweep.json" in out and "device=cpu" in out and "dtype=float32" in out
    assert "wall=1,234s" in out and "wall=not recorded" in out and "Nones" not in out
