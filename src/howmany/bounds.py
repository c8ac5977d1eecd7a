"""Closed forms of Meyer et al. (2026) in log space: packing, Thm 4.5, Cor 4.6, Cor 4.10.

Every count is a natural logarithm (counts such as ``(1 + 2r/eps)**(d*m)`` overflow float64).
Each closed form exists twice: a vectorised NumPy function here and a SymPy expression in
:data:`sym`; ``tests/test_bounds.py`` proves the two equal on random inputs.

Paper anchors (arXiv v1 numbering): packing bounds (Sec. 4, Appendix), Theorem 4.5 (count of
accessible sequences), Corollary 4.6 (slope bound C, threshold n*, accessible fraction),
Corollary 4.10 (unbounded context). The refinements of Sec. 5 / Table 1 (box, cone, ellipsoid,
non-uniform cells) are in :mod:`howmany.refinements`; the precision ``eps`` comes from
:mod:`howmany.precision`; the paper's tables from :mod:`howmany.table1`.

Arguments (all array-likes, broadcast against each other): ``r`` radius of the support of one
prompt vector; ``eps`` precision (side of an l_inf grid cell); ``d`` dimension of a prompt vector
(``d_model``); ``m`` prompt length in vectors; ``n`` output length in tokens; ``V`` vocabulary
size |V|; ``q`` order of the Wasserstein precision.
Returns: ``log_*`` functions give natural logs (nats); ``slope_*`` and ``n_*`` give tokens
(per prompt vector for slopes).

Explained in: book/packing.md, book/counting.md, book/threshold.md, book/unbounded.md
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import sympy as sp

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


# ------------------------------------------------------------------------------ SymPy twins


def _build_sym() -> SimpleNamespace:
    """SymPy symbols and closed forms mirroring the NumPy functions above (same names)."""
    r, eps, d, m, n, V, q = sp.symbols("r epsilon d m n V q", positive=True)
    L = sp.log(1 + 2 * r / eps)  # nats per coordinate
    packing_upper = (1 + 2 * r / eps) ** d
    N_m = (1 + 2 * r / eps) ** (d * m)  # Thm 4.5 count bound
    C = d * L / sp.log(V)  # Cor 4.6 slope
    G = (1 + 2 * r / eps) ** d  # atoms of the eps-grid (Thm 4.9)
    N_inf = (sp.E + sp.E * (2 * r / eps) ** q) ** G
    log_log_N_infinity = d * L + sp.log(1 + sp.log(1 + (2 * r / eps) ** q))
    return SimpleNamespace(
        r=r, eps=eps, d=d, m=m, n=n, V=V, q=q, L=L,
        packing_upper=packing_upper, log_packing_upper=d * L, log_packing_lower=d * sp.log(r / eps),
        log_grid_count=d * sp.log(sp.floor(2 * r / eps) + 1),
        N_m=N_m, log_n_accessible_upper=d * m * L, C=C, n_star=C * m,
        A_bound=N_m / V**n,  # before the min with 1
        log_accessible_fraction_upper=sp.Min(0, d * m * L - n * sp.log(V)),
        n50_upper=C * m + sp.log(2) / sp.log(V),
        G=G, N_inf=N_inf, log_log_N_infinity=log_log_N_infinity,
        log_n_infinity=log_log_N_infinity - sp.log(sp.log(V)),
    )


sym = _build_sym()
"""Symbols (``sym.r, sym.eps, sym.d, sym.m, sym.n, sym.V, sym.q``) and expressions
(``sym.C``, ``sym.A_bound``, ``sym.n_star``, ``sym.N_inf``, ...) for assertions in the chapters."""


def latex(expr) -> str:
    r"""LaTeX of a SymPy expression in the book's notation: ln, varepsilon and |V|.

    >>> print(latex(sym.C))
    \frac{d \ln{\left(1 + \frac{2 r}{\varepsilon} \right)}}{\ln|V|}

    Explained in: book/threshold.md
    """
    text = sp.latex(expr, ln_notation=True, symbol_names={sym.eps: r"\varepsilon", sym.V: "|V|"})
    return text.replace(r"\ln{\left(|V| \right)}", r"\ln|V|")
