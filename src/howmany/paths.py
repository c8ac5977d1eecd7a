"""Where the package's checkout and its committed results are.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path | None:
    """The checkout holding this package (editable install), or ``None`` when installed.

    Explained in: book/reproducibility.md
    """
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").exists() and (root / "book").is_dir() else None


def data_dir() -> Path:
    """Where committed results live: ``$HOWMANY_DATA`` or ``<repo>/data`` (else ``./data``).

    Explained in: book/reproducibility.md
    """
    if os.environ.get("HOWMANY_DATA"):
        return Path(os.environ["HOWMANY_DATA"])
    root = repo_root()
    return (root if root is not None else Path.cwd()) / "data"
