"""The refined bounds of Meyer et al. (2026, Sec. 5, Table 1): box, cone, ellipsoid, unequal cells.

Theorem 4.5 counts the eps-packing of a whole ball of radius r (:mod:`howmany.bounds`). Real
prompt vectors fill less than that ball, and the decoder does not give every token an equal
share of the output space; each refinement replaces one of the two by a measured shape: a box
of per-coordinate widths, a cone of half-angle ``phi`` (the fraction f_d(phi) of the ball it
holds), an ellipsoid of semi-axes ``a_i``, or decoder cells of volume fractions ``p_t`` (their
entropy rate mu replaces ln|V|). Every form is in log space, vectorised NumPy, with a SymPy
twin in :data:`sym` (``tests/test_refinements.py`` proves the two equal). The Monte Carlo
checks of these volume fractions are in :mod:`howmany.volumes`.

Arguments as in :mod:`howmany.bounds`, plus ``phi`` (cone half-angle in radians), ``widths``
and ``semi_axes`` (on the last axis), ``p`` (cell fractions, last axis = tokens), ``log_P``
(ln of the packing count) and ``mu`` (nats per token).

Explained in: book/refined.md
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import sympy as sp
from scipy import special

from . import bounds
from .bounds import LN2

def _log_half_betainc(a, x):
    """ln(I_x(a, 1/2) / 2) for x in [0, 1], stable when I underflows (hypergeometric series)."""
    a, x = np.broadcast_arrays(np.asarray(a, float), np.asarray(x, float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = np.log(special.betainc(a, 0.5, x)) - LN2
        # I_x(a,b) = x^a (1-x)^b / (a B(a,b)) * 2F1(a+b, 1; a+1; x), here b = 1/2
        series = (a * np.log(x) + 0.5 * np.log1p(-x) - np.log(a) - special.betaln(a, 0.5)
                  + np.log(special.hyp2f1(a + 0.5, 1.0, a + 1.0, x)) - LN2)
    return np.where(np.isfinite(direct) & (direct > -600.0), direct, series)


def log_frac_cone(d, phi):
    """ln f_d(phi): exact fraction of the l2 ball of R^d inside a cone of half-angle ``phi``.

    ``f = I_{sin^2 phi}((d-1)/2, 1/2) / 2`` for phi <= pi/2 and ``1 - that`` beyond; stable at
    d = 768 and for tiny fractions. Checks: f_2 = phi/pi, f_3 = (1 - cos phi)/2.

    >>> round(float(np.exp(log_frac_cone(3, np.pi / 3))), 12)
    0.25

    Explained in: book/refined.md
    """
    d, phi = np.broadcast_arrays(np.asarray(d, float), np.asarray(phi, float))
    log_small = _log_half_betainc((d - 1.0) / 2.0, np.sin(phi) ** 2)
    return np.where(phi <= np.pi / 2, log_small, np.log1p(-np.exp(np.minimum(log_small, 0.0))))


def log_frac_cone_authors(d, phi):
    """The authors' ``log_frac_cone`` in exact arithmetic: ``ln(4 f_d(phi))``, too large by ln 4.

    Reproduces the Cone row of Table 1 (THEORY.md Sec. 6); not a fraction (can exceed 0).

    Explained in: book/refined.md
    """
    return log_frac_cone(d, phi) + 2.0 * LN2


def frac_cone_cap_split(d, phi):
    """f_d(phi) as cone + cap (paper Fig. 6): ``V_{d-1}/(d V_d) sin^{d-1} cos + cap``.

    The cone term is negative for phi > pi/2, where the cap exceeds a half ball.

    Explained in: book/refined.md
    """
    d, phi = np.broadcast_arrays(np.asarray(d, float), np.asarray(phi, float))
    log_ratio = special.gammaln(d / 2 + 1) - special.gammaln((d + 1) / 2) - 0.5 * np.log(np.pi)
    cone = np.exp(log_ratio - np.log(d) + (d - 1) * np.log(np.sin(phi))) * np.cos(phi)
    half_cap = 0.5 * special.betainc((d + 1) / 2, 0.5, np.sin(phi) ** 2)
    return cone + np.where(phi <= np.pi / 2, half_cap, 1.0 - half_cap)


def slope_box(widths, eps, V):
    """Box (code "rect") slope ``sum_i ln(1 + w_i/eps) / ln|V|``; widths on the last axis.

    Explained in: book/refined.md
    """
    logs = np.log1p(np.asarray(widths, float) / np.asarray(eps, float)[..., None])
    return logs.sum(axis=-1) / np.log(np.asarray(V, float))


def log_unit_ball_volume(d):
    """ln V_d, volume of the unit l2 ball: ``(d/2) ln pi - ln Gamma(d/2 + 1)``.

    Explained in: book/refined.md
    """
    d = np.asarray(d, dtype=float)
    return 0.5 * d * np.log(np.pi) - special.gammaln(d / 2 + 1)


def log_ellipsoid_volume_count(semi_axes, eps):
    """(reconstructed) Volume count of an ellipsoid: ``sum_i ln(2 a_i/eps) + ln(V_d / 2^d)``.

    Compare :func:`slope_box` with widths ``2 a_i`` (its bounding box); semi-axes on the last axis.

    Explained in: book/refined.md
    """
    a = np.asarray(semi_axes, dtype=float)
    d = a.shape[-1]
    return np.log(2 * a / np.asarray(eps, float)[..., None]).sum(-1) + log_unit_ball_volume(d) - d * LN2


def slope_cone(d, r, eps, V, phi, *, authors=False):
    """Cone slope ``[d ln(1+2r/eps) + ln f_d(phi)] / ln|V|`` (``authors=True``: ln 4 f_d).

    Explained in: book/refined.md
    """
    log_f = log_frac_cone_authors(d, phi) if authors else log_frac_cone(d, phi)
    return (bounds.log_packing_upper(r, eps, d) + log_f) / np.log(np.asarray(V, float))


def mu_from_fractions(p):
    """Cell entropy rate ``mu = -mean_t ln p_t`` (nats per token; last axis = tokens).

    Dead tokens (``p_t = 0``) make ``mu = inf`` (returned, no warning): they are never decoded,
    so random strings containing them are inaccessible. Negative ``p`` raises ``ValueError``.

    >>> float(mu_from_fractions([0.25, 0.25, 0.25, 0.25])) == float(np.log(4))
    True

    Explained in: book/refined.md
    """
    p = np.asarray(p, dtype=float)
    if np.any(p < 0) or np.any(~np.isfinite(p)):
        raise ValueError("cell fractions must be finite and >= 0")
    with np.errstate(divide="ignore"):
        return -np.log(p).mean(axis=-1)


def slope_cells(log_P, mu):
    """Non-uniform cells slope ``C_cell = ln P(E, eps) / mu`` (= C ln|V|/mu <= C by Jensen).

    Explained in: book/refined.md
    """
    return np.asarray(log_P, float) / np.asarray(mu, float)


def _build_sym() -> SimpleNamespace:
    """:data:`howmany.bounds.sym` plus the symbols and closed forms of the refinements."""
    b = bounds.sym
    d, eps, V = b.d, b.eps, b.V
    phi, log_P, mu = sp.symbols("phi log_P mu", positive=True)
    i, t = sp.symbols("i t", integer=True, positive=True)
    w, p = sp.IndexedBase("w", positive=True), sp.IndexedBase("p", positive=True)
    return SimpleNamespace(
        **vars(b), phi=phi, log_P=log_P, mu=mu, i=i, t=t, w=w, p=p,
        frac_cone=sp.betainc_regularized((d - 1) / 2, sp.Rational(1, 2), 0, sp.sin(phi) ** 2) / 2,
        frac_cone_2=phi / sp.pi, frac_cone_3=(1 - sp.cos(phi)) / 2,
        slope_box=sp.Sum(sp.log(1 + w[i] / eps), (i, 1, d)) / sp.log(V),
        mu_cells=-sp.Sum(sp.log(p[t]), (t, 1, V)) / V, slope_cells=log_P / mu,
        log_unit_ball_volume=d / 2 * sp.log(sp.pi) - sp.loggamma(d / 2 + 1),
    )


sym = _build_sym()
"""Every symbol and expression of :data:`howmany.bounds.sym`, plus ``phi``, ``w[i]``, ``p[t]``,
``log_P``, ``mu`` and ``frac_cone``, ``frac_cone_2``, ``frac_cone_3``, ``slope_box``,
``mu_cells``, ``slope_cells``, ``log_unit_ball_volume``."""
