"""What a chapter page needs from the package: glue a computed value, show a function's source.

Every number a chapter prints in its prose is glued from a cell (``{glue:text}``), never typed;
:func:`glue` makes NumPy and torch scalars plain first, and on Colab, where myst-nb is absent, it
just returns the value. :func:`glue_math` glues an equation for ``{glue:math}``.
:func:`show_source` displays the code a chapter talks about, read from the package itself, so the
page never carries a pasted copy that could drift.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np


def show_source(obj: Any):
    """Display the source of a package function or class in the book (never paste code).

    Explained in: book/reproducibility.md
    """
    from IPython.display import Code

    return Code(inspect.getsource(obj), language="python")


def plain(value: Any) -> Any:
    """Convert NumPy/torch scalars to plain ``int``/``float``/``bool`` (myst-nb glue needs them).

    Explained in: book/reproducibility.md
    """
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


def glue_math(key: str, latex: str) -> str:
    """Glue a LaTeX equation for ``{glue:math}`` (as an IPython ``Math`` object); returns ``latex``.

    Pair it with :func:`howmany.bounds.latex`, which writes SymPy in the book's notation.

    Explained in: book/threshold.md
    """
    from IPython.display import Math

    glue(key, Math(latex), display=False)
    return latex
