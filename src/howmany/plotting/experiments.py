"""Figure helpers for the book's experiments chapters: functions that draw on a given ax.

Each public function is listed in __all__ (re-exported by howmany.plotting).

Explained in: book/cramming.md and book/lab.md
"""

__all__: list[str] = []


# ---- cramming (book/cramming.md) ------------------------------------------------------------

def plot_accessibility(ax, thresholds_by_m: dict, n50_by_m: dict | None = None, *, n_max=None):
    """A(n) per prompt length m (one stepped curve with markers per m), n50 as vertical ticks.

    Args:
        thresholds_by_m: ``{m: per-string thresholds}``.
        n50_by_m: ``{m: n50}`` drawn as a marker on A = 1/2.

    Explained in: book/cramming.md
    """
    import numpy as np

    from ..cramming.accessibility import accessible_fraction
    from .style import MARKERS

    top = n_max or max(max(t) for t in thresholds_by_m.values()) + 2
    grid = np.arange(0, int(top) + 1)
    for k, (m, thr) in enumerate(sorted(thresholds_by_m.items())):
        a = accessible_fraction(thr, grid)
        line, = ax.step(grid, a, where="post", marker=MARKERS[k % len(MARKERS)], markersize=3,
                        label=f"m = {m} ({len(thr)} strings)")
        if n50_by_m and m in n50_by_m:
            ax.plot([n50_by_m[m]], [0.5], marker="|", markersize=14, color=line.get_color())
    ax.axhline(0.5, color="0.6", linewidth=0.8)
    ax.set(xlabel="target length n (tokens)", ylabel="accessible fraction A(n)", ylim=(-0.03, 1.03))
    ax.legend(frameon=False)
    return ax


def plot_grid_accessibility(ax, grid, curves: dict, labels: dict | None = None, reference=None):
    """A(n) measured on a grid of lengths, one line with markers per protocol, and A = 1/2.

    Args:
        grid: the target lengths.
        curves: ``{name: A(n) per grid length}`` (``cramming.replication.compare``'s ``"A"``).
        labels: legend text per name (default: the name).
        reference: optional ``(label, grid, A)`` of a published curve, drawn in black on top.

    Explained in: book/cramming.md
    """
    from .style import MARKERS, distinct_color

    for k, (name, a) in enumerate(curves.items()):
        ax.plot(grid, a, marker=MARKERS[k % len(MARKERS)], color=distinct_color(k),
                label=(labels or {}).get(name, name))
    if reference is not None:
        label, ref_grid, ref_a = reference
        ax.plot(ref_grid, ref_a, linestyle="--", marker="X", markersize=8, color="black", zorder=5,
                label=label)
    ax.axhline(0.5, color="0.6", linewidth=0.8)
    ax.set(xlabel="target length n (tokens)", ylabel="accessible fraction A(n)", ylim=(-0.03, 1.03),
           xticks=list(grid))
    ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax


def plot_budget_curves(ax, curves: dict, *, bound=None, title=None, order=None, baseline=None,
                       legend: bool = True):
    """Median threshold against optimisation steps per string, one curve per recipe (log x).

    Args:
        curves: ``{recipe: (budgets, medians)}`` from ``cramming.budget.curve``.
        bound: optional slope bound × m drawn as a dashed grey line (tokens).
        title: legend title (the panel's model and m).
        order: every recipe name any panel shows; a recipe keeps its colour and marker at its
            place in it, so panels with different recipes still match (default: ``curves``).
        baseline: a recipe drawn in grey, as the reference the others are read against.
        legend: a legend beside the panel, titled ``title``; without it ``title`` is the panel's
            title, for one legend shared by several panels (``fig.legend``).

    Explained in: book/cramming.md
    """
    from .style import BASELINE_COLOR, BOUND_STYLE, MARKERS, distinct_color

    order = list(order or curves)
    place = {n: order.index(n) if n in order else len(order) + i for i, n in enumerate(curves)}
    for name in sorted(curves, key=place.get):  # legends list recipes in one order
        budgets, med, k = *curves[name], place[name]
        ax.plot(budgets, med, marker=MARKERS[k % len(MARKERS)], markersize=4, markevery=4,
                color=BASELINE_COLOR if name == baseline else distinct_color(k),
                drawstyle="steps-post", label=name)
    if bound is not None:
        ax.axhline(bound, **BOUND_STYLE, label="bound C·m")
    ax.set(xscale="log", xlabel="optimisation steps per string (log scale)",
           ylabel="median threshold (tokens)")
    if legend:
        ax.legend(frameon=False, fontsize="small", title=title, loc="upper left",
                  bbox_to_anchor=(1.0, 1.0))
    elif title:
        ax.set_title(title, fontsize="medium")
    return ax


def plot_n50_vs_m(ax, n50_rows: list, fit: dict | None = None, *, label="measured n50",
                  marker="o", bound_slope=None):
    """n50 against m with 95 % CI bars, the OLS line, and optionally a dashed bound ``C m``.

    Args:
        n50_rows: dicts with ``m``, ``median``, ``median_lo``, ``median_hi`` (``accessibility.N50``).
        fit: dict with ``slope``, ``intercept``, ``r2`` (``accessibility.SlopeFit``), drawn over
            the measured m only (a fit says nothing outside them) and named after ``label``.

    Explained in: book/cramming.md
    """
    import numpy as np

    from .style import BOUND_STYLE

    m = np.array([r["m"] for r in n50_rows], float)
    y = np.array([r["median"] for r in n50_rows])
    err = np.array([[r["median"] - r["median_lo"] for r in n50_rows],
                    [r["median_hi"] - r["median"] for r in n50_rows]])
    bars = ax.errorbar(m, y, yerr=err, marker=marker, linestyle="none", capsize=4, label=label)
    if fit:
        xs = np.linspace(m.min() - 0.25, m.max() + 0.25, 20)
        ax.plot(xs, fit["slope"] * xs + fit["intercept"], color=bars[0].get_color(), linewidth=1,
                label=f"{label}: least-squares line, slope {fit['slope']:.1f}"
                + (f", R² = {fit['r2']:.3f}" if len(m) >= 3 else " (two points, no R²)"))
    if bound_slope is not None:
        xs = np.linspace(0, m.max() + 0.5, 20)
        ax.plot(xs, bound_slope * xs, label=f"bound C m (C = {bound_slope:.0f})", **BOUND_STYLE)
    ax.set(xlabel="soft-prompt length m (vectors)", ylabel="n50 (tokens)")
    ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return ax


