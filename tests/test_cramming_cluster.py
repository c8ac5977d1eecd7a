"""The Ray backend of cramming sweeps: the same unit results as in-process (bitwise, CPU), an
actor killed mid-task is retried, a driver killed with SIGKILL resumes to the same files.

Compared: the ``result`` part of every unit file (thresholds, steps, budget curves, targets).
Provenance differs legitimately between backends (times, command, ``backend``, ``host``).
One local cluster (``ray.init(num_cpus=2)``) serves the module; two tiny models, 8 units.
"""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pytest
import torch

from howmany import cli, cramming, models
from howmany.cramming import cluster, store, sweep

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason=cluster.MISSING_RAY)
MODELS = ("tiny-llama-d32-v64-l2", "tiny-llama-d32-v64-l2-s1")
CFGS = [sweep.SweepConfig(model=name, kind="random-tokens", ms=(1, 2), n_strings=4, n_max_base=2,
                          n_max_per_m=3, methods=("grow",), batch_size=2,
                          cram=cramming.CramConfig(max_steps=60, patience=30)) for name in MODELS]
CLI = ["cram", "--models", *MODELS, "--kind", "random-tokens", "--m", "1", "2", "--strings", "4",
       "--batch", "2", "--n-max", "2", "3", "--methods", "grow", "--max-steps", "60",
       "--patience", "30", "--profile", "smoke", "--backend", "ray"]
N_FILES = 2 * 2 * 4  # models × m × strings


def _results(folder) -> dict:
    return {p.name: json.loads(p.read_text())["result"] for p in sorted(folder.glob("m*-*-s*.json"))}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Unit results of the in-process backend, per model."""
    torch.set_num_threads(1)  # as in every Ray actor (one CPU each)
    root = tmp_path_factory.mktemp("inprocess")
    out = {}
    for cfg in CFGS:
        folder = sweep.run_sweep(models.load(cfg.model, device="cpu"), cfg, sweep.sweep_dir(cfg, root))
        out[cfg.model] = _results(folder)
        assert len(out[cfg.model]) == 8
    return out


@pytest.fixture(scope="module")
def ray_address(ray_cluster):
    """The local cluster of 2 CPUs (``conftest.ray_cluster``)."""
    return ray_cluster.address


def test_missing_ray_gives_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if not installed
    with pytest.raises(ImportError, match=r'pip install -e "\.\[distributed\]"'):
        cluster.import_ray()
    with pytest.raises(SystemExit, match="distributed") as exc:
        cli.main(CLI)
    assert "\n" not in str(exc.value)


def test_cli_names_a_model(capsys):
    assert cli.main(["cram", "--profile", "smoke"]) == 2
    assert "name a model" in capsys.readouterr().err


@needs_ray
def test_ray_matches_inprocess_and_retries_a_killed_actor(ray_address, reference, tmp_path,
                                                          monkeypatch):
    written, killed = [], []
    real = sweep.write_unit

    def recording(folder, cfg, unit, *a, **k):
        written.extend((cfg.model, unit[0], unit[1], i) for i in unit[2])
        return real(folder, cfg, unit, *a, **k)

    def kill_first(event, info):
        if event == "dispatch" and not killed:  # its first unit also loads the model: still busy
            time.sleep(0.2)
            os.kill(info["pid"], signal.SIGKILL)
            killed.append(info)

    monkeypatch.setattr(sweep, "write_unit", recording)
    sweeps = [(cfg, sweep.sweep_dir(cfg, tmp_path)) for cfg in CFGS]
    stats = cluster.run_sweeps(sweeps, cluster.ClusterConfig(workers=2), callback=kill_first)
    assert killed and stats["restarted"] >= 1 and stats["failed"] == 0 and stats["units"] == 8
    assert len(written) == len(set(written)) == N_FILES  # every string written once
    for cfg, folder in sweeps:
        assert _results(folder) == reference[cfg.model]
        prov = json.loads(next(folder.glob("m1-*.json")).read_text())["provenance"]
        assert prov["backend"] == "ray" and prov["device"] == "cpu"
        assert sweep.SweepConfig.from_dict(store.load_sweep(folder)["config"]) == cfg


@needs_ray
def test_ray_inherits_what_a_narrower_cap_finished_below_it(ray_address, reference, tmp_path):
    """A wider sweep on Ray takes over the narrower sweep's uncensored strings (cramming.widen)
    and ends where the in-process wider sweep ends."""
    wide = CFGS[0]
    narrow = replace(wide, n_max_base=0, n_max_per_m=1)  # caps 1 and 2: some strings reach them
    lm = models.load(wide.model, device="cpu")
    sweep.run_sweep(lm, narrow, sweep.sweep_dir(narrow, tmp_path))
    folder = sweep.sweep_dir(wide, tmp_path)
    stats = cluster.run_sweeps([(wide, folder)], cluster.ClusterConfig(workers=2))
    took = [p.name for p in folder.glob("m*.json")
            if "inherited_from" in json.loads(p.read_text())["provenance"]]
    assert 0 < len(took) < N_FILES // 2 and stats["units"] >= 1 and stats["failed"] == 0
    same = ("threshold", "censored", "status", "steps", "history", "restarts")
    assert {n: {k: r[k] for k in same} for n, r in _results(folder).items()} == \
        {n: {k: r[k] for k in same} for n, r in reference[wide.model].items()}


@needs_ray
def test_driver_killed_with_sigkill_resumes_to_identical_files(ray_address, reference, tmp_path):
    env = {**os.environ, "HOWMANY_STORE": str(tmp_path)}
    cmd = [sys.executable, "-m", "howmany", *CLI, "--address", ray_address]
    folders = [sweep.sweep_dir(cfg, tmp_path) for cfg in CFGS]
    count = lambda: sum(len(list(f.glob("m*-*-s*.json"))) for f in folders)  # noqa: E731
    log = tmp_path / "driver.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 900
        while count() == 0:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no unit finished in time"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    n_killed = count()
    assert 0 < n_killed < N_FILES  # killed mid-sweep
    pending = sum(len(list(sweep.plan_units(cfg, f))) for cfg, f in zip(CFGS, folders))
    before = {p: p.stat().st_mtime_ns for f in folders for p in f.glob("m*-*-s*.json")}
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    stats = next(json.loads(line) for line in rerun.stdout.splitlines() if line.startswith("{"))
    assert stats["units"] == pending and stats["failed"] == 0  # only what was missing ...
    assert all(p.stat().st_mtime_ns == t for p, t in before.items())  # ... finished files stay
    for cfg, folder in zip(CFGS, folders):
        assert _results(folder) == reference[cfg.model]
