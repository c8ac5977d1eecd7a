"""Shared fixtures: fixed seeds, a temporary results store, no figure files."""

import os
import random
from types import SimpleNamespace

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seeded_and_isolated(tmp_path, monkeypatch):
    """Every test: seeds fixed, results and figures redirected to a temporary folder."""
    random.seed(42)
    np.random.seed(42)
    monkeypatch.setenv("HOWMANY_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("HOWMANY_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("HOWMANY_NO_SAVE_FIGS", "1")
    yield


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A local Ray cluster of 2 CPUs for one test module: its ``address`` and the
    ``checkpoints`` folder its workers train into (``$HOWMANY_CHECKPOINTS``, apart from the
    tests'). Its workers keep the test's priority (Ray lowers it by 15 nice levels by default,
    which starves them on a busy shared machine). Both are read by the raylet ``ray.init``
    starts, whose environment the workers inherit."""
    from howmany import distributed

    ray = distributed.import_ray()
    ckpt = tmp_path_factory.mktemp("ray-checkpoints")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_worker_niceness", "0")
        mp.setenv("HOWMANY_CHECKPOINTS", str(ckpt))
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning")
    yield SimpleNamespace(address=ray.get_runtime_context().gcs_address, checkpoints=ckpt)
    ray.shutdown()


@pytest.fixture(scope="session")
def repo_root():
    from howmany.paths import repo_root

    root = repo_root()
    assert root is not None, "tests run from the editable checkout"
    return root


def pytest_report_header(config):
    return f"howmany tests (torch threads: {os.environ.get('OMP_NUM_THREADS', 'default')})"
