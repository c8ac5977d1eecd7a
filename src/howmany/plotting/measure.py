"""Figure helpers for the book's measure chapters: functions that draw on a given ax.

Each public function is listed in __all__ (re-exported by howmany.plotting).

Explained in: book/geometry.md and book/cells.md
"""

import numpy as np

from .style import BOUND_STYLE, MARKERS, distinct_color

__all__: list[str] = ["plot_radius_by_position", "plot_rank_volume", "plot_pareto", "plot_mu_vs_lnv",
                      "plot_plane_regions", "plot_rinf_by_length", "plot_running_max"]



def _legend_outside(ax):
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def plot_radius_by_position(ax, curves: dict, *, key: str = "max"):
    """r_inf of the states at each prompt position, one line per label (``geometry`` by_position).

    Args:
        curves: label -> ``radius_by_position`` dict. key: "max", "median" or "running_max".

    Explained in: book/geometry.md
    """
    for i, (label, byp) in enumerate(curves.items()):
        y = np.asarray(byp[key])
        x = np.arange(1, len(y) + 1)
        ax.plot(x, y, marker=MARKERS[i % len(MARKERS)], markevery=0.1, color=distinct_color(i), label=label)
    ax.set(xscale="log", yscale="log", xlabel="position in the prompt (tokens after BOS)",
           ylabel=r"$\|h\|_\infty$ (" + key.replace("_", " ") + " over prompts)")
    _legend_outside(ax)  # six curves fill the whole plot: a legend inside would hide one
    return ax


def plot_rank_volume(ax, curves: dict):
    """Cell fraction p_t against its rank, log-log; dashed: the uniform 1/|V| of each model.

    Args:
        curves: label -> (sorted fractions of the hit cells, |V|).

    Explained in: book/cells.md
    """
    for i, (label, (p, V)) in enumerate(curves.items()):
        line, = ax.plot(np.arange(1, len(p) + 1), p, marker=MARKERS[i % len(MARKERS)],
                        markevery=0.1, color=distinct_color(i), label=label)
        ax.axhline(1 / V, **{**BOUND_STYLE, "color": line.get_color()}, alpha=0.7)
    ax.set(xscale="log", yscale="log", xlabel="rank of the cell", ylabel=r"volume fraction $p_t$")
    ax.legend(fontsize="small")
    return ax


def plot_pareto(ax, curves: dict, *, level: float = 0.8):
    """Share of the volume held by the largest cells against the share of the vocabulary.

    Args:
        curves: label -> (sorted fractions of the hit cells, |V|).

    Explained in: book/cells.md
    """
    for i, (label, (p, V)) in enumerate(curves.items()):
        x = np.arange(1, len(p) + 1) / V
        ax.plot(x, np.cumsum(p), marker=MARKERS[i % len(MARKERS)], markevery=0.1, color=distinct_color(i),
                label=label)
    ax.axhline(level, **BOUND_STYLE)
    ax.set(xscale="log", xlabel="fraction of the vocabulary (largest cells first)",
           ylabel="fraction of the volume", ylim=(0, 1.02))
    ax.legend(fontsize="small")
    return ax


def plot_mu_vs_lnv(ax, rows: list[dict]):
    """mu (plug-in over hit cells and lower bound) against ln|V|; dashed: mu = ln|V| (uniform cells).

    Args:
        rows: dicts with ``label``, ``ln_v``, ``mu_hit``, ``mu_lower``.

    Explained in: book/cells.md
    """
    from matplotlib.lines import Line2D

    x = np.array([r["ln_v"] for r in rows])
    handles = []
    for i, r in enumerate(rows):  # one colour per model, the marker says which mu: no text to collide
        dx = 0.12 * (i - (len(rows) - 1) / 2)  # models sharing |V| sit side by side
        ax.plot(r["ln_v"] + dx, r["mu_lower"], "o", ms=8, color=distinct_color(i))
        ax.plot(r["ln_v"] + dx, r["mu_hit"], "s", ms=6, color=distinct_color(i), mfc="white", mew=1.5)
        handles.append(Line2D([], [], color=distinct_color(i), marker="o", ls="none", label=r["label"]))
    handles += [Line2D([], [], color="0.3", marker="o", ls="none", label=r"$\mu$ lower bound"),
                Line2D([], [], color="0.3", marker="s", mfc="white", ls="none",
                       label=r"$\mu$ over hit cells")]
    grid = np.linspace(0, x.max() * 1.1, 2)
    handles += ax.plot(grid, grid, **BOUND_STYLE, label=r"$\mu=\ln|V|$ (equal cells)")
    ax.set(xlabel=r"$\ln|V|$ (nats)", ylabel=r"$\mu=-\mathrm{mean}_t\ln p_t$ (nats)")
    ax.legend(handles=handles, fontsize="small", loc="lower right")
    return ax


