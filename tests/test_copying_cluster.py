"""The Ray backend of the copy-task trainings (``copying.cluster``, ``howmany.distributed``):
on CPU the same result files as the in-process backend, a worker killed mid-training retried,
a restart that computes only the missing results, a failing unit reported and left for the next
run, and without Ray a one-line error.

Compared: each result without its timings (wall and CPU seconds of training and evaluation)
and the ``config`` of its file; provenance differs legitimately (times, ``backend``, ``host``).
Two smoke-profile copiers (a transformer and the LSTM), cut to 60 steps, in the ``full``
profile so that a stored result is reused (the store is each test's temporary one).
"""

import importlib.util
import json
import os
import signal
import sys
import time
from functools import partial

import pytest

from howmany import cli, copying, distributed, pending, results
from howmany.copying import cluster

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason=distributed.MISSING_RAY)
CFGS = [copying.config("smoke", arch, steps=60, curve_every=20, eval_strings=10)
        for arch in ("rope", "lstm")]
TIMES = ("train_s", "train_cpu_s", "train_call_s", "eval_s", "eval_cpu_s")


def _jobs():
    return [(partial(copying.cached_run, cfg, "full"), cfg) for cfg in CFGS]


def _blob(path) -> dict:
    blob = json.loads(path.read_text())
    return {"config": blob["config"], **{k: v for k, v in blob["result"].items() if k not in TIMES}}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The in-process backend's result files (and their folder), one per copier."""
    store = tmp_path_factory.mktemp("inprocess")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOWMANY_STORE", str(store))
        mp.setenv("HOWMANY_CHECKPOINTS", str(store / "checkpoints"))
        paths = [call().path for call, _ in _jobs()]
    return paths


def _worker_of_task(timeout=120.0):
    """The pid of a Ray worker of this test's cluster (a descendant of this process) that is
    running a ``distributed.compute`` task."""
    import psutil  # installed with Ray

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in psutil.Process().children(recursive=True):
            try:
                if "ray::compute" in " ".join(proc.cmdline()):
                    return proc.pid
            except psutil.Error:
                continue
        time.sleep(0.01)
    raise AssertionError("no Ray worker started a training in time")


def test_missing_ray_gives_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if not installed
    with pytest.raises(ImportError, match=r'pip install -e "\.\[distributed\]"'):
        cluster.run(_jobs())
    with pytest.raises(SystemExit, match="distributed") as exc:
        cli.main(["copy", "--profile", "smoke", "--backend", "ray"])
    assert "\n" not in str(exc.value)


def test_full_units_are_every_training_of_make_results():
    jobs = [pending.plan(call) for call, _ in cluster.full_units()]
    assert all(isinstance(j, pending.Pending) for j in jobs)  # planned, none trained
    assert [j.name for j in jobs] == (
        [f"copy-{a}" for a in copying.ARCH_LABELS]
        + [f"copy-{c.model.arch}-w{c.model.d_model}" for c in copying.width_suite("full")]
        + [f"copy-{a}-r{n}" for a, ns in copying.experiments.SHORT_RANGE.items() for n in ns]
        + [f"copy-{a}-l{n}" for a, ns in copying.experiments.DEPTHS.items() for n in ns]
        + ["copy-finetune-paper", "copy-finetune"])


@needs_ray
def test_ray_matches_inprocess_and_retries_a_killed_worker(ray_cluster, reference, monkeypatch):
    for old in ray_cluster.checkpoints.glob("*"):  # the workers train from scratch
        old.unlink()
    written, killed, done = [], [], {}
    real = results.save

    def recording(job, *a, **k):
        written.append(job.path)
        return real(job, *a, **k)

    def kill_first(event, info):
        if event == "dispatch" and not killed:
            killed.append(_worker_of_task())
            os.kill(killed[0], signal.SIGKILL)
        if event == "done":
            done[info["name"]] = info["pid"]

    monkeypatch.setattr(results, "save", recording)
    twin = (partial(copying.cached_run, CFGS[0], "full", name="copy-twin"), CFGS[0])
    records, stats = cluster.run([*_jobs(), twin], distributed.ClusterConfig(workers=2),
                                 callback=kill_first)
    assert stats["units"] == 3 and stats["failed"] == 0 and stats["skipped"] == 0
    assert len(done) == 2  # the twin (same config, another name) trained once ...
    assert killed and killed[0] not in done.values()  # ... the killed task finished elsewhere
    assert len(written) == len(set(written)) == 3  # each result written once
    for rec, ref in zip(records, [*reference, reference[0]]):
        assert _blob(rec.path) == _blob(ref)
    assert [r.path.name for r in records[:2]] == [ref.name for ref in reference]
    for rec in records:
        prov = json.loads(rec.path.read_text())["provenance"]
        assert prov["backend"] == "ray" and prov["device"] == "cpu" and prov["profile"] == "full"


@needs_ray
def test_restart_computes_only_the_missing_results(ray_cluster, reference):
    store = results.store_root("full", heavy=False)  # this test's temporary store
    kept = store / "copying" / reference[0].name  # stored by an earlier, interrupted run
    kept.parent.mkdir(parents=True)
    kept.write_text(reference[0].read_text())
    before = kept.stat().st_mtime_ns
    bad = lambda: results.cached("bad", lambda: int("boom"), {"k": 1}, chapter="copying",  # noqa: E731
                                 profile="full")
    records, stats = cluster.run([*_jobs(), (bad, None)],
                                 distributed.ClusterConfig(address=ray_cluster.address))
    assert stats["units"] == 1 and stats["skipped"] == 1 and stats["failed"] == 1
    assert records[2] is None and stats["errors"] == [
        "bad: ValueError: invalid literal for int() with base 10: 'boom'"]  # left for a rerun
    assert kept.stat().st_mtime_ns == before and records[0].loaded  # left as it was
    assert _blob(records[1].path) == _blob(reference[1])
    _, again = cluster.run(_jobs())  # everything stored: nothing to compute, no cluster needed
    assert again["units"] == 0 and again["skipped"] == 2 and again["workers"] == 0
