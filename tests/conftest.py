"""Shared fixtures: fixed seeds, a temporary results store, no figure files."""

import os
import random

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


@pytest.fixture(scope="session")
def repo_root():
    from howmany.utils import repo_root

    root = repo_root()
    assert root is not None, "tests run from the editable checkout"
    return root


def pytest_report_header(config):
    return f"howmany tests (torch threads: {os.environ.get('OMP_NUM_THREADS', 'default')})"
