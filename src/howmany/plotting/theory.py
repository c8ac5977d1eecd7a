"""Figure helpers for the book's theory chapters: functions that draw on a given ax.

Each public function is listed in __all__ (re-exported by howmany.plotting).

Explained in: book/accessible.md, book/packing.md, book/counting.md, book/threshold.md, book/unbounded.md and book/refined.md
"""

__all__: list[str] = []


# --- counting / threshold / unbounded chapters (closed forms from howmany.bounds) -----------------
import matplotlib as _mpl  # noqa: E402
import numpy as _np  # noqa: E402

from .style import BOUND_STYLE as _BOUND  # noqa: E402


def plot_fraction_cliff(ax, n, log10_fraction, labels, *, cmap="viridis", legend_loc="lower left"):
    """Cor 4.6 accessible-fraction bound (log10) against n: one dashed hinge per prompt length.

    Args:
        ax: matplotlib axes. n: output lengths, shape [n]. log10_fraction: [curves, n].
        labels: one legend label per curve.
        legend_loc: where the legend goes; the lower left stays empty (the bound is 1 for small n).

    Explained in: book/threshold.md
    """
    colours = _mpl.colormaps[cmap](_np.linspace(0.1, 0.85, len(labels)))
    for row, label, colour in zip(log10_fraction, labels, colours):
        ax.plot(n, row, linestyle="--", linewidth=1.6, color=colour, label=label)
    ax.set(xlabel="output length n (tokens)", ylabel=r"log$_{10}$ bound on $A(n, m)$")
    ax.legend(frameon=False, loc=legend_loc)
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


# --- accessible / packing / refined chapters (toy enumeration, packings, Monte Carlo) ------------
from .style import MARKERS as _MARKERS  # noqa: E402


def plot_output_counts(ax, n, counts, *, d_vocab, grid_counts):
    """Distinct greedy outputs vs n (markers, log10), |V|^n and each grid's Thm 4.5 bound (dashed).

    Args:
        ax: matplotlib axes. n: output lengths. counts: label -> distinct counts per n.
        d_vocab: |V|. grid_counts: label -> number of grid prompts (same labels as ``counts``).

    Explained in: book/accessible.md
    """
    n = _np.asarray(n)
    colours = _mpl.colormaps["viridis"](_np.linspace(0.1, 0.85, len(counts)))
    ax.plot(n, n * _np.log10(d_vocab), color="0.5", linestyle=":", linewidth=1.5,
            label=r"$|V|^n$ (all strings)")
    for i, ((label, c), colour) in enumerate(zip(counts.items(), colours)):
        ax.plot(n, _np.log10(c), marker=_MARKERS[i % len(_MARKERS)], color=colour, label=label)
        ax.axhline(_np.log10(grid_counts[label]), color=colour, linestyle="--", linewidth=1.2)
    top = max(_np.log10(list(grid_counts.values())).max(), _np.log10(max(map(max, counts.values()))))
    ax.set(xlabel="output length n (tokens)", ylabel=r"log$_{10}$ #distinct outputs",
           ylim=(-0.1, top + 0.8))
    ax.legend(frameon=False, fontsize="small", loc="upper left")
    return ax


def plot_prompt_plane(ax, labels, r, *, cmap="tab20"):
    """The prompt plane [-r, r]^2 coloured by the greedy output of each grid point (``cmap`` up to
    20 outputs, golden-ratio hues beyond).

    Args:
        ax: axes. labels: [G, G] integer output label of grid point (x_i, y_j), indexed [i, j].
        r: half-width of the plane.

    Explained in: book/accessible.md
    """
    lab = _np.asarray(labels)
    k = _np.arange(lab.max() + 1)
    if len(k) <= 20:
        colours = _mpl.colormaps[cmap](k)
    else:  # golden-ratio hues: many labels, neighbours in label order far apart in colour
        hsv = _np.stack([(k * 0.618034) % 1, 0.45 + 0.45 * (k % 3) / 2, 0.95 - 0.25 * (k % 2)], 1)
        colours = _mpl.colors.hsv_to_rgb(hsv)
    ax.imshow(colours[lab.T], origin="lower", extent=(-r, r, -r, r), interpolation="nearest")
    ax.set(xlabel=r"$x_1$", ylabel=r"$x_2$", aspect="equal")
    ax.grid(False)
    return ax


