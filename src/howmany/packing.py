"""Numerical packings that check the closed forms of ``howmany.bounds``.

Implements the packing numbers of THEORY.md §2, used by Thm 4.5 of Meyer et al. 2026. Pure
NumPy/SciPy: exact small cases (d = 1, the ℓ∞ grid, optimal points in a disc), an exact
brute-force packing number on tiny candidate sets, lattice packings, random maximal ε-separated
sets (greedy, chunked through k-d trees, never an N×N matrix) and uniform samples of the supports.
The Monte Carlo volume fractions of the refined bounds live in ``howmany.volumes``.

Explained in: book/packing.md
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

_P = {"l2": 2.0, "linf": np.inf}  # norm name -> Minkowski p of scipy's k-d tree
_TOL = 1e-9  # relative slack so that 2r/ε = 20 is not read as 19.999...


def packing_number_1d(r: float, eps: float) -> int:
    """Exact ε-packing number of the interval [-r, r]: ⌊2r/ε⌋ + 1.

    Explained in: book/packing.md
    """
    return int(math.floor(2 * r / eps * (1 + _TOL))) + 1


def grid_points(r: float, eps: float, dim: int) -> np.ndarray:
    """The ℓ∞-optimal packing of [-r, r]^dim: a grid of step ε from -r, (⌊2r/ε⌋+1)^dim points.

    Returns:
        Array [n_points, dim].

    Explained in: book/packing.md
    """
    axis = -r + eps * np.arange(packing_number_1d(r, eps))
    mesh = np.meshgrid(*([axis] * dim), indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def min_distance(points: np.ndarray, norm: str = "l2") -> float:
    """Smallest pairwise distance (k-d tree nearest neighbour, no N×N matrix).

    Explained in: book/packing.md
    """
    if len(points) < 2:
        return math.inf
    dist, _ = cKDTree(points).query(points, k=2, p=_P[norm])
    return float(dist[:, 1].min())


def _conflicts(points: np.ndarray, eps: float, norm: str) -> np.ndarray:
    """Pairs (i < j) at distance < ε, as an array [n_pairs, 2]."""
    pairs = cKDTree(points).query_pairs(eps, p=_P[norm], output_type="ndarray")
    if len(pairs):
        d = np.linalg.norm(points[pairs[:, 0]] - points[pairs[:, 1]], ord=_P[norm], axis=1)
        pairs = pairs[d < eps * (1 - _TOL)]
    return pairs


def greedy_packing(candidates: np.ndarray, eps: float, *, norm: str = "l2",
                   chunk: int = 4096) -> np.ndarray:
    """Greedy ε-separated subset of ``candidates`` in their given order, maximal among them.

    Candidates are processed in chunks: each chunk is first filtered against the points already
    accepted (k-d tree query), then the survivors are accepted greedily using their conflict pairs.

    Args:
        candidates: [n, dim] points, in the order in which greedy considers them.
        eps: separation ε; accepted points are pairwise at distance ≥ ε.
        norm: "l2" or "linf".
        chunk: candidates per chunk (memory is O(chunk + accepted)).

    Returns:
        [k, dim] accepted points.

    Explained in: book/packing.md
    """
    accepted = np.empty((0, candidates.shape[1]))
    for start in range(0, len(candidates), chunk):
        batch = candidates[start:start + chunk]
        if len(accepted):  # drop candidates too close to an accepted point
            d, _ = cKDTree(accepted).query(batch, k=1, p=_P[norm], distance_upper_bound=eps)
            batch = batch[d >= eps * (1 - _TOL)]
        pairs = _conflicts(batch, eps, norm)
        both = np.concatenate([pairs, pairs[:, ::-1]]) if len(pairs) else np.empty((0, 2), int)
        order = np.argsort(both[:, 0], kind="stable")  # CSR neighbour lists
        nbr = both[order, 1]
        ptr = np.searchsorted(both[order, 0], np.arange(len(batch) + 1))
        blocked = np.zeros(len(batch), bool)
        keep = []
        for i in range(len(batch)):  # greedy in order
            if not blocked[i]:
                keep.append(i)
                blocked[nbr[ptr[i]:ptr[i + 1]]] = True
        accepted = np.concatenate([accepted, batch[keep]])
    return accepted


def sample_support(n: int, dim: int, r: float, *, shape: str = "ball", norm: str = "l2",
                   rng: np.random.Generator) -> np.ndarray:
    """Uniform points in the radius-r ball of ``norm`` ("ball") or in the cube [-r, r]^dim.

    Explained in: book/packing.md
    """
    if shape == "cube" or norm == "linf":
        return rng.uniform(-r, r, size=(n, dim))
    g = rng.standard_normal((n, dim))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return g * r * rng.random((n, 1)) ** (1 / dim)


def random_maximal_packing(r: float, eps: float, dim: int, *, norm: str = "l2", shape: str = "ball",
                           oversample: int = 30, rng: np.random.Generator) -> np.ndarray:
    """A random maximal ε-separated set of the radius-r ball (random sequential adsorption).

    Greedy over ``oversample × (1+2r/ε)^dim`` uniform candidates, so the result is maximal among a
    dense sample; its size lies between (r/ε)^dim and (1+2r/ε)^dim (THEORY.md §2).

    Explained in: book/packing.md
    """
    n = int(oversample * (1 + 2 * r / eps) ** dim) + 100
    return greedy_packing(sample_support(n, dim, r, shape=shape, norm=norm, rng=rng), eps, norm=norm)


def max_packing_bruteforce(points: np.ndarray, eps: float, *, norm: str = "l2") -> int:
    """Exact size of the largest ε-separated subset of a small point set (branch and bound).

    A maximum independent set of the conflict graph; use only for ≲ 40 points.

    Explained in: book/packing.md
    """
    n = len(points)
    adj = [0] * n
    for i, j in _conflicts(points, eps, norm):
        adj[i] |= 1 << int(j)
        adj[j] |= 1 << int(i)

    def best(cand: int) -> int:
        if cand == 0:
            return 0
        v = cand.bit_length() - 1  # branch on the highest remaining vertex
        take = 1 + best(cand & ~adj[v] & ~(1 << v))
        if take > cand.bit_count() - 1:  # cannot beat it without v
            return take
        return max(take, best(cand & ~(1 << v)))

    return best((1 << n) - 1)


DISC_DELTA = {  # optimal minimum distance of k points in the unit disc (THEORY.md §2)
    1: math.inf, 2: 2.0, 3: math.sqrt(3), 4: math.sqrt(2), 5: 2 * math.sin(math.pi / 5), 6: 1.0, 7: 1.0,
}


def disc_optimal_points(k: int, r: float = 1.0) -> np.ndarray:
    """The optimal k-point configurations in the disc of radius r (k ≤ 7): a regular k-gon on the
    circle for k ≤ 5, a pentagon (k = 6) or hexagon (k = 7) plus the centre.

    Explained in: book/packing.md
    """
    if k == 1:
        return np.zeros((1, 2))
    ring = k if k <= 5 else k - 1
    angle = 2 * np.pi * np.arange(ring) / ring
    pts = r * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return pts if k <= 5 else np.vstack([pts, np.zeros((1, 2))])


def disc_packing_number(r: float, eps: float) -> int:
    """Exact Euclidean ε-packing number of the disc of radius r for ε ≥ r: max{k : δ_k r ≥ ε}.

    Explained in: book/packing.md
    """
    if eps < r * (1 - _TOL):
        raise ValueError("exact values are tabulated for eps >= r only (at most 7 points)")
    return max(k for k, dk in DISC_DELTA.items() if dk * r >= eps * (1 - _TOL))


def lattice_packing(r: float, eps: float, dim: int, *, kind: str = "cubic",
                    shape: str = "ball") -> np.ndarray:
    """Points of a lattice with minimum distance ε inside the radius-r ℓ2 ball (or cube [-r, r]^dim).

    ``kind``: "cubic" (εZ^dim), "hex" (triangular lattice, dim = 2) or "fcc" (dim = 3).

    Explained in: book/packing.md
    """
    if kind == "cubic":
        basis = np.eye(dim)
    elif kind == "hex" and dim == 2:
        basis = np.array([[1.0, 0.0], [0.5, math.sqrt(3) / 2]])
    elif kind == "fcc" and dim == 3:
        basis = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]) / math.sqrt(2)
    else:
        raise ValueError(f"unknown lattice {kind!r} in dimension {dim}")
    basis = eps * basis
    span = int(math.ceil(r / eps / np.linalg.svd(basis / eps, compute_uv=False).min())) + 1
    coef = np.stack(np.meshgrid(*([np.arange(-span, span + 1)] * dim), indexing="ij"), -1)
    pts = coef.reshape(-1, dim) @ basis
    if shape == "cube":
        return pts[np.abs(pts).max(axis=1) <= r * (1 + _TOL)]
    return pts[np.linalg.norm(pts, axis=1) <= r * (1 + _TOL)]


def packing_sweep(ratios, dim: int, *, oversample: int = 15, seed: int = 0, n_random: int = 3) -> list[dict]:
    """Sizes of four ε-packings (ε = 1) for each r/ε in ``ratios``: the ℓ∞ grid of the cube, the
    cubic and the densest lattice in the ℓ2 ball, and the mean of ``n_random`` random maximal sets.

    Returns:
        One dict per ratio with keys "grid", "cubic lattice", "<densest> lattice", "random maximal".

    Explained in: book/packing.md
    """
    densest = {1: "cubic", 2: "hex", 3: "fcc"}[dim]
    rows = []
    for x in ratios:
        rnd = [len(random_maximal_packing(x, 1.0, dim, oversample=oversample,
                                          rng=np.random.default_rng(seed + i))) for i in range(n_random)]
        rows.append({"grid": len(grid_points(x, 1.0, dim)),
                     "cubic lattice": len(lattice_packing(x, 1.0, dim)),
                     f"{densest} lattice": len(lattice_packing(x, 1.0, dim, kind=densest)),
                     "random maximal": float(np.mean(rnd))})
    return rows
