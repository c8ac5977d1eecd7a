"""``make results BACKEND=ray``: the backend reaches ``book execute``, the cluster runs the
cramming sweeps and the copy-task trainings before any chapter, and only for the full profile.

The cluster is faked here; ``test_cramming_cluster`` and ``test_copying_cluster`` run both
backends on a real local Ray cluster.
"""

import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from howmany import bookbuild, distributed, fullrun
from howmany.copying import cluster as copy_cluster
from howmany.cramming import cluster as cram_cluster
from howmany.cramming import store


def test_book_execute_runs_the_cluster_before_the_chapters(monkeypatch, tmp_path):
    order = []
    monkeypatch.setattr(fullrun, "on_ray", lambda cluster: order.append(("ray", cluster)))
    monkeypatch.setattr(bookbuild, "run_chapters", lambda *a, **k: order.append(("chapters",)))
    argv = ["execute", "--profile", "full", "--out", str(tmp_path)]
    assert bookbuild.main([*argv, "--backend", "ray", "--address", "auto"]) == 0
    assert order == [("ray", distributed.ClusterConfig(address="auto")), ("chapters",)]
    order.clear()
    assert bookbuild.main(argv) == 0 and order == [("chapters",)]  # in-process by default


def test_ray_backend_only_for_the_full_profile_and_one_line_without_ray(monkeypatch, capsys):
    assert bookbuild.main(["execute", "--profile", "smoke", "--backend", "ray"]) == 1
    assert "--profile full" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if not installed
    assert bookbuild.main(["execute", "--profile", "full", "--backend", "ray"]) == 1
    err = capsys.readouterr().err
    assert 'pip install -e ".[distributed]"' in err and err.count("\n") == 1


def test_on_ray_runs_the_book_sweeps_and_every_training_on_one_cluster(monkeypatch):
    calls = {}
    monkeypatch.setattr(distributed, "import_ray", lambda: SimpleNamespace(is_initialized=lambda: True))
    monkeypatch.setattr(cram_cluster, "run_sweeps", lambda sweeps, cluster, **k: calls.update(
        cram=(sweeps, cluster)) or {"units": 3, "failed": 0})
    monkeypatch.setattr(copy_cluster, "run", lambda jobs, cluster, **k: calls.update(
        copy=(jobs, cluster)) or ([], {"units": 2, "skipped": 1, "failed": 0, "errors": []}))
    cluster = distributed.ClusterConfig(address="auto", workers=4)
    out = fullrun.on_ray(cluster, verbose=False, log=lambda *a: None)
    assert out["cramming"]["units"] == 3 and out["copying"]["units"] == 2
    assert [c for c, _ in calls["cram"][0]] == [store.book_config(n, "full")
                                                 for n in store.BOOK_MODELS]
    assert len(calls["copy"][0]) == len(copy_cluster.full_units())
    assert calls["cram"][1] == calls["copy"][1] == cluster
    monkeypatch.setattr(copy_cluster, "run", lambda jobs, cluster, **k: (
        [], {"units": 1, "skipped": 0, "failed": 1, "errors": ["copy-lstm: boom"]}))
    with pytest.raises(RuntimeError, match="rerun"):
        fullrun.on_ray(cluster, verbose=False, log=lambda *a: None)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_results_passes_the_backend(repo_root):
    def dry(*extra):
        env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
        out = subprocess.run(["make", "--no-print-directory", "-n", "-o", ".venv/.installed",
                              "results", *extra], cwd=repo_root, capture_output=True, text=True,
                             check=True, env=env).stdout
        return out.strip().splitlines()[-1]

    assert dry("BACKEND=ray", "ADDRESS=auto").endswith("--backend ray --address auto")
    assert dry().endswith("--backend inprocess")
