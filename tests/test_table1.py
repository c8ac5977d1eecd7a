"""Tests for howmany.table1: the paper's Table 1 rows recomputed from Table 2."""

import numpy as np

from howmany import table1


def test_ball_row_matches_printed_digits():
    ours = table1.table1_ball_row()
    match = table1.matches_printed(ours, "Ball")
    names = [m["name"] for m in table1.models()]
    assert [n for n, ok in zip(names, match) if not ok] == ["Qwen2.5-1.5B"]
    assert round(float(ours[names.index("Qwen2.5-1.5B")]), 2) == 20.47  # printed as 20.4 (truncated)
    assert not table1.matches_printed(ours * 1.01, "Ball").any()  # the check can fail


def test_cone_row_with_authors_formula():
    np.testing.assert_allclose(table1.table1_cone_row(), table1.PRINTED["Cone"], atol=0.01)
    assert np.all(table1.table1_cone_row(authors=False) < table1.table1_cone_row())


def test_row4_over_row3_is_log_v_over_a():
    ratio = np.array(table1.PRINTED["Ellipsoid + non-uniform cells"]) / np.array(table1.PRINTED["Ellipsoid"])
    np.testing.assert_allclose(ratio, table1.cells_over_ellipsoid(), atol=0.002)
    row3, row4 = (np.array(table1.PRINTED[k]) for k in ("Ellipsoid", "Ellipsoid + non-uniform cells"))
    code = row3 * table1.cells_over_ellipsoid(labels="code") - row4  # the code's labels miss 4 models
    names = [m["name"] for m in table1.models()]
    assert sorted(n for n, x in zip(names, code) if abs(x) > 0.01) == [
        "Gemma-3-270M", "Llama-3.2-1B", "Pythia-1B", "Pythia-410M"]


def test_code_labels_are_the_attached_values_permuted():
    attached = {m["name"]: m["abs_a"] for m in table1.models()}
    assert sorted(attached.values()) == sorted(table1.ABS_A_CODE_LABELS.values())
    changed = {n for n in attached if attached[n] != table1.ABS_A_CODE_LABELS[n]}
    assert changed == {"Pythia-410M", "Pythia-1B", "Llama-3.2-1B", "Gemma-3-270M"}
    try:
        table1.cells_over_ellipsoid(labels="other")
    except ValueError:
        pass
    else:
        raise AssertionError("an unknown labelling must raise")


def test_slopes_with_relative_convention():
    np.testing.assert_allclose(table1.ball_slopes("relative")[0], 590.1, atol=0.05)
    assert np.all(table1.ball_slopes("relative") < table1.ball_slopes("absolute"))


def test_digitised_n50_reproduce_slope_and_respect_bound():
    m = np.arange(1, 6)
    slope, intercept = np.polyfit(m, table1.N50_QWEN15_PG19, 1)
    assert round(slope, 2) == 79.56 and round(intercept, 1) == -32.7
    qwen = table1.models()[4]
    bound = table1.bounds.n50_upper(m, qwen["d"], qwen["r"], 2.0**-10, qwen["V"])
    assert np.all(np.array(table1.N50_QWEN15_PG19) <= bound)