def plot_plane_regions(ax, labels: np.ndarray, extent, names: dict, *, n_named: int = 8):
    """Next-token regions on a plane through three states (``cells.plane_labels``).

    Args:
        labels: ``[n, n]`` token ids. extent: (s_min, s_max, t_min, t_max).
        names: token id -> string. n_named: label this many of the largest regions.

    Explained in: book/cells.md
    """
    ids, inverse, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    rng = np.random.default_rng(0)
    colours = rng.permutation(len(ids))  # neighbouring ids get unrelated colours
    ax.imshow(colours[inverse.reshape(labels.shape)], origin="lower", extent=extent,
              cmap="viridis", interpolation="nearest", aspect="auto")
    for j in np.argsort(-sizes)[:n_named]:
        rows, cols = np.nonzero(inverse.reshape(labels.shape) == j)
        s = extent[0] + (cols.mean() + 0.5) / labels.shape[1] * (extent[1] - extent[0])
        t = extent[2] + (rows.mean() + 0.5) / labels.shape[0] * (extent[3] - extent[2])
        ax.text(s, t, names.get(int(ids[j]), str(ids[j])), ha="center", va="center",
                fontsize="small", bbox=dict(boxstyle="round", fc="white", alpha=0.8))
    ax.plot([0, 1, 0], [0, 0, 1], "w^", ms=9, mec="k", label="sampled states")
    ax.set(xlabel=r"$s$ (towards $h_1$)", ylabel=r"$t$ (towards $h_2$)")
    ax.legend(loc="upper right", fontsize="small")
    return ax


def plot_rinf_by_length(ax, curves: dict, *, reference: dict | None = None,
                        linestyles: dict | None = None):
    """r_inf (largest finite ``||h||_inf``) against prompt length, one line per label.

    Args:
        curves: label -> ``(lengths, r_inf, n_nonfinite)``; lengths where some states held inf or
            NaN get a black cross on top of the marker.
        reference: label -> value, drawn as dashed horizontal lines (e.g. the paper's r).
        linestyles: label -> line style (default solid), so that curves that coincide stay
            visible as one line of mixed dashes.

    Explained in: book/geometry.md
    """
    crossed = False
    for i, (label, (lengths, r, bad)) in enumerate(curves.items()):
        r = [np.nan if v is None else v for v in r]  # a length whose states are all inf/NaN
        ax.plot(lengths, r, marker=MARKERS[i % len(MARKERS)], color=distinct_color(i), label=label,
                linestyle=(linestyles or {}).get(label, "-"))
        hit = [k for k, b in enumerate(bad) if b]
        if hit:
            ax.plot([lengths[k] for k in hit], [r[k] for k in hit], "kx", ms=9, mew=1.5,
                    label=None if crossed else "some states inf/NaN")
            crossed = True
    for j, (label, value) in enumerate((reference or {}).items()):
        ax.axhline(value, **{**BOUND_STYLE, "color": ("0.2", "0.55")[j % 2]}, label=label)
    ax.set(xscale="log", yscale="log", xlabel="prompt length (tokens)",
           ylabel=r"$r_\infty$ = max over prompts of $\|h\|_\infty$")
    ax.set_xscale("log", base=2)
    _legend_outside(ax)
    return ax


def plot_running_max(ax, curves: dict, *, linestyles: dict | None = None):
    """The largest ``||h||_inf`` among the first k states against k: is the maximum stable?

    Args:
        curves: label -> running maximum (``radius.running_max``).
        linestyles: label -> line style (default solid), as in ``plot_rinf_by_length``.

    Explained in: book/geometry.md
    """
    for i, (label, run) in enumerate(curves.items()):
        run = np.asarray(run, float)
        ax.plot(np.arange(1, len(run) + 1), run, marker=MARKERS[i % len(MARKERS)],
                markevery=0.2, color=distinct_color(i), label=label,
                linestyle=(linestyles or {}).get(label, "-"))
    ax.set(xscale="log", yscale="log", xlabel="number of states k",
           ylabel=r"max of $\|h\|_\infty$ over the first k")
    _legend_outside(ax)
    return ax
