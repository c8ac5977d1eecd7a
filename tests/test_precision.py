"""Tests for howmany.precision: format constants, exact value counts, eps conventions."""

import numpy as np
import pytest

from howmany import precision


def test_format_constants_match_numpy():
    assert precision.FORMATS["fp16"].machine_eps == np.finfo(np.float16).eps
    assert precision.FORMATS["fp32"].machine_eps == np.finfo(np.float32).eps
    one = np.float16(1)
    assert one + np.float16(2**-11) == one and one + np.float16(2**-10) > one  # u vs machine eps


def test_exact_counts():
    assert int(precision.n_values("fp16", 63.62)) == 42983
    assert int(precision.n_values("fp16", 10.74)) == 37565
    assert int(precision.n_values("fp16", 1e9)) == 2**16 - 2 * 2**10 - 1  # minus NaN/inf and -0
    assert len(precision.all_finite_values("bf16")) == 2**16 - 2 * 2**7 - 1


@pytest.mark.parametrize("r", [0.0, 1e-6, 0.5, 1.0, 10.74, 63.62, 65504.0, 1e6])
def test_fp16_closed_form_equals_enumeration(r):
    f16 = precision.FORMATS["fp16"]
    assert precision._n_values_by_bits(f16, r) == precision.n_values("fp16", r)


def test_fp32_count_by_brute_force_near_one():
    r = 1 + 100 * 2.0**-23  # float32 values in (1, r]: exactly 100 steps of one ulp, twice (sign)
    extra = int(precision.n_values("fp32", r) - precision.n_values("fp32", 1.0))
    assert extra == 2 * 100


def test_conventions():
    r = np.array([1.0, 10.74, 63.62])
    rel = precision.log_values_per_coordinate("fp16", r, "relative")
    np.testing.assert_allclose(np.exp(rel), 4097)
    np.testing.assert_allclose(np.exp(precision.log_values_per_coordinate("fp16", r, "absolute")), 1 + 2048 * r)
    exact = np.exp(precision.log_values_per_coordinate("fp16", r, "exact"))
    np.testing.assert_allclose(exact, precision.n_values("fp16", r))
    assert np.all((1 + 2048 * r > 2**16) == (r > 32))  # convention (b) exceeds the format
    with pytest.raises(ValueError):
        precision.epsilon("fp16", 1.0, "nonsense")


def test_format_table_monotone_in_precision():
    rows = {row["format"]: row for row in precision.format_table(63.62)}
    for conv in precision.CONVENTIONS:
        key = f"1+2r/eps ({conv})"
        assert rows["bf16"][key] < rows["fp16"][key] < rows["fp32"][key] or conv == "exact"
    assert rows["fp16"]["1+2r/eps (exact)"] < rows["fp16"]["2^bits"]
