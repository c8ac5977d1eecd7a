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
BASELINE_COLOR = "0.55"  # a reference curve the others are read against: mid grey, solid
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")  # measurements: markers tell curves apart
# the colorblind palette without its vermillion (index 3), which is hard to tell from its orange,
# for figures with more curves than hues that stay apart (one colour per curve, by its place)
DISTINCT_COLORS = ("#0173b2", "#de8f05", "#029e73", "#cc78bc", "#ca9161", "#56b4e9", "#949494",
                   "#ece133", "#6a3d9a")


def distinct_color(i: int) -> str:
    """The ``i``-th of ``DISTINCT_COLORS``, cycling.

    Explained in: book/reproducibility.md
    """
    return DISTINCT_COLORS[i % len(DISTINCT_COLORS)]


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
