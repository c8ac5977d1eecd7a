"""Finite precision (Ass. 4.3 of Meyer et al. 2026): number formats and the three conventions for eps.

Theorem 4.5 needs a precision ``eps``: inputs in one ``eps``-cell are not told apart. What
``eps`` should be for a real model is a modelling choice; THEORY.md Sec. 1 lists three:

* ``"relative"`` (authors' code): ``eps = r * u`` with ``u = 2**-p`` the unit roundoff
  (``r * 2**-11`` for fp16), so ``1 + 2r/eps = 1 + 2**(p+1)`` whatever ``r`` is;
* ``"absolute"`` (paper, Table 1 Ball row): ``eps = 2**(1-p)``, the machine epsilon
  (``2**-10`` for fp16), so ``1 + 2r/eps = 1 + 2**p r``;
* ``"exact"`` (reconstructed): the number ``N(r)`` of distinct finite values of the format in
  ``[-r, r]``; we return the ``eps`` with ``1 + 2r/eps = N(r)``, i.e. ``eps = 2r / (N(r) - 1)``.

``n_values`` counts by enumerating all 2**16 bit patterns for fp16 / bf16; for fp32 it uses the
fact that non-negative IEEE floats are ordered like their bit patterns (the count of finite
values in ``[0, x]`` is ``bits(x) + 1``), which is also checked against enumeration in the tests.

Explained in: book/counting.md
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONVENTIONS = ("relative", "absolute", "exact")


@dataclass(frozen=True)
class Format:
    """An IEEE-like binary floating-point format."""

    name: str  # "fp32", "bf16" or "fp16"
    p: int  # significand precision in bits, hidden bit included
    exponent_bits: int  # width of the exponent field
    dtype: str  # NumPy dtype used to decode bit patterns ("bf16" goes through float32)

    @property
    def machine_eps(self) -> float:
        """Gap between 1 and the next float: ``2**(1-p)``."""
        return 2.0 ** (1 - self.p)

    @property
    def unit_roundoff(self) -> float:
        """Largest relative rounding error (round to nearest): ``2**-p``."""
        return 2.0**-self.p

    @property
    def bits(self) -> int:
        """Total width of the format (sign + exponent + stored significand)."""
        return 1 + self.exponent_bits + self.p - 1


FORMATS = {
    "fp32": Format("fp32", 24, 8, "float32"),
    "bf16": Format("bf16", 8, 8, "float32"),
    "fp16": Format("fp16", 11, 5, "float16"),
}


def get_format(fmt: str | Format) -> Format:
    """Look a format up by name (``"fp32"``, ``"bf16"``, ``"fp16"``)."""
    if isinstance(fmt, Format):
        return fmt
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {sorted(FORMATS)}")
    return FORMATS[fmt]


def all_finite_values(fmt: str | Format) -> np.ndarray:
    """Sorted distinct finite values of a 16-bit format, by enumerating its 2**16 bit patterns.

    ``+0`` and ``-0`` count once. Explained in: book/counting.md
    """
    f = get_format(fmt)
    if f.bits != 16:
        raise ValueError("enumeration is for 16-bit formats; use n_values for fp32")
    patterns = np.arange(2**16, dtype=np.uint32)
    with np.errstate(invalid="ignore"):  # NaN patterns decode with a warning; dropped below
        if f.name == "bf16":  # bf16 is the upper half of a float32
            values = (patterns << 16).view(np.float32).astype(np.float64)
        else:
            values = patterns.astype(np.uint16).view(np.float16).astype(np.float64)
    return np.unique(values[np.isfinite(values)])  # unique merges -0.0 with +0.0


def _n_values_by_bits(f: Format, r) -> np.ndarray:
    """Distinct finite values in [-r, r] from the bit pattern of the largest float <= r."""
    dtype = np.float32 if f.name == "fp32" else np.float16
    if f.name == "bf16":
        raise ValueError("bf16 is counted by enumeration")
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(over="ignore"):
        x = r.astype(dtype)
    x = np.where(x.astype(np.float64) > r, np.nextafter(x, dtype(0)), x).astype(dtype)
    x = np.minimum(x, np.finfo(dtype).max)  # r beyond the largest finite value
    uint = np.uint32 if dtype is np.float32 else np.uint16
    non_negative = x.view(uint).astype(np.int64) + 1  # bit patterns 0 .. bits(x)
    return 2 * non_negative - 1  # mirror, count zero once


def n_values(fmt: str | Format, r) -> np.ndarray:
    """Exact number ``N(r)`` of distinct finite values of ``fmt`` in ``[-r, r]`` (vectorised in r).

    fp16 / bf16: enumeration of all bit patterns; fp32: bit-pattern order (closed form).

    >>> int(n_values("fp16", 63.62)), int(n_values("fp16", 10.74))
    (42983, 37565)

    Explained in: book/counting.md
    """
    f = get_format(fmt)
    r = np.asarray(r, dtype=np.float64)
    if np.any(r < 0):
        raise ValueError("r must be >= 0")
    if f.bits == 32:
        return _n_values_by_bits(f, r)
    values = all_finite_values(f)
    return np.searchsorted(values, r, side="right") - np.searchsorted(values, -r, side="left")


def epsilon(fmt: str | Format, r, convention: str = "absolute"):
    """Precision ``eps`` of a format for prompts of radius ``r`` under one of the conventions.

    Args:
        fmt: "fp32", "bf16" or "fp16".
        r: radius of the support (array-like).
        convention: "relative" (``r * 2**-p``), "absolute" (``2**(1-p)``) or "exact"
            (``2r / (N(r) - 1)``, so that ``1 + 2r/eps`` equals the exact value count ``N(r)``).

    >>> float(epsilon("fp16", 1.0, "relative")), float(epsilon("fp16", 1.0, "absolute"))
    (0.00048828125, 0.0009765625)

    Explained in: book/counting.md
    """
    f = get_format(fmt)
    r = np.asarray(r, dtype=np.float64)
    if convention == "relative":
        return r * f.unit_roundoff
    if convention == "absolute":
        return np.full_like(r, f.machine_eps)
    if convention == "exact":
        return 2.0 * r / (n_values(f, r) - 1.0)
    raise ValueError(f"unknown convention {convention!r}; expected one of {CONVENTIONS}")


def log_values_per_coordinate(fmt: str | Format, r, convention: str = "absolute"):
    """``ln(1 + 2r/eps)``: nats one coordinate can carry under a format and convention.

    Explained in: book/counting.md
    """
    r = np.asarray(r, dtype=np.float64)
    return np.log1p(2.0 * r / epsilon(fmt, r, convention))


def format_table(r: float) -> list[dict]:
    """One row per format: p, machine eps, unit roundoff, 1 + 2r/eps per convention, bit capacity.

    Explained in: book/counting.md
    """
    rows = []
    for name, f in FORMATS.items():
        row = {"format": name, "p": f.p, "machine eps": f.machine_eps, "unit roundoff": f.unit_roundoff}
        for conv in CONVENTIONS:
            row[f"1+2r/eps ({conv})"] = float(np.exp(log_values_per_coordinate(f, r, conv)))
        row["2^bits"] = 2.0**f.bits
        rows.append(row)
    return rows
