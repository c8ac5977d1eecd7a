"""``cram --jobs N``: copies of one command split a sweep and store what one process would;
``--time-limit`` stops them with status 124, and the same command then finishes the sweep."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from howmany.cramming import jobs

TINY = "tiny-llama-d32-v64-l2"
SWEEP = ["cram", TINY, "--kind", "random-tokens", "--m", "1", "2", "--strings", "3", "--batch", "1",
         "--n-max", "3", "2", "--max-steps", "60", "--patience", "30", "--methods", "grow",
         "--profile", "full"]
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run(tmp_path, store, *extra):
    env = {**os.environ, "PYTHONPATH": SRC, "HOWMANY_STORE": str(store), "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "howmany", *SWEEP, *extra], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=400)
    return p, time.perf_counter() - t0


def _results(store):
    return {p.name: json.loads(p.read_text())["result"] for p in sorted(store.rglob("m*-grow-s*.json"))}


def test_child_argv_drops_only_the_job_options():
    argv = ["cram", "x", "--jobs", "4", "--m", "1", "--time-limit=30", "--strings", "2",
            "--time-limit", "5", "--jobs=2"]
    assert jobs.child_argv(argv) == ["cram", "x", "--m", "1", "--strings", "2"]


def test_jobs_store_what_one_process_stores_and_the_time_limit_resumes(tmp_path):
    one, p = tmp_path / "one", None
    p, _ = _run(tmp_path, one)
    assert p.returncode == 0, p.stderr[-2000:]
    ref = _results(one)
    assert len(ref) == 6

    shared = tmp_path / "shared"
    stopped, wall = _run(tmp_path, shared, "--jobs", "2", "--time-limit", "0.5")
    assert stopped.returncode == jobs.TIMED_OUT, stopped.stderr[-2000:]
    assert "time limit of 0.5 s reached" in stopped.stderr and "resumes" in stopped.stderr
    assert len(_results(shared)) < 6

    done, _ = _run(tmp_path, shared, "--jobs", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    assert _results(shared) == ref  # the same rows, whichever process computed each string
    logs = done.stdout.split("their logs: ")[1].split("/job-*.log")[0]
    assert sorted(p.name for p in Path(logs).iterdir()) == ["job-0.log", "job-1.log"]


@pytest.mark.parametrize("extra,match", [
    (["--jobs", "0"], "--jobs must be at least 1, got 0"),
    (["--time-limit", "-3"], "--time-limit must be positive seconds, got -3"),
    (["--jobs", "2", "--backend", "ray"], "--jobs and --time-limit are for the inprocess backend"),
])
def test_bad_job_options_are_one_line_errors(tmp_path, monkeypatch, capsys, extra, match):
    from howmany import cli

    monkeypatch.setenv("HOWMANY_STORE", str(tmp_path / "store"))
    assert cli.main([*SWEEP, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err
    assert not (tmp_path / "store").exists()