def plot_packing_counts(ax, x, sizes, lower, upper, *, xlabel, logy=True):
    """Numerical packing sizes (markers) between the lower and upper bounds (dashed, shaded gap).

    Args:
        ax: axes. x: r/ε values. sizes: label -> packing sizes at ``x``.
        lower, upper: bounds at ``x`` (counts, not logs).

    Explained in: book/packing.md
    """
    ax.fill_between(x, lower, upper, color="0.85", alpha=0.5)
    ax.plot(x, upper, **_BOUND, label=r"upper $(1+2r/\varepsilon)^D$")
    ax.plot(x, lower, color="0.2", linestyle=":", linewidth=1.5, label=r"lower $(r/\varepsilon)^D$")
    for i, (label, y) in enumerate(sizes.items()):
        ax.plot(x, y, marker=_MARKERS[i % len(_MARKERS)], linewidth=1, label=label)
    ax.set(xlabel=xlabel, ylabel="packing size", yscale="log" if logy else "linear")
    ax.legend(frameon=False, fontsize="x-small", loc="upper left")
    return ax


def plot_points(ax, points, r, *, eps=None, shape="ball", label=None):
    """A 2-D packing: centres, their ε/2 balls (if ``eps``) and the support boundary.

    The ε/2 balls are discs for ``shape="ball"`` (an ℓ2 packing) and squares of side ε for
    ``shape="cube"`` (an ℓ∞ packing, whose balls are squares).

    Explained in: book/packing.md
    """
    t = _np.linspace(0, 2 * _np.pi, 200)
    if shape == "ball":
        ax.plot(r * _np.cos(t), r * _np.sin(t), **_BOUND)
    else:
        ax.plot([-r, r, r, -r, -r], [-r, -r, r, r, -r], **_BOUND)
    if eps is not None:
        for p in points:
            if shape == "ball":
                ball = _mpl.patches.Circle(p, eps / 2, fill=False, lw=0.6, color="C0")
            else:
                ball = _mpl.patches.Rectangle((p[0] - eps / 2, p[1] - eps / 2), eps, eps, fill=False,
                                              lw=0.6, color="C0")
            ax.add_patch(ball)
    ax.plot(points[:, 0], points[:, 1], "o", ms=3, color="C0", label=label)
    ax.set(aspect="equal", xlabel=r"$x_1$", ylabel=r"$x_2$")
    return ax


__all__ += ["plot_output_counts", "plot_prompt_plane", "plot_packing_counts", "plot_points"]


def _crossings(starts, ends) -> int:
    """Crossing pairs among segments ``starts[i] -> ends[i]`` plus segments grazing an end point."""
    def side(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    def near(a, b, c, tol=0.07):  # c within tol of segment a-b (but not its end point b)
        ab, ac = (b[0] - a[0], b[1] - a[1]), (c[0] - a[0], c[1] - a[1])
        t = max(0.0, min(1.0, (ab[0] * ac[0] + ab[1] * ac[1]) / (ab[0] ** 2 + ab[1] ** 2)))
        return c != b and (ac[0] - t * ab[0]) ** 2 + (ac[1] - t * ab[1]) ** 2 < tol**2
    segs, count = list(zip(starts, ends)), 0
    for i, (a, b) in enumerate(segs):
        count += sum(near(a, b, d) for _, d in segs)  # a line grazing another point misleads
        for c, d in segs[i + 1:]:
            count += 2 * (side(a, b, c) * side(a, b, d) < 0 and side(c, d, a) * side(c, d, b) < 0)
    return count


def _label_points(ax, points, *, x_label=25.0, span=(8e5, 1.2e3)):
    """Mark (label, x, y) points on log axes and name each in a column at ``x_label``.

    The points sit close together (two share d = 2048), so labels go in a column, spaced evenly
    on the log y axis, joined to their points by thin lines; among the orders of up to eight
    labels, the one whose lines cross least (then closest to the points' heights) is used.
    """
    import itertools

    import numpy as np

    ys = np.geomspace(*span, num=max(len(points), 2))[: len(points)]
    ends = [(np.log10(x), np.log10(y)) for _, x, y in points]
    starts = [(np.log10(x_label), np.log10(y)) for y in ys]
    by_height = sorted(range(len(points)), key=lambda i: -points[i][2])
    orders = itertools.permutations(by_height) if len(points) <= 8 else [by_height]
    best = min(orders, key=lambda o: (_crossings(starts, [ends[i] for i in o]),
                                      sum(abs(k - by_height.index(i)) for k, i in enumerate(o))))
    from matplotlib import patheffects

    halo = [patheffects.withStroke(linewidth=2.2, foreground="white")]  # visible on dark and light
    for y, i in zip(ys, best):
        label, x, ratio = points[i]
        ax.plot(x, ratio, "o", color="C1", ms=6, mec="k", zorder=3)
        note = ax.annotate(label, xy=(x, ratio), xytext=(x_label, y), fontsize="x-small", va="center",
                           bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.9),
                           arrowprops=dict(arrowstyle="-", color="0.15", lw=0.8, shrinkA=0, shrinkB=3))
        note.arrow_patch.set_path_effects(halo)


