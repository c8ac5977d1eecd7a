"""The command line through ``subprocess``: one-line errors with status 2, SIGKILL-safe sweeps,
two processes splitting one sweep."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from howmany import cli

TINY = "tiny-llama-d32-v64-l2"
SMALL = ["--kind", "random-tokens", "--m", "1", "--strings", "2", "--batch", "2", "--n-max", "2",
         "1", "--max-steps", "20", "--patience", "10", "--methods", "grow"]
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k != "HOWMANY_STORE"}
    env.update(PYTHONPATH=SRC, HOWMANY_DATA=str(tmp_path / "data"), OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT="http://127.0.0.1:9",
               HOWMANY_MODEL_CACHE=str(tmp_path / "models"), **extra)
    return env


def _howmany(tmp_path, *args, timeout=120, **env):
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "howmany", *args], env=_env(tmp_path, **env),
                       capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    return p, time.perf_counter() - t0


@pytest.mark.parametrize("args,match", [
    (["cram", TINY, *SMALL, "--max-steps", "0"], "error: ValueError: max_steps and patience"),
    (["cram", "EleutherAI/pythia-14m", *SMALL], "error: ModelNotFoundError: hub model "
                                                "'EleutherAI/pythia-14m' .*smollm2-135m"),
])
def test_cli_errors_are_one_line_with_status_2_and_write_nothing(tmp_path, args, match):
    p, _ = _howmany(tmp_path, *args)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr[-2000:]
    import re

    assert re.search(match, lines[0]), lines[0]
    assert not (tmp_path / "data").exists()  # a failed run leaves nothing in data/


def test_debug_flag_shows_the_traceback(tmp_path):
    p, _ = _howmany(tmp_path, "--debug", "cram", TINY, *SMALL, "--seed", "-1")
    assert p.returncode != 0 and "Traceback" in p.stderr and "seed must be" in p.stderr


@pytest.mark.parametrize("args,match", [
    (["cram", TINY, *SMALL, "--patience", "-5"], "ValueError: max_steps and patience must be >= 1"),
    (["cram", TINY, *SMALL, "--batch", "0"], "batch_size=0"),
    (["cram", TINY, *SMALL, "--seed", "-1"], "seed must be a non-negative integer, got -1"),
    (["cram", TINY, *SMALL, "--run-batch", "0"], "--run-batch must be positive"),
    (["cram", TINY, *SMALL, "--n-max", "400", "0"], "ContextError: .*n=400"),
    (["cram", TINY, *SMALL, "--m", "400"], "ContextError: .*m=400"),
    (["cram", TINY, *SMALL, "--profile", "nonsense"], "ProfileError: unknown profile 'nonsense'"),
    (["cram", "no-such-model", *SMALL], "ModelNotFoundError: unknown model 'no-such-model'"),
    (["cram", TINY, *SMALL[2:], "--kind", "random-words"], "TargetError: .*needs a tokenizer"),
    (["cram", "tiny-llama-d0-v64-l2", *SMALL], "tiny model dimensions must be positive"),
    (["cram", "tiny-llama-d32-v0-l2", *SMALL], "tiny model dimensions must be positive"),
    (["cram", "../../x", *SMALL], "ModelNotFoundError: unknown model"),
    (["geometry", "no-such-model"], "ModelNotFoundError"),
    (["geometry", TINY, "--profile", "nonsense"], "ProfileError"),
    (["models", "nope"], "ModelNotFoundError: no offline model named 'nope'; known: smollm2-135m"),
    (["models", "nope", "--wheels", "wheels"], "ModelNotFoundError: no offline model named 'nope'"),
])
def test_cli_error_lines_in_process(tmp_path, monkeypatch, capsys, args, match):
    monkeypatch.delenv("HOWMANY_STORE")
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path / "data"))
    assert cli.main(args) == 2
    cap = capsys.readouterr()
    err = cap.err.strip()
    import re

    assert err.startswith("error: ") and "\n" not in err and re.search(match, err), err
    assert not (tmp_path / "data").exists()
    if "unknown model" in match:  # a wrong name stops before any sweep folder is announced
        assert "sweep folders" not in cap.out, cap.out


def test_cuda_without_gpu_is_one_line(tmp_path, monkeypatch, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path / "data"))
    assert cli.main(["cram", TINY, *SMALL, "--device", "cuda"]) == 2
    assert "DeviceError: device 'cuda' asked for, but no CUDA GPU" in capsys.readouterr().err


# --- a real SIGKILL at several points, resumed, equals an uninterrupted run -------------------

SWEEP = ["cram", TINY, "--kind", "random-tokens", "--m", "1", "2", "--strings", "2", "--batch", "1",
         "--n-max", "3", "2", "--max-steps", "80", "--patience", "40", "--methods", "grow",
         "--profile", "full"]


def _units(store):
    return {p.name: json.loads(p.read_text()) for p in sorted(store.rglob("m*-grow-s*.json"))}


def _start(tmp_path, store):
    return subprocess.Popen([sys.executable, "-m", "howmany", *SWEEP], cwd=tmp_path,
                            env=_env(tmp_path, HOWMANY_STORE=str(store)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_sigkill_at_several_points_resumes_to_the_uninterrupted_result(tmp_path):
    import torch

    from howmany import cramming, models

    ref_store, store = tmp_path / "ref", tmp_path / "killed"
    torch.set_num_threads(1)  # as the command line runs (OMP_NUM_THREADS=1): the same kernels
    cfg = cramming.sweep.SweepConfig(  # what `SWEEP` asks for, run here without interruption
        model=TINY, kind="random-tokens", ms=(1, 2), n_strings=2, n_max_base=3, n_max_per_m=2,
        batch_size=1, methods=("grow",), cram=cramming.CramConfig(max_steps=80, patience=40))
    cramming.sweep.run_sweep(models.load(TINY), cfg, cramming.sweep.sweep_dir(cfg, ref_store))
    ref = _units(ref_store)
    assert len(ref) == 4
    kills = []
    for at in (0, 1, 3):  # units on disk when the kill lands: before the first, then mid-sweep
        proc = _start(tmp_path, store)
        head = list(store.rglob("sweep.json"))
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None:
            head = head or list(store.rglob("sweep.json"))
            if head and len(_units(store)) >= at:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills.append(len(_units(store)))
        assert proc.returncode == -signal.SIGKILL, "the kill must land while the sweep runs"
        for name, unit in _units(store).items():  # what is on disk is whole and correct
            assert unit["result"] == ref[name]["result"] and unit["config"] == ref[name]["config"]
    assert kills[-1] < 4, f"kills landed after the sweep finished: {kills}"
    p, _ = _howmany(tmp_path, *SWEEP, timeout=300, HOWMANY_STORE=str(store))
    assert p.returncode == 0, p.stderr[-2000:]
    got = _units(store)
    assert sorted(got) == sorted(ref)
    for name in ref:  # unit by unit: the same thresholds, statuses, steps and losses
        assert got[name]["result"] == ref[name]["result"], name
        assert got[name]["config"] == ref[name]["config"], name
    assert not list(store.rglob(".claims/*.claim"))  # dead claims were taken over and released


# --- two processes split one sweep ------------------------------------------------------------

DRIVER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import torch
    from howmany import cramming
    torch.set_num_threads(1)
    me, folder = sys.argv[1], Path(sys.argv[2])
    real = cramming.THRESHOLD_METHODS["grow"]
    def logged(model, bos, tg, m, cfg, *, seeds, **kw):
        with open(folder.parent / f"log-{me}", "a") as fh:
            for s in seeds:
                fh.write(f"{m} {s}\\n")
        time.sleep(0.3)  # long enough for the other process to want the same batch
        return real(model, bos, tg, m, cfg, seeds=seeds, **kw)
    cramming.THRESHOLD_METHODS["grow"] = logged
    cfg = cramming.sweep.SweepConfig(model="tiny", kind="random-tokens", ms=(1, 2), n_strings=6,
        n_max_base=2, n_max_per_m=1, methods=("grow",), batch_size=1,
        cram=cramming.CramConfig(max_steps=10, patience=5))
    lm = cramming.scaling.tiny_lm(d_model=32, d_vocab=64)
    (folder.parent / f"ready-{me}").touch()
    while len(list(folder.parent.glob("ready-*"))) < 2:
        time.sleep(0.01)
    cramming.sweep.run_sweep(lm, cfg, folder)
""")


def test_two_processes_split_a_sweep_instead_of_repeating_it(tmp_path):
    folder = tmp_path / "shared" / "sweep"
    folder.parent.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", DRIVER, me, str(folder)], env=_env(tmp_path),
                              stderr=subprocess.PIPE, text=True) for me in ("a", "b")]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()[-2000:]
    done = {me: (folder.parent / f"log-{me}").read_text().split("\n")[:-1] if
            (folder.parent / f"log-{me}").exists() else [] for me in ("a", "b")}
    assert done["a"] and done["b"], "both processes computed part of the sweep"
    assert not set(done["a"]) & set(done["b"]), "no unit was computed twice"
    assert len(done["a"]) + len(done["b"]) == 12 == len(list(folder.glob("m*-grow-s*.json")))
