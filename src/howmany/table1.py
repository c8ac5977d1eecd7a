"""The paper's Tables 1 and 2 as data, and the bound rows of Table 1 recomputed from them.

Sources (THEORY.md Sec. 7): d, |V|, r (infinity-norm radius) and theta from Meyer et al. (2026)
Table 2; the PG-19 experimental slopes are the denominators of Table 1 (the authors' code,
``models_list.csv``, column "Slope exp"); |a| (median-convolution slope of the non-uniform
cells) is attached as needed to reproduce Table 1 row 4 (for Pythia-410M/1B and Llama/Gemma
this swaps the labels of the code's own table, kept as ``ABS_A_CODE_LABELS``; THEORY.md Sec. 7
*). ``PRINTED`` holds Table 1 as printed. Ratios are theoretical slope / experimental PG-19 slope.

Explained in: book/threshold.md, book/refined.md
"""

from __future__ import annotations

import numpy as np

from . import bounds, precision, refinements

CITATION = "meyer2026howmany"  # bib key; Tables 1 and 2

MODELS = (  # name, d, |V|, r, theta (rad), PG-19 slope, |a|
    ("Pythia-160M", 768, 50304, 63.62, 1.96, 90.4, 12.87),
    ("Pythia-410M", 1024, 50304, 54.90, 1.87, 112.4, 14.71),
    ("Pythia-1B", 2048, 50304, 65.68, 2.22, 287.4, 14.54),
    ("Qwen2.5-0.5B", 896, 151936, 309.00, 2.23, 71.0, 16.50),
    ("Qwen2.5-1.5B", 1536, 151936, 153.62, 2.34, 79.6, 16.87),
    ("Llama-3.2-1B", 2048, 128256, 41.06, 1.73, 137.8, 13.03),
    ("Gemma-3-270M", 640, 262144, 10.74, 1.82, 44.54, 15.79),
)
FIELDS = ("name", "d", "V", "r", "theta", "slope_pg19", "abs_a")

# |a| under the model labels of the authors' code's own table (THEORY.md Sec. 7 *): the same seven
# values as ``abs_a`` above, with Pythia-410M/1B and Llama/Gemma exchanged.
ABS_A_CODE_LABELS = {"Pythia-160M": 12.87, "Pythia-410M": 14.54, "Pythia-1B": 14.71,
                     "Qwen2.5-0.5B": 16.50, "Qwen2.5-1.5B": 16.87, "Llama-3.2-1B": 15.79,
                     "Gemma-3-270M": 13.03}

# n50(m) for m = 1..5, Qwen2.5-1.5B on PG-19: digitised from the authors' committed cramming figure
# (THEORY.md Sec. 7); their OLS slope is the Table 1 denominator 79.6 (legend: 79.56).
N50_QWEN15_PG19 = (50.0, 121.6, 204.3, 291.0, 363.1)

PRINTED_TEXT = {  # Table 1 of the paper as printed (theoretical / experimental PG-19 slope)
    "Ball": ("9.24", "9.79", "7.77", "14.1", "20.4", "14.3", "11.52"),
    "Cone": ("9.10", "9.60", "7.70", "14.01", "20.34", "13.98", "11.24"),
    "Ellipsoid": ("7.92", "8.15", "6.12", "10.96", "15.30", "11.86", "11.12"),
    "Ellipsoid + non-uniform cells": ("6.66", "5.99", "4.56", "7.92", "10.82", "10.71", "8.79"),
    "Ellipsoid + variable eps": ("8.65", "9.83", "7.71", "12.32", "18.81", "14.63", "13.42"),
}
PRINTED = {row: tuple(float(x) for x in vals) for row, vals in PRINTED_TEXT.items()}


def matches_printed(ours, row: str) -> np.ndarray:
    """Whether each value rounds to the printed Table 1 entry, at the printed number of decimals.

    Explained in: book/threshold.md
    """
    decimals = [len(text.split(".")[1]) for text in PRINTED_TEXT[row]]
    return np.array([round(float(x), k) == p for x, k, p in zip(ours, decimals, PRINTED[row])])


def models() -> list[dict]:
    """The seven models of Table 1 as dicts with keys ``FIELDS``.

    Explained in: book/threshold.md
    """
    return [dict(zip(FIELDS, row)) for row in MODELS]


def _column(key: str) -> np.ndarray:
    return np.array([row[FIELDS.index(key)] for row in MODELS], dtype=float)


def ball_slopes(convention: str = "absolute") -> np.ndarray:
    """Cor 4.6 slope C for each model, eps from the fp16 ``convention`` (paper: "absolute").

    Explained in: book/threshold.md
    """
    d, V, r = _column("d"), _column("V"), _column("r")
    return bounds.slope_bound(d, r, precision.epsilon("fp16", r, convention), V)


def table1_ball_row(convention: str = "absolute") -> np.ndarray:
    """Table 1 Ball row: C / PG-19 slope (printed to two decimals, Qwen2.5-1.5B 20.47 as 20.4).

    >>> [round(float(x), 2) for x in table1_ball_row()][:3]
    [9.24, 9.79, 7.77]

    Explained in: book/threshold.md
    """
    return ball_slopes(convention) / _column("slope_pg19")


def table1_cone_row(*, authors: bool = True, convention: str = "absolute") -> np.ndarray:
    """Table 1 Cone row: cone slope (half-angle theta/2) / PG-19 slope.

    ``authors=True`` uses the authors' cone fraction ln(4 f_d), which the printed row follows;
    ``False`` the exact sector fraction (lower by ln 4 / ln|V| / slope).

    Explained in: book/refined.md
    """
    d, V, r, phi = _column("d"), _column("V"), _column("r"), _column("theta") / 2
    eps = precision.epsilon("fp16", r, convention)
    return refinements.slope_cone(d, r, eps, V, phi, authors=authors) / _column("slope_pg19")


def cells_over_ellipsoid(*, labels: str = "attached") -> np.ndarray:
    """Expected ratio of Table 1 row 4 to row 3: ``ln|V| / |a|`` (same numerator, mu -> |a|).

    Args:
        labels: ``"attached"``, the |a| attached to reproduce row 4 (``abs_a``); ``"code"``, the
            labels of the authors' code's table (``ABS_A_CODE_LABELS``).

    Explained in: book/refined.md
    """
    if labels == "attached":
        abs_a = _column("abs_a")
    elif labels == "code":
        abs_a = np.array([ABS_A_CODE_LABELS[row[0]] for row in MODELS])
    else:
        raise ValueError(f"labels must be 'attached' or 'code', not {labels!r}")
    return np.log(_column("V")) / abs_a