def plot_scaling(ax, fits: list, k: float):
    """Measured slope against d / ln|V| per tiny model, with the fitted proportionality line.

    Explained in: book/cramming.md
    """
    import numpy as np

    from .style import MARKERS, distinct_color

    x = np.array([f["d_over_lnV"] for f in fits])
    nudge = 0.012 * (x.max() - x.min() or 1.0)  # models at the same d / ln|V| sit side by side
    for j, f in enumerate(fits):
        same = [i for i in range(len(fits)) if np.isclose(x[i], x[j])]
        dx = nudge * (same.index(j) - (len(same) - 1) / 2)
        ax.errorbar([f["d_over_lnV"] + dx], [f["slope"]],
                    yerr=[[f["slope"] - f["slope_lo"]], [f["slope_hi"] - f["slope"]]],
                    marker=MARKERS[j % len(MARKERS)], color=distinct_color(j), linestyle="none",
                    capsize=3, label=f"d = {f['d']}, |V| = {f['d_vocab']}")
    xs = np.linspace(0, x.max() * 1.1, 20)
    ax.plot(xs, k * xs, color="0.4", linestyle=":", label=f"slope = {k:.3f} · d / ln|V|")
    ax.set(xlabel="d / ln|V|", ylabel="measured slope of n50 (tokens per vector)")
    ax.legend(frameon=False, fontsize="small")
    return ax


def plot_cold_vs_warm(ax, cold: dict, warm: dict):
    """Per string and m: threshold by cold-start bisection (x) vs warm growing curriculum (y).

    Strings with the same pair of thresholds share one marker, whose area grows with their count
    (written beside it when above one), so that no string hides behind another.

    Explained in: book/cramming.md
    """
    from collections import Counter

    import numpy as np

    from .style import BOUND_STYLE, MARKERS

    top = 1
    for k, m in enumerate(sorted(set(cold) & set(warm))):
        n = min(len(cold[m]), len(warm[m]))
        pairs = Counter(zip(np.asarray(cold[m][:n]).tolist(), np.asarray(warm[m][:n]).tolist()))
        xy = np.array(list(pairs), dtype=float).reshape(-1, 2)
        counts = np.array(list(pairs.values()))
        dots = ax.scatter(xy[:, 0], xy[:, 1], s=30 * counts, marker=MARKERS[k % len(MARKERS)],
                          alpha=0.7, label=f"m = {m}")
        for (x, y), c in zip(xy, counts):
            if c > 1:
                ax.annotate(f"×{c}", (x, y), xytext=(5, 3), textcoords="offset points",
                            fontsize="x-small", color=dots.get_facecolor()[0])
        top = max(top, xy.max())
    ax.plot([0, top + 1], [0, top + 1], label="equal", **BOUND_STYLE)
    ax.set(xlabel="threshold, cold-start bisection (tokens)",
           ylabel="threshold, warm curriculum (tokens)")
    ax.legend(frameon=False)
    return ax


__all__ += ["plot_accessibility", "plot_grid_accessibility", "plot_n50_vs_m", "plot_scaling", "plot_cold_vs_warm",
            "plot_budget_curves"]


# ---- lab: cram your own text (book/lab.md) ---------------------------------------------------

def plot_cram_progress(axes, history: dict, n_tokens: int):
    """Two panels of one cramming run: the loss per step (log scale), and the verified prefix
    with the current target length per step against the text's length (dashed).

    Args:
        axes: two axes. history: lists ``step``, ``loss``, ``n_verified``, ``length`` (tokens).
        n_tokens: length of the text in tokens.

    Explained in: book/lab.md
    """
    import numpy as np

    from .style import BOUND_STYLE

    step = np.asarray(history["step"], float)
    every = max(1, len(step) // 12)
    ax_loss, ax_n = axes
    if len(step):
        ax_loss.plot(step, history["loss"], color="C0", marker="o", markersize=3, markevery=every)
        ax_n.step(step, history["length"], where="post", color="C1", linewidth=1,
                  label="target length being crammed")
        ax_n.step(step, history["n_verified"], where="post", color="C0", marker="s", markersize=3,
                  markevery=every, label="verified prefix")
        lo, hi = np.nanmin(history["loss"]), np.nanmax(history["loss"])
        if lo > 0 and hi / lo > 10:  # a log scale only when the loss spans a decade or more
            ax_loss.set_yscale("log")
    ax_n.axhline(n_tokens, **BOUND_STYLE, label=f"whole text ({n_tokens} tokens)")
    ax_loss.set(xlabel="optimisation step", ylabel="cross-entropy loss (nats/token)")
    # headroom above the whole-text line, so that the legend never covers a curve or that line
    ax_n.set(xlabel="optimisation step", ylabel="tokens", ylim=(0, n_tokens * 1.45 + 0.5))
    ax_n.legend(frameon=False, fontsize="small", loc="upper left")
    return axes


__all__ += ["plot_cram_progress"]
