"""Figure style and saving, shared by every chapter.

Library code returns values and never plots; the small ``ax``-taking helpers of each
chapter live here when they are used more than once.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

from ..paths import repo_root

BOUND_STYLE = dict(color="0.2", linestyle="--", linewidth=1.5)  # bounds: dashed dark grey
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")  # measurements: markers tell curves apart


def set_style() -> None:
    """Seaborn whitegrid, colorblind palette, embedded TrueType fonts in PDFs.

    Explained in: book/reproducibility.md
    """
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    matplotlib.rcParams.update(
        {"pdf.fonttype": 42, "ps.fonttype": 42, "figure.dpi": 110, "savefig.bbox": "tight"}
    )


def figures_dir() -> Path:
    """``$HOWMANY_FIGURES`` or ``<repo>/figures`` (git-ignored)."""
    if os.environ.get("HOWMANY_FIGURES"):
        return Path(os.environ["HOWMANY_FIGURES"])
    root = repo_root()
    return (root if root is not None else Path.cwd()) / "figures"


def savefig(fig, name: str):
    """Write ``figures/<name>.pdf`` and ``.png`` (unless ``HOWMANY_NO_SAVE_FIGS=1``); return ``fig``.

    Explained in: book/reproducibility.md
    """
    if os.environ.get("HOWMANY_NO_SAVE_FIGS", "0") not in ("1", "true", "yes"):
        out = figures_dir()
        out.mkdir(parents=True, exist_ok=True)
        for ext in ("pdf", "png"):
            fig.savefig(out / f"{name}.{ext}")
    return fig