def plot_log_packing_map(ax, d_values, ratios, log10_P, *, points=None):
    """Heatmap of log10 P (rows: r/ε, columns: d), log axes, contour lines; optional labelled points.

    Args:
        ax: axes. d_values: [nd]. ratios: [nr] values of r/ε. log10_P: [nr, nd].
        points: optional list of (label, d, r/ε) to mark (e.g. the paper's models).

    Explained in: book/packing.md
    """
    mesh = ax.pcolormesh(d_values, ratios, log10_P, cmap="mako", shading="auto",
                         norm=_mpl.colors.LogNorm())
    cs = ax.contour(d_values, ratios, log10_P, levels=[1e1, 1e2, 1e3, 1e4], colors="white",
                    linewidths=0.8)
    ax.clabel(cs, fmt=lambda v: f"$10^{{{v:.0f}}}$", fontsize="x-small")
    _label_points(ax, points or [])
    ax.set(xscale="log", yscale="log", xlabel="dimension d", ylabel=r"$r/\varepsilon$")
    ax.grid(False)
    ax.figure.colorbar(mesh, ax=ax, label=r"decimal digits of $(1+2r/\varepsilon)^d$")
    return ax


__all__ += ["plot_log_packing_map"]


def plot_clt_transition(ax, n, simulated, clt, bound, *, n50=None):
    """Accessible fraction vs n under the non-uniform-cell heuristic: simulation (markers), its CLT
    model (line) and the uniform-cell hinge bound of Cor 4.6 (dashed).

    Explained in: book/refined.md
    """
    ax.plot(n, bound, **_BOUND, label="Cor 4.6 bound (uniform cells)")
    ax.plot(n, clt, color="C1", linewidth=1.8, label="CLT model")
    ax.plot(n, simulated, "o", color="C0", ms=4, label="simulated random strings")
    if n50 is not None:
        ax.axvline(n50, color="0.5", linestyle=":", linewidth=1.2, label=r"$m\ln P/\mu$")
    ax.set(xlabel="output length n (tokens)", ylabel="accessible fraction", ylim=(-0.03, 1.03))
    ax.legend(frameon=False, fontsize="small", loc="lower left")
    return ax


def plot_refinement_ratios(ax, names, ratios):
    """Grouped bars: each refined slope bound as a fraction of the Ball bound, per model.

    Args:
        ax: axes. names: model names. ratios: label -> [len(names)] refined / Ball.

    Explained in: book/refined.md
    """
    width = 0.8 / len(ratios)
    x = _np.arange(len(names))
    for i, (label, y) in enumerate(ratios.items()):
        ax.bar(x + (i - (len(ratios) - 1) / 2) * width, y, width, label=label,
               hatch=["", "//", "..", "xx", "\\\\"][i % 5], edgecolor="white")
    ax.axhline(1.0, **_BOUND)
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set(ylabel="refined bound / Ball bound", ylim=(0, 1.05))
    ax.legend(frameon=False, fontsize="small", loc="lower center", bbox_to_anchor=(0.5, 1.0),
              ncol=len(ratios))
    return ax


__all__ += ["plot_clt_transition", "plot_refinement_ratios"]
