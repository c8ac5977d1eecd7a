"""Figure helpers for the book's theory chapters: functions that draw on a given ax.

Each public function is listed in __all__ (re-exported by howmany.plotting).
"""

__all__: list[str] = []


# --- counting / threshold / unbounded chapters (closed forms from howmany.bounds) -----------------
import matplotlib as _mpl  # noqa: E402
import numpy as _np  # noqa: E402

from .style import BOUND_STYLE as _BOUND  # noqa: E402


def plot_fraction_cliff(ax, n, log10_fraction, labels, *, cmap="viridis"):
    """Cor 4.6 accessible-fraction bound (log10) against n: one dashed hinge per prompt length.

    Args:
        ax: matplotlib axes. n: output lengths, shape [n]. log10_fraction: [curves, n].
        labels: one legend label per curve.

    Explained in: book/threshold.md
    """
    colours = _mpl.colormaps[cmap](_np.linspace(0.1, 0.85, len(labels)))
    for row, label, colour in zip(log10_fraction, labels, colours):
        ax.plot(n, row, linestyle="--", linewidth=1.6, color=colour, label=label)
    ax.set(xlabel="output length n (tokens)", ylabel=r"log$_{10}$ bound on $A(n, m)$")
    ax.legend(frameon=False)
    return ax


def plot_bound_curves(ax, x, curves, *, xlabel, ylabel, logx=False, cmap="viridis"):
    """Several bounds against one variable (dashed, sequential colours); ``curves``: label -> y.

    Explained in: book/threshold.md
    """
    colours = _mpl.colormaps[cmap](_np.linspace(0.1, 0.85, len(curves)))
    for (label, y), colour in zip(curves.items(), colours):
        ax.plot(x, y, linestyle="--", linewidth=1.6, color=colour, label=label)
    ax.set(xlabel=xlabel, ylabel=ylabel, xscale="log" if logx else "linear")
    ax.legend(frameon=False)
    return ax


def plot_threshold_min(ax, m, c_m, n_inf):
    """min(C m, n_inf): the fixed-length threshold (grows with m) capped by the Cor 4.10 one.

    Explained in: book/unbounded.md
    """
    ax.plot(m, c_m, color="0.6", linestyle=":", linewidth=1.2, label=r"$C\,m$ (Cor 4.6)")
    ax.axhline(n_inf, color="0.6", linestyle="-.", linewidth=1.2, label=r"$n_\infty$ (Cor 4.10)")
    ax.plot(m, _np.minimum(c_m, n_inf), **_BOUND, label=r"$\min(C\,m,\ n_\infty)$")
    ax.set(xlabel="prompt length m (vectors)", ylabel="threshold length (tokens)")
    ax.legend(frameon=False)
    return ax


__all__ += ["plot_fraction_cliff", "plot_bound_curves", "plot_threshold_min"]
