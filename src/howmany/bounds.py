"""Closed forms of Meyer et al. (2026) in log space: packing, Thm 4.5, Cor 4.6, Cor 4.10, refinements.

Every count is a natural logarithm (counts such as ``(1 + 2r/eps)**(d*m)`` overflow float64).
Each closed form exists twice: a vectorised NumPy function here and a SymPy expression in
:data:`sym`; ``tests/test_bounds.py`` proves the two equal on random inputs.

Paper anchors (arXiv v1 numbering): packing bounds (Sec. 4, Appendix), Theorem 4.5 (count of
accessible sequences), Corollary 4.6 (slope bound C, threshold n*, accessible fraction),
Corollary 4.10 (unbounded context), Sec. 5 / Table 1 refinements (box, cone, non-uniform cells).
The precision ``eps`` comes from :mod:`howmany.precision`; the paper's tables from
:mod:`howmany.table1`.

Arguments (all array-likes, broadcast against each other): ``r`` radius of the support of one
prompt vector; ``eps`` precision (side of an l_inf grid cell); ``d`` dimension of a prompt vector
(``d_model``); ``m`` prompt length in vectors; ``n`` output length in tokens; ``V`` vocabulary
size |V|; ``q`` order of the Wasserstein precision; ``phi`` cone half-angle in radians.
Returns: ``log_*`` functions give natural logs (nats); ``slope_*`` and ``n_*`` give tokens
(per prompt vector for slopes).

Explained in: book/counting.md, book/threshold.md, book/unbounded.md, book/refined.md
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import sympy as sp
from scipy import special

LN2 = float(np.log(2.0))

# ----------------------------------------------------------------------------- packing (Sec. 2)


def log_packing_upper(r, eps, d):
    """Volume bound on the packing number of a radius-``r`` ball: ``d * ln(1 + 2r/eps)``.

    >>> round(float(np.exp(log_packing_upper(1.0, 1.0, 2))), 9)  # (1 + 2)^2
    9.0

    Explained in: book/packing.md
    """
    return np.asarray(d, dtype=float) * np.log1p(2.0 * np.asarray(r, float) / np.asarray(eps, float))


def log_packing_lower(r, eps, d):
    """Covering lower bound ``d * ln(r/eps)`` (vol(B_r)/vol(B_eps)).

    Explained in: book/packing.md
    """
    return np.asarray(d, dtype=float) * np.log(np.asarray(r, float) / np.asarray(eps, float))


def log_grid_count(r, eps, d):
    """Exact l_inf packing of ``[-r, r]^d``: ``d * ln(floor(2r/eps) + 1)``.

    >>> round(float(np.exp(log_grid_count(1.0, 0.5, 1))), 9)  # points -1, -0.5, 0, 0.5, 1
    5.0

    Explained in: book/packing.md
    """
    per_axis = np.floor(2.0 * np.asarray(r, float) / np.asarray(eps, float)) + 1.0
    return np.asarray(d, dtype=float) * np.log(per_axis)


# ------------------------------------------------------------------ Thm 4.5 and Cor 4.6 (Sec. 3-4)


def log_n_accessible_upper(r, eps, d, m):
    """Thm 4.5: ln #accessible sequences <= d*m*ln(1 + 2r/eps), for every output length n.

    Explained in: book/counting.md
    """
    return np.asarray(m, dtype=float) * log_packing_upper(r, eps, d)


def slope_bound(d, r, eps, V):
    """Cor 4.6 slope ``C = d ln(1 + 2r/eps) / ln|V|`` (tokens per prompt vector).

    Args:
        d: dimension of a prompt vector. r: radius of the support. eps: precision. V: |V|.

    >>> round(float(slope_bound(768, 63.62, 2.0**-10, 50304)), 1)
    835.5

    Explained in: book/threshold.md
    """
    return log_packing_upper(r, eps, d) / np.log(np.asarray(V, dtype=float))


def n_star(m, d, r, eps, V):
    """Cor 4.6 threshold ``n*(m) = C m``: beyond it some strings of length n are inaccessible.

    Explained in: book/threshold.md
    """
    return np.asarray(m, dtype=float) * slope_bound(d, r, eps, V)


def log_accessible_fraction_upper(n, m, d, r, eps, V):
    """Cor 4.6: ``ln A(n, m) <= min(0, d m ln(1+2r/eps) - n ln|V|) = -ln|V| (n - Cm)_+``.

    Explained in: book/threshold.md
    """
    log_count = log_n_accessible_upper(r, eps, d, m) - np.asarray(n, float) * np.log(np.asarray(V, float))
    return np.minimum(0.0, log_count)


def n50_upper(m, d, r, eps, V):
    """Length where the fraction bound reaches 1/2: ``n50(m) <= C m + ln 2 / ln|V|``.

    Explained in: book/threshold.md
    """
    return n_star(m, d, r, eps, V) + LN2 / np.log(np.asarray(V, dtype=float))


# --------------------------------------------------------------------------- Cor 4.10 (Sec. 5)


def log_log_N_infinity(d, r, eps, q=1):
    """ln ln N_inf with ``N_inf = (e + e (2r/eps)^q)^((1 + 2r/eps)^d)`` (Thm 4.9), independent of m.

    Both logs are needed: ln N_inf itself is ``(1+2r/eps)^d * ...`` and overflows float64.

    Explained in: book/unbounded.md
    """
    ratio = 2.0 * np.asarray(r, float) / np.asarray(eps, float)
    log_base = 1.0 + np.log1p(ratio ** np.asarray(q, float))  # ln(e (1 + (2r/eps)^q))
    return log_packing_upper(r, eps, d) + np.log(log_base)


def log_n_infinity(d, r, eps, V, q=1):
    """Cor 4.10: ln n_inf, ``n_inf = ln N_inf / ln|V|``: beyond it inaccessible strings exist for all m.

    Explained in: book/unbounded.md
    """
    return log_log_N_infinity(d, r, eps, q) - np.log(np.log(np.asarray(V, dtype=float)))


def log_threshold_both(m, d, r, eps, V, q=1):
    """ln min(C m, n_inf): the threshold when both Thm 4.5 and Cor 4.10 apply.

    Explained in: book/unbounded.md
    """
    return np.minimum(np.log(n_star(m, d, r, eps, V)), log_n_infinity(d, r, eps, V, q))


# ------------------------------------------------------------------ refinements (Sec. 5, Table 1)


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
    return (log_packing_upper(r, eps, d) + log_f) / np.log(np.asarray(V, float))


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


# ------------------------------------------------------------------------------ SymPy twins


def _build_sym() -> SimpleNamespace:
    """SymPy symbols and closed forms mirroring the NumPy functions above (same names)."""
    r, eps, d, m, n, V, q, phi, log_P, mu = sp.symbols("r epsilon d m n V q phi log_P mu", positive=True)
    i, t = sp.symbols("i t", integer=True, positive=True)
    w, p = sp.IndexedBase("w", positive=True), sp.IndexedBase("p", positive=True)
    L = sp.log(1 + 2 * r / eps)  # nats per coordinate
    packing_upper = (1 + 2 * r / eps) ** d
    N_m = (1 + 2 * r / eps) ** (d * m)  # Thm 4.5 count bound
    C = d * L / sp.log(V)  # Cor 4.6 slope
    G = (1 + 2 * r / eps) ** d  # atoms of the eps-grid (Thm 4.9)
    N_inf = (sp.E + sp.E * (2 * r / eps) ** q) ** G
    log_log_N_infinity = d * L + sp.log(1 + sp.log(1 + (2 * r / eps) ** q))
    mu_cells = -sp.Sum(sp.log(p[t]), (t, 1, V)) / V
    return SimpleNamespace(
        r=r, eps=eps, d=d, m=m, n=n, V=V, q=q, phi=phi, log_P=log_P, mu=mu, i=i, t=t, w=w, p=p, L=L,
        packing_upper=packing_upper, log_packing_upper=d * L, log_packing_lower=d * sp.log(r / eps),
        log_grid_count=d * sp.log(sp.floor(2 * r / eps) + 1),
        N_m=N_m, log_n_accessible_upper=d * m * L, C=C, n_star=C * m,
        A_bound=N_m / V**n,  # before the min with 1
        log_accessible_fraction_upper=sp.Min(0, d * m * L - n * sp.log(V)),
        n50_upper=C * m + sp.log(2) / sp.log(V),
        G=G, N_inf=N_inf, log_log_N_infinity=log_log_N_infinity,
        log_n_infinity=log_log_N_infinity - sp.log(sp.log(V)),
        frac_cone=sp.betainc_regularized((d - 1) / 2, sp.Rational(1, 2), 0, sp.sin(phi) ** 2) / 2,
        frac_cone_2=phi / sp.pi, frac_cone_3=(1 - sp.cos(phi)) / 2,
        slope_box=sp.Sum(sp.log(1 + w[i] / eps), (i, 1, d)) / sp.log(V),
        mu_cells=mu_cells, slope_cells=log_P / mu,
        log_unit_ball_volume=d / 2 * sp.log(sp.pi) - sp.loggamma(d / 2 + 1),
    )


sym = _build_sym()
"""Symbols (``sym.r, sym.eps, sym.d, sym.m, sym.n, sym.V, sym.q, sym.phi``) and expressions
(``sym.C``, ``sym.A_bound``, ``sym.n_star``, ``sym.N_inf``, ...) for assertions in the chapters."""


def latex(expr) -> str:
    r"""LaTeX of a SymPy expression in the book's notation: ln, varepsilon and |V|.

    >>> print(latex(sym.C))
    \frac{d \ln{\left(1 + \frac{2 r}{\varepsilon} \right)}}{\ln|V|}

    Explained in: book/threshold.md
    """
    text = sp.latex(expr, ln_notation=True, symbol_names={sym.eps: r"\varepsilon", sym.V: "|V|"})
    return text.replace(r"\ln{\left(|V| \right)}", r"\ln|V|")
