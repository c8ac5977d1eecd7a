"""Small generic helpers: paths, seeding, devices, showing source, gluing numbers.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import inspect
import os
import random
from pathlib import Path
from typing import Any

import numpy as np


def repo_root() -> Path | None:
    """The checkout holding this package (editable install), or ``None`` when installed."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").exists() and (root / "book").is_dir() else None


def data_dir() -> Path:
    """Where committed results live: ``$HOWMANY_DATA`` or ``<repo>/data`` (else ``./data``)."""
    if os.environ.get("HOWMANY_DATA"):
        return Path(os.environ["HOWMANY_DATA"])
    root = repo_root()
    return (root if root is not None else Path.cwd()) / "data"


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and (if imported) torch, so a run is reproducible."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # theory chapters run without torch
        pass


def resolve_device(device: str | None = "auto") -> str:
    """``"auto"``/``None`` → ``"cuda"`` when a GPU is visible, else ``"cpu"``; others pass through."""
    if device not in (None, "auto"):
        return str(device)
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def show_source(obj: Any):
    """Display the source of a package function or class in the book (never paste code).

    Explained in: book/reproducibility.md
    """
    from IPython.display import Code

    return Code(inspect.getsource(obj), language="python")


def plain(value: Any) -> Any:
    """Convert NumPy/torch scalars to plain ``int``/``float``/``bool`` (myst-nb glue needs them)."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value


def glue(key: str, value: Any, display: bool = False) -> Any:
    """``myst_nb.glue`` with NumPy scalars made plain; falls back to a no-op outside the book.

    On Colab (no myst-nb installed) the value is simply returned, so chapters still run.

    Explained in: book/reproducibility.md
    """
    value = plain(value)
    try:
        from myst_nb import glue as _glue
    except ImportError:
        return value
    _glue(key, value, display=display)
    return value
