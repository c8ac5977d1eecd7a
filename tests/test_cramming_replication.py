"""The replication point (cramming.replication): A(n) under the paper's grid protocol with both
layouts, beside the book's recipe, on the strings all of them finished."""

import pytest

from howmany import results
from howmany.cramming import accessibility, plans, replication, store

GRID = [5, 10, 15, 20, 25]


def _grid_sweep(solved_by_string, nan=(), tried=None):
    rows = [{"string": i, "status": "nan" if i in nan else "ok", "grid": GRID, "solved": s,
             "threshold": max((n for n, ok in zip(GRID, s) if ok), default=0), "censored": s[-1],
             **({"tried": tried[i]} if tried and i in tried else {})}
            for i, s in solved_by_string.items()]
    return {"units": {"grid": {1: rows}}}


def _book_sweep(thresholds):
    return {"units": {"grow": {1: [{"string": i, "status": "ok", "threshold": t, "censored": False}
                                   for i, t in thresholds.items()]}}}


def test_the_grid_estimator_interpolates_where_a_falls_below_one_half():
    assert accessibility.n50_grid(GRID[:3], [1.0, 0.75, 0.25]) == pytest.approx(12.5)
    assert accessibility.n50_grid(GRID[:3], [0.25, 0.0, 0.0]) == 5.0  # below from the start
    assert accessibility.n50_grid(GRID[:3], [1.0, 1.0, 0.5]) == 15.0  # never below: the grid's end


def test_compare_uses_only_the_strings_every_protocol_finished():
    t, f = True, False
    mem_bos = _grid_sweep({0: [t, t, f, f, f], 1: [t, f, t, f, f], 2: [t, t, t, t, f],
                           3: [t, t, t, t, t]}, nan=(3,))
    bos_mem = _grid_sweep({0: [t, t, t, f, f], 1: [t, t, t, t, t], 2: [t, t, t, t, t]})
    book = _book_sweep({0: 40, 1: 12, 2: 25, 5: 60})
    out = replication.compare({"mem-bos": mem_bos, "bos-mem": bos_mem}, book)
    assert out["grid"] == GRID and out["strings"] == [0, 1, 2]  # 3 is NaN, 5 lacks the grid runs
    assert out["A"]["mem-bos"] == pytest.approx([1, 2 / 3, 2 / 3, 1 / 3, 0])
    assert out["A"]["bos-mem"] == pytest.approx([1, 1, 1, 2 / 3, 2 / 3])
    assert out["A"]["book"] == pytest.approx(
        accessibility.accessible_fraction([40, 12, 25], GRID))  # the thresholds' own A(n)
    assert out["solved"]["book"][1] == [t, t, f, f, f]
    assert out["n50"]["mem-bos"] == pytest.approx(15 + (2 / 3 - 0.5) / (1 / 3) * 5)
    assert out["censored"] == {"mem-bos": False, "bos-mem": True, "book": True}
    assert out["reversals"] == {"mem-bos": [1], "bos-mem": [], "book": []}  # 1 failed 10, passed 15
    # string 1's success at 15 certifies 10 too: the certified curve gains it there, nothing else
    assert out["certified"]["mem-bos"] == pytest.approx([1, 1, 2 / 3, 1 / 3, 0])
    assert out["certified"]["bos-mem"] == out["A"]["bos-mem"] and out["certified"]["book"] == out["A"]["book"]
    assert out["n50_certified"]["mem-bos"] == pytest.approx(15 + (2 / 3 - 0.5) / (1 / 3) * 5)
    assert out["cut"] == {"mem-bos": [], "bos-mem": [], "book": []}  # no row says it stopped early
    assert replication.compare({"mem-bos": mem_bos}, _book_sweep({7: 30}))["strings"] == []


def test_compare_names_the_strings_whose_grid_stopped_after_consecutive_failures():
    t, f = True, False
    mem_bos = _grid_sweep({0: [t, f, f, f, f], 1: [t, f, t, f, f], 2: [t, t, t, t, t]},
                          tried={0: 3, 1: 5, 2: 5})  # string 0 stopped after failing 10 and 15
    bos_mem = _grid_sweep({0: [t, f, f, f, f], 1: [t] * 5, 2: [t] * 5}, tried={0: 5})
    out = replication.compare({"mem-bos": mem_bos, "bos-mem": bos_mem}, _book_sweep({0: 9, 1: 9, 2: 9}))
    assert out["cut"] == {"mem-bos": [0], "bos-mem": [], "book": []}


def test_compare_refuses_sweeps_on_different_grids():
    other = {"units": {"grid": {1: [{"string": 0, "status": "ok", "grid": [4, 8], "threshold": 4,
                                     "solved": [True, False], "censored": False}]}}}
    with pytest.raises(ValueError, match="different grids"):
        replication.compare({"mem-bos": _grid_sweep({0: [True] * 5}), "bos-mem": other})


def test_sweeps_reads_the_replication_folders_of_the_plan_and_nothing_else(tmp_path):
    rep = [c for c in plans.remeasure_sweeps() if c.recipe == "paper"]
    assert {c.cram.layout for c in rep} == {"mem-bos", "bos-mem"} and {c.ms for c in rep} == {(1,)}
    assert replication.sweeps(root=tmp_path) == {}
    cfg = next(c for c in rep if c.cram.layout == "mem-bos")
    folder = store.sweep_dir(cfg, tmp_path)
    results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance": {}})
    results.atomic_write_json(folder / "m1-grid-s000.json", {
        "config": {"m": 1, "method": "grid", "string": 0, "n_max": cfg.n_max(1)},
        "provenance": {"wall_time_s": 1.0},
        "result": {"threshold": 10, "censored": False, "status": "ok", "steps": 900,
                   "grid": cfg.grid(1), "solved": [True, True, False, False, False]}})
    got = replication.sweeps(root=tmp_path)
    assert list(got) == ["mem-bos"] and got["mem-bos"]["units"]["grid"][1][0]["threshold"] == 10
    assert replication.sweeps("smollm2-135m", root=tmp_path) == {}


def test_a_reversal_is_a_success_after_a_failure_and_nothing_else():
    t, f = True, False
    assert replication._reversed([t, f, t, f, f]) and replication._reversed([f, t])
    assert not any(map(replication._reversed, ([t, t, f, f], [f, f, f], [t, t, t], [])))


def test_the_prefix_closure_counts_every_length_up_to_the_longest_solved_one():
    t, f = True, False
    assert replication._prefix_closed([t, f, t, f, f]) == [t, t, t, f, f]
    assert replication._prefix_closed([f, f, f, t]) == [t, t, t, t]
    assert replication._prefix_closed([f, f]) == [f, f] and replication._prefix_closed([]) == []


def test_the_papers_curve_gives_the_n50_its_own_figure_marks():
    # the authors' right panel marks n50(m = 1) at 10.0 tokens (read off the same figure)
    assert replication.paper_n50() == pytest.approx(10.0, abs=0.5)
    assert len(replication.PAPER_GEMMA_M1["grid"]) == len(replication.PAPER_GEMMA_M1["A"])
