"""Tests for howmany.plotting: figures that must read the same across panels."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from howmany import plotting  # noqa: E402


def test_budget_curves_keep_a_recipes_colour_and_marker_across_panels():
    curve = ([10, 100], [1, 2])
    fig, (a, b) = plt.subplots(1, 2)
    order = ["paper", "kuratov", "progressive", "book"]
    plotting.plot_budget_curves(a, {name: curve for name in order}, order=order)
    plotting.plot_budget_curves(b, {"progressive": curve, "book": curve}, order=order)
    style = lambda ax: {ln.get_label(): (ln.get_color(), ln.get_marker()) for ln in ax.lines}  # noqa: E731
    assert style(b) == {k: style(a)[k] for k in ("progressive", "book")}
    c = plt.figure().add_subplot()
    plotting.plot_budget_curves(c, {"book": curve, "paper": curve}, order=order)
    assert [ln.get_label() for ln in c.lines] == ["paper", "book"]  # the order, not the dict's
    assert len(set(style(a).values())) == 4  # four recipes, four looks
    plt.close(fig)


def test_budget_curves_without_a_legend_take_the_title_as_the_panels():
    fig, (a, b) = plt.subplots(1, 2)
    plotting.plot_budget_curves(a, {"book": ([1, 2], [0, 1])}, title="m = 1")
    plotting.plot_budget_curves(b, {"book": ([1, 2], [0, 1])}, title="m = 2", legend=False)
    assert a.get_legend().get_title().get_text() == "m = 1" and a.get_title() == ""
    assert b.get_legend() is None and b.get_title() == "m = 2"
    plt.close(fig)


def test_budget_curves_draw_the_baseline_in_grey_and_no_other_curve_in_it():
    fig, ax = plt.subplots()
    names = ["paper", "kuratov", "progressive", "book", "budget-limited"]
    plotting.plot_budget_curves(ax, {n: ([1, 2], [0, 1]) for n in names}, order=names,
                                baseline="budget-limited")
    colour = {ln.get_label(): matplotlib.colors.to_hex(ln.get_color()) for ln in ax.lines}
    grey = matplotlib.colors.to_hex(plotting.style.BASELINE_COLOR)
    assert colour["budget-limited"] == grey
    assert grey not in {c for n, c in colour.items() if n != "budget-limited"}
    assert len(set(colour.values())) == len(names)
    plt.close(fig)


def test_budget_curves_without_an_order_style_by_position():
    fig, ax = plt.subplots()
    plotting.plot_budget_curves(ax, {"x": ([1, 2], [0, 1]), "y": ([1, 2], [0, 2])})
    assert [ln.get_color() for ln in ax.lines] == [plotting.distinct_color(0),
                                                   plotting.distinct_color(1)]
    plt.close(fig)


def test_copy_cliff_bands_only_where_accuracy_is_strictly_between_0_and_1():
    acc = [1.0, 1.0, 1.0, 1.0, 0.6, 0.0, 0.0, 0.0, 0.0]
    rows = [{"n": 10 * (i + 1), "exact": a, "exact_lo": max(0.0, a - 0.05),
             "exact_hi": min(1.0, a + 0.05)} for i, a in enumerate(acc)]
    fig, ax = plt.subplots()
    plotting.plot_copy_cliff(ax, [{"arch": "x", "rows": rows}], train_range=(5, 50),
                             markers=["D"])
    band = [c for c in ax.collections if c.get_label() != "training lengths"][-1]
    xs = {round(float(x)) for path in band.get_paths() for x, _ in path.vertices}
    assert xs == {40, 50, 60}  # the 60 % point and its two neighbours, not the plateaus
    assert [ln.get_marker() for ln in ax.lines] == ["D"]
    plt.close(fig)


def test_cold_vs_warm_stacks_equal_pairs_into_one_counted_marker():
    fig, ax = plt.subplots()
    plotting.plot_cold_vs_warm(ax, {1: [2, 2, 2, 3]}, {1: [2, 2, 2, 5]})
    dots = ax.collections[0]
    assert len(dots.get_offsets()) == 2  # (2, 2) three times and (3, 5) once
    assert sorted(dots.get_sizes()) == [30, 90]
    assert [t.get_text() for t in ax.texts] == ["×3"]
    plt.close(fig)


def test_n50_fit_is_drawn_only_over_the_measured_m_and_named():
    rows = [{"m": m, "median": 10.0 * m, "median_lo": 10.0 * m - 1, "median_hi": 10.0 * m + 1}
            for m in (2, 3, 4)]
    fig, ax = plt.subplots()
    plotting.plot_n50_vs_m(ax, rows, {"slope": 10.0, "intercept": 0.0, "r2": 1.0}, label="M")
    line = next(ln for ln in ax.lines if ln.get_label().startswith("M: least-squares line, slope 10.0"))
    assert 1.5 < min(line.get_xdata()) and max(line.get_xdata()) < 4.5
    plt.close(fig)


def test_grid_accessibility_draws_a_published_reference_on_its_own_grid_in_black():
    fig, ax = plt.subplots()
    plotting.plot_grid_accessibility(ax, [5, 10, 15], {"a": [1, 0.5, 0], "b": [1, 1, 0.5]},
                                     reference=("paper", (10, 20), (0.5, 0.0)))
    ref = next(ln for ln in ax.lines if ln.get_label() == "paper")
    assert list(ref.get_xdata()) == [10, 20] and ref.get_color() == "black"
    assert {ln.get_color() for ln in ax.lines if ln.get_label() in "ab"} != {"black"}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "paper"]
    plt.close(fig)


def test_live_view_keeps_only_the_final_figure(monkeypatch):
    pytest.importorskip("IPython")
    import IPython.display as ipd

    shown = {}

    class Handle:
        def __init__(self, key):
            self.key = key

        def update(self, obj):
            shown[self.key] = obj

    def fake_display(obj, display_id=False):
        key = len(shown)
        shown[key] = obj
        return Handle(key)

    monkeypatch.setattr(ipd, "display", fake_display)
    view = plotting.LiveView(5, every_s=0.0)
    for step in range(1, 4):
        view(step, {"loss": [2.0 / step], "n_verified": [step - 1], "length": [step]})
    assert "2/5" in shown[0].data and "<progress" in shown[0].data  # the bar while running
    assert "data:image/png;base64," in shown[0].data  # and the figure under it
    fig = view.close()
    assert list(shown) == [0] and shown[0] is fig  # one output, now the final figure alone
    assert view.hist["step"] == [1, 2, 3] and len(fig.axes) == 2
