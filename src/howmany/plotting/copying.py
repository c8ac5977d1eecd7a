"""Figure helpers of the copying chapter: accuracy against length, training curves, width,
mistakes.

Each curve keeps one colour for its line, markers and band (``C<k>`` of the colorblind palette),
and legends sit outside the axes so they never cover a curve.

Explained in: book/copying.md
"""

from __future__ import annotations

import numpy as np

from .style import MARKERS

__all__ = ["FINETUNE_COLORS", "plot_copy_cliff", "plot_copy_fit", "plot_copy_curves", "plot_longer_training",
           "plot_width_cliff", "plot_mistakes"]

#: colours of the fine-tuned SmolLM2 runs, by protocol: hues that none of the five from-scratch
#: copiers (``C0``-``C4``) uses; the short run, whose band lies over the grey training lengths,
#: gets the one that stands out from grey
FINETUNE_COLORS = {"paper": "0.15", "short": "#6a3d9a"}


def _legend_right(ax, **kw):
    ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
              **kw)


def _log_lengths(ax, ns):
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.set_xticks([t for t in (2, 5, 10, 20, 50, 100, 200, 500, 1000) if ns[0] <= t <= ns[-1]])
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_copy_cliff(ax, runs: list, *, train_range: tuple, metric: str = "exact",
                    logx: bool = True, colors: list | None = None, markers: list | None = None):
    """Copy accuracy against string length: one marked curve per model, 95 % CIs shaded.

    Args:
        runs: dicts with ``arch`` (or ``label``) and ``rows`` (``copying.evaluate`` output).
        train_range: ``(min_len, max_len)`` of training, shaded grey.
        metric: ``"exact"`` (whole string) or ``"char"`` (per character).
        colors: one colour per run (default ``C0``, ``C1``, ...).
        markers: one marker per run (default ``MARKERS`` in order), so that a model keeps its
            marker from figure to figure.

    Explained in: book/copying.md
    """
    ax.axvspan(*train_range, color="0.88", linewidth=0, label="training lengths")
    for k, run in enumerate(runs):
        color = colors[k] if colors else f"C{k % 10}"
        rows = sorted(run["rows"], key=lambda r: r["n"])
        ns = [r["n"] for r in rows]
        acc = np.array([r[metric] for r in rows])
        # bands only where some strings fail and some pass (and beside): stacked bands at 0 % or
        # 100 % would hide the lines
        inside = (acc > 0) & (acc < 1)
        near = inside | np.r_[inside[1:], False] | np.r_[False, inside[:-1]]
        ax.fill_between(ns, [r[f"{metric}_lo"] for r in rows], [r[f"{metric}_hi"] for r in rows],
                        where=near, color=color, alpha=0.2, linewidth=0)
        marker = markers[k] if markers else MARKERS[k % len(MARKERS)]
        ax.plot(ns, acc, color=color, marker=marker, markersize=3,
                markevery=max(1, len(ns) // 25), linewidth=1.3, label=run.get("label", run["arch"]))
    if logx and runs:
        _log_lengths(ax, sorted({r["n"] for run in runs for r in run["rows"]}))
    what = "exact-string" if metric == "exact" else "per-character"
    ax.set(xlabel="string length n (letters)", ylabel=f"{what} accuracy", ylim=(-0.03, 1.03))
    _legend_right(ax)
    return ax


def plot_copy_fit(ax, run: dict, fit: dict, *, color: str = "C0", lo: int = 0, hi: int = 10**9):
    """One model's exact accuracy on the fine grid (Wilson bars) with its fitted sigmoid.

    Explained in: book/copying.md
    """
    rows = [r for r in sorted(run["rows"], key=lambda r: r["n"]) if lo <= r["n"] <= hi]
    if not rows:
        return ax
    ns = np.array([r["n"] for r in rows])
    acc = np.array([r["exact"] for r in rows])
    err = np.clip([acc - [r["exact_lo"] for r in rows], [r["exact_hi"] for r in rows] - acc],
                  0, None)  # rounding can put a bound a hair past the estimate
    ax.errorbar(ns, acc, yerr=err, fmt="o", markersize=2.5, color=color, elinewidth=0.8,
                label="measured (95 % Wilson)")
    if np.isfinite(fit.get("n50", np.nan)):
        x = np.linspace(ns[0], ns[-1], 400)
        ax.plot(x, 1 / (1 + np.exp((x - fit["n50"]) / fit["width"])), color="0.2",
                linewidth=1, label="sigmoid fit")
        if "n50_lo" in fit:
            ax.axvspan(fit["n50_lo"], fit["n50_hi"], color=color, alpha=0.15, linewidth=0,
                       label="n50, 95 % bootstrap")
    ax.set(xlabel="string length n (letters)", ylabel="exact-string accuracy",
           ylim=(-0.03, 1.03), title=run.get("label", run["arch"]))
    return ax


def plot_copy_curves(axes, runs: list, lengths: tuple, *, inside: bool = False):
    """Training curves: per model, held-out exact accuracy at each curve length against steps
    (top row) and the mean training loss (bottom row, log scale).

    Args:
        axes: a [2, len(runs)] array of axes (extra columns are hidden).
        runs: dicts with ``label`` and ``curve`` (``copying.train`` info).
        lengths: the curve lengths (``CopyConfig.curve_lengths``), coloured short to long.
        inside: put the length legend in one row above the last panel, in place of its
            title (where no curve runs), instead of to its right.

    Explained in: book/copying.md
    """
    import matplotlib as mpl

    cmap = mpl.colormaps["viridis"]
    top, bottom = axes
    for k, (ax, run) in enumerate(zip(top, runs)):
        steps = [p["step"] for p in run["curve"]]
        for j, n in enumerate(lengths):
            ax.plot(steps, [p["exact"][j] for p in run["curve"]], linewidth=1.2,
                    color=cmap(0.9 * j / max(1, len(lengths) - 1)), label=f"n = {n}")
        ax.set(title=run["label"], ylim=(-0.03, 1.03))
        bottom[k].plot(steps, [p["loss"] for p in run["curve"]], color="0.25", linewidth=1.2)
        bottom[k].set(yscale="log", xlabel="training step")
    top[0].set_ylabel("held-out exact\naccuracy")
    bottom[0].set_ylabel("training loss")
    if inside:
        last = top[len(runs) - 1]
        last.legend(frameon=False, fontsize="x-small", loc="lower center", ncol=len(lengths),
                    bbox_to_anchor=(0.5, 1.0), handlelength=1.2, columnspacing=0.8)
        last.set_title("")
    else:
        _legend_right(top[len(runs) - 1], title="string length")
    for ax in list(top[len(runs):]) + list(bottom[len(runs):]):
        ax.set_visible(False)
    return axes


def plot_longer_training(axes, families: dict):
    """Training curves of one model family trained longer or larger, one column per family:
    held-out exact accuracy averaged over the check lengths (top) and training loss (bottom,
    log scale); steps are shown in thousands.

    Args:
        axes: a [2, len(families)] array of axes.
        families: ``{title: [(label, run), ...]}``; each run has a ``curve``
            (``copying.train`` info), drawn in the order given, ``C0``, ``C1``, ...; a
            continuation's curve (``init_steps``) starts where its parent's ended.

    Explained in: book/copying.md
    """
    from matplotlib.ticker import FuncFormatter

    thousands = FuncFormatter(lambda x, _: f"{x / 1000:g}k" if x else "0")
    top, bottom = axes
    for col, (title, runs) in enumerate(families.items()):
        for k, (label, run) in enumerate(runs):
            steps = [run.get("init_steps", 0) + p["step"] for p in run["curve"]]
            style = dict(color=f"C{k % 10}", linewidth=1.2, label=label)
            top[col].plot(steps, [np.mean(p["exact"]) for p in run["curve"]], **style)
            bottom[col].plot(steps, [p["loss"] for p in run["curve"]], **style)
        top[col].set(title=title, ylim=(-0.03, 1.03))
        bottom[col].set(yscale="log", xlabel="training step")
        bottom[col].xaxis.set_major_formatter(thousands)
        bottom[col].legend(frameon=False, fontsize="x-small", loc="upper center", ncol=1,
                           bbox_to_anchor=(0.5, -0.3))
    top[0].set_ylabel("held-out exact accuracy,\nmean over check lengths")
    bottom[0].set_ylabel("training loss")
    return axes


def plot_width_cliff(ax, points: dict, *, train_max: int, styles: dict | None = None):
    """Cliff position n50 (95 % bootstrap bars) against model width, one marked line per family.

    Args:
        points: ``{label: [(width, fit dict), ...]}``; a width whose accuracy never falls
            below 50 % on the grid is drawn as an open marker at the longest length evaluated,
            passed as ``fit["n_top"]``.
        styles: ``{label: (colour, marker)}``, so that a family keeps its look from the other
            figures (default ``C0``, ``C1``, ... and ``MARKERS`` in order).

    Explained in: book/copying.md
    """
    for k, (label, pts) in enumerate(points.items()):
        color, marker = (styles or {}).get(label, (f"C{k}", MARKERS[k % len(MARKERS)]))
        pts = sorted(pts)
        w = np.array([p[0] for p in pts], float)
        n50 = np.array([p[1]["n50"] if np.isfinite(p[1]["n50"]) else p[1].get("n_top", np.nan)
                        for p in pts])
        lo = np.array([p[1].get("n50_lo", np.nan) for p in pts])
        hi = np.array([p[1].get("n50_hi", np.nan) for p in pts])
        yerr = np.nan_to_num(np.vstack([n50 - lo, hi - n50]))
        ax.errorbar(w, n50, yerr=yerr, color=color, marker=marker, capsize=3, label=label)
        top = np.array([not np.isfinite(p[1]["n50"]) for p in pts])
        if top.any():
            ax.plot(w[top], n50[top], marker=marker, color="white", markeredgecolor=color,
                    linestyle="none", markersize=8)
    ax.axhline(train_max, color="0.4", linestyle=":", linewidth=1, label="longest training string")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="width (LSTM: hidden size; transformer: d_model)",
           ylabel="cliff position n50 (letters)")
    _legend_right(ax)
    return ax


def plot_mistakes(ax, rows: list, kinds: tuple, *, title: str = ""):
    """Share of strings copied wrongly at each length, stacked by the kind of the first mistake.

    Args:
        rows: ``copying.mistakes.tally`` rows (``n``, ``strings`` and a count per kind).
        kinds: the kinds, bottom to top (``copying.mistakes.KINDS``); kinds never seen are left
            out of the legend.

    Explained in: book/copying.md
    """
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for k, kind in enumerate(kinds):
        share = np.array([r[kind] / r["strings"] for r in rows])
        if share.any():
            ax.bar(x, share, 0.7, bottom=bottom, color=f"C{k}", label=kind)
        bottom += share
    ax.set_xticks(x, [str(r["n"]) for r in rows])
    ax.set(xlabel="string length (letters)", ylabel="share of strings copied wrongly",
           ylim=(0, max(0.05, 1.1 * bottom.max())))
    if title:
        ax.set_title(title, fontsize="medium")
    _legend_right(ax, title="first mistake")
    return ax
