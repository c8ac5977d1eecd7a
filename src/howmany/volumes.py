"""Monte Carlo volume fractions that check the refined bounds of ``howmany.bounds``.

The refinements of Meyer et al. (2026, §5; THEORY.md §6) replace the ball of radius r by a
smaller region or weight the decoder's cells unequally; each rests on a volume fraction with a
closed form: the cone sector f_d(φ), the ellipsoid's volume V_d ∏ a_i, a box inside the cube and
the decoder cells' fractions p_t. These functions estimate each one by sampling, with a standard
error, so the book can set the closed form beside an independent count. Pure NumPy.

Explained in: book/refined.md
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from howmany.packing import sample_support


def mc_fraction(indicator: Callable[[np.ndarray], np.ndarray], sampler: Callable[[int], np.ndarray],
                n: int, *, chunk: int = 200_000) -> tuple[float, float]:
    """Monte Carlo fraction of samples with ``indicator`` true: (estimate, standard error).

    Explained in: book/refined.md
    """
    hits, done = 0, 0
    while done < n:
        k = min(chunk, n - done)
        hits += int(np.count_nonzero(indicator(sampler(k))))
        done += k
    p = hits / n
    return p, math.sqrt(max(p * (1 - p), 1e-300) / n)


def mc_cone_fraction(dim: int, phi: float, n: int, *, rng: np.random.Generator) -> tuple[float, float]:
    """Fraction of the ℓ2 ball inside the cone {h : ∠(h, e₁) ≤ φ} (a spherical sector), by MC.

    The cone is scale invariant, so uniform directions suffice. Compare with f_d(φ).

    Explained in: book/refined.md
    """
    def inside(x):
        return x[:, 0] >= np.cos(phi) * np.linalg.norm(x, axis=1)

    return mc_fraction(inside, lambda k: rng.standard_normal((k, dim)), n)


def mc_ellipsoid_volume(axes, n: int, *, rng: np.random.Generator) -> tuple[float, float]:
    """Volume of the ellipsoid with semi-axes ``axes``: bounding-box volume × MC hit fraction.

    Compare with V_d ∏ a_i. Returns (estimate, standard error).

    Explained in: book/refined.md
    """
    a = np.asarray(axes, float)
    box = float(np.prod(2 * a))
    p, se = mc_fraction(lambda x: ((x / a) ** 2).sum(axis=1) <= 1,
                        lambda k: rng.uniform(-a, a, size=(k, len(a))), n)
    return box * p, box * se


def mc_box_in_ball_fraction(widths, r: float, n: int, *, rng: np.random.Generator) -> tuple[float, float]:
    """Fraction of the cube [-r, r]^d covered by a centred box of the given widths, by MC.

    Compare with ∏ w_i / (2r)^d.

    Explained in: book/refined.md
    """
    w = np.asarray(widths, float)
    return mc_fraction(lambda x: np.all(np.abs(x) <= w / 2, axis=1),
                       lambda k: rng.uniform(-r, r, size=(k, len(w))), n)


def mc_cell_fractions(W: np.ndarray, b: np.ndarray | None, n: int, *, rule: str = "argmax",
                      radius: float = 1.0, rng: np.random.Generator, chunk: int = 100_000) -> np.ndarray:
    """Volume fractions p_t of the decoder cells E_t in a ball, by Monte Carlo.

    Args:
        W: [V, d] decoder rows w_t; b: [V] biases or None.
        rule: "argmax" (cells of greedy decoding, ⟨w_t,h⟩+b_t maximal) or "voronoi" (nearest row).
        radius: radius of the ℓ2 ball the states are sampled in.

    Returns:
        [V] fractions summing to 1.

    Explained in: book/refined.md
    """
    counts = np.zeros(len(W), np.int64)
    bias = np.zeros(len(W)) if b is None else np.asarray(b, float)
    for start in range(0, n, chunk):
        h = sample_support(min(chunk, n - start), W.shape[1], radius, rng=rng)
        score = h @ W.T + bias if rule == "argmax" else -((h[:, None, :] - W[None]) ** 2).sum(-1)
        counts += np.bincount(score.argmax(axis=1), minlength=len(W))
    return counts / n
