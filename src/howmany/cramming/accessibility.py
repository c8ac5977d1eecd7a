"""From per-string cramming thresholds to A(n), n50(m) and the slope of n50 against m.

A string's *threshold* is its largest crammable prefix length: the string's first ``k`` tokens
can be produced by greedy decoding from some soft prompt iff ``k <= threshold`` (success is monotone
in the prefix). The empirical accessible fraction (Def. 4.1, estimated as in the paper's §5) is
``A(n) = #{strings with threshold >= n} / #strings``; ``n50`` is where ``A`` crosses 1/2 — the
median threshold, or the midpoint of the paper's logistic fit. The paper's experimental slope is
the OLS slope of ``n50`` against the prompt length ``m`` (compared with Cor. 4.6's bound ``C``).

Explained in: book/cramming.md
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit


def accessible_fraction(thresholds, n_grid) -> np.ndarray:
    """A(n): fraction of strings whose threshold is at least ``n``, for each ``n`` of ``n_grid``.

    Explained in: book/cramming.md
    """
    thr = np.asarray(thresholds, dtype=float)
    return (thr[None, :] >= np.asarray(n_grid, dtype=float)[:, None]).mean(axis=1)


def n50_grid(grid, frac) -> float:
    """The paper's grid estimator of n50: where the accessible fraction ``frac`` measured on
    ``grid`` first falls below 1/2, by linear interpolation between grid lengths; the first
    length when it starts below 1/2, the last when it never falls (censored by the grid).

    Explained in: book/cramming.md
    """
    grid, frac = np.asarray(grid, float), np.asarray(frac, float)
    if frac[0] < 0.5:
        return float(grid[0])
    for k in range(1, len(grid)):
        if frac[k] < 0.5:
            return float(grid[k - 1] + (frac[k - 1] - 0.5) / (frac[k - 1] - frac[k])
                         * (grid[k] - grid[k - 1]))
    return float(grid[-1])


def n50_median(thresholds) -> float:
    """Empirical n50: the median threshold (A(n) >= 1/2 exactly up to it).

    Explained in: book/cramming.md
    """
    return float(np.median(np.asarray(thresholds, dtype=float)))


def logistic(n, n50, width):
    """Decreasing logistic ``1 / (1 + exp((n - n50) / width))`` used to fit A(n)."""
    return 1.0 / (1.0 + np.exp(np.clip((n - n50) / width, -60, 60)))


def n50_logistic(thresholds) -> tuple[float, float]:
    """The paper's estimate: least-squares logistic fit of A(n) over n = 1..max; returns (n50, width).

    Explained in: book/cramming.md
    """
    thr = np.asarray(thresholds, dtype=float)
    grid = np.arange(1, max(2.0, thr.max() + 2) + 1)
    a = accessible_fraction(thr, grid)
    med = max(n50_median(thr), 0.5)
    try:
        with warnings.catch_warnings():  # degenerate samples give no covariance; we do not use it
            warnings.simplefilter("ignore", OptimizeWarning)
            (n50, width), _ = curve_fit(logistic, grid, a, p0=(med, max(1.0, thr.std() / 2)),
                                        bounds=([0.0, 1e-3], [grid[-1] * 2, grid[-1] * 2]),
                                        maxfev=5000)
    except (RuntimeError, ValueError):  # degenerate sample (e.g. all thresholds equal)
        n50, width = med, 1e-3
    return float(n50), float(width)


@dataclass(frozen=True)
class N50:
    """n50 of one prompt length with bootstrap 95 % intervals over strings."""

    m: int  # soft-prompt length
    n_strings: int  # strings with a threshold
    median: float  # empirical n50 (median threshold)
    median_lo: float  # 2.5 % bootstrap quantile
    median_hi: float  # 97.5 % bootstrap quantile
    logistic: float  # n50 of the logistic fit
    logistic_lo: float
    logistic_hi: float
    width: float  # logistic width (tokens)

    def to_dict(self) -> dict:
        return asdict(self)


def n50_with_ci(m: int, thresholds, *, n_boot: int = 500, seed: int = 0) -> N50:
    """n50 (median and logistic) with percentile-bootstrap 95 % CIs, resampling strings.

    Explained in: book/cramming.md
    """
    thr = np.asarray(thresholds, dtype=float)
    rng = np.random.default_rng(seed)
    boots = rng.choice(thr, size=(n_boot, thr.size), replace=True)
    meds = np.median(boots, axis=1)
    logs = np.array([n50_logistic(b)[0] for b in boots[: max(50, n_boot // 5)]])
    n50, width = n50_logistic(thr)
    q = lambda x: np.quantile(x, [0.025, 0.975])  # noqa: E731
    (mlo, mhi), (llo, lhi) = q(meds), q(logs)
    return N50(int(m), int(thr.size), n50_median(thr), float(mlo), float(mhi),
               n50, float(llo), float(lhi), width)


@dataclass(frozen=True)
class SlopeFit:
    """OLS fit ``n50 = slope * m + intercept`` with R² and a bootstrap 95 % CI of the slope."""

    slope: float  # tokens per prompt vector
    intercept: float  # tokens
    r2: float  # coefficient of determination
    slope_lo: float  # 2.5 % bootstrap quantile (strings resampled within each m)
    slope_hi: float  # 97.5 % bootstrap quantile

    def to_dict(self) -> dict:
        return asdict(self)


def ols(x, y) -> tuple[float, float, float]:
    """Ordinary least squares of ``y`` on ``x``: (slope, intercept, R²).

    Explained in: book/cramming.md
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    slope, intercept = np.polyfit(x, y, 1)
    ss_res = float(((y - (slope * x + intercept)) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return float(slope), float(intercept), float(r2)


def slope_fit(thresholds_by_m: dict, *, estimator: str = "median", n_boot: int = 500,
              seed: int = 0) -> SlopeFit:
    """OLS slope of n50 vs m (``estimator`` = "median" or "logistic"), bootstrap CI over strings.

    Args:
        thresholds_by_m: ``{m: array of per-string thresholds}``, at least two values of m.

    Explained in: book/cramming.md
    """
    if len(thresholds_by_m) < 2:
        raise ValueError("a slope needs thresholds for at least two prompt lengths m")
    est = n50_median if estimator == "median" else (lambda t: n50_logistic(t)[0])
    ms = sorted(thresholds_by_m)
    arrs = [np.asarray(thresholds_by_m[m], dtype=float) for m in ms]
    slope, intercept, r2 = ols(ms, [est(a) for a in arrs])
    rng = np.random.default_rng(seed)
    n_boot = n_boot if estimator == "median" else max(50, n_boot // 5)
    boot = [ols(ms, [est(rng.choice(a, size=a.size)) for a in arrs])[0] for _ in range(n_boot)]
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return SlopeFit(slope, intercept, r2, float(lo), float(hi))
