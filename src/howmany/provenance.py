"""Provenance: where a stored number came from.

Every result the book stores (``howmany.results``) carries a ``provenance`` record: the git
commit of the code that computed it and whether that code (``src/``, ``pyproject.toml``) had
uncommitted changes, both read once, when the process stores its first result, so that a run of
hours records the code it started with, not a later commit; the versions of
the packages the run actually used, the machine (with its processor model), the device and
dtype, the seed, the UTC time, the wall time, the command line, and the pretrained models loaded
in the process (with their hub revision or the sha256 of their GGUF file). ``python -m howmany results`` lists them.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from . import __version__
from .paths import repo_root


def _git(*args: str) -> str | None:
    root = repo_root()
    if root is None:
        return None
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _versions() -> dict:
    out = {"howmany": __version__, "python": platform.python_version(), "numpy": np.__version__}
    for mod in ("torch", "transformers", "scipy", "sympy"):
        if mod in sys.modules:  # record what the run actually used, without importing more
            out[mod] = getattr(sys.modules[mod], "__version__", "?")
    return out


_CODE: dict | None = None  # the code this process runs: read at its first result


def code_state() -> dict:
    """``git_commit`` and ``git_dirty`` (uncommitted changes to ``src/`` or ``pyproject.toml``)
    of the code this process runs, read on the first call and kept.

    Explained in: book/reproducibility.md
    """
    global _CODE
    if _CODE is None:
        status = _git("status", "--porcelain", "--untracked-files=no", "--", "src", "pyproject.toml")
        _CODE = {"git_commit": _git("rev-parse", "HEAD"),
                 "git_dirty": None if status is None else bool(status)}
    return dict(_CODE)


@functools.cache
def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), or the architecture where it is not read.

    Wall times of runs on two machines compare only with their processors named.

    Explained in: book/reproducibility.md
    """
    try:
        info = Path("/proc/cpuinfo").read_text()
        return next(ln.split(":", 1)[1].strip() for ln in info.splitlines()
                    if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def provenance(*, seed=None, device=None, dtype=None, wall_s=None) -> dict:
    """Where a result came from: git commit and dirty flag, versions, machine, times."""
    return {
        **code_state(),
        "versions": _versions(),
        "machine": {"platform": platform.platform(), "processor": platform.machine(),
                    "cpu": cpu_model(), "cpu_count": os.cpu_count()},
        "device": device,
        "dtype": dtype,
        "seed": seed,
        "utc_time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": None if wall_s is None else round(float(wall_s), 3),
        "command": " ".join(sys.argv),
        # pretrained models loaded in this process, with their hub revision or GGUF sha256
        "models_loaded": dict(getattr(sys.modules.get("howmany.models"), "LOADED", {})),
    }
