"""Decoder cell volumes: who owns the output space (Meyer et al. 2026, §5.3, Table 1 row 4, Table 3).

The argmax cell of token t is ``E_t = {h in E : argmax(W h + b) = t}`` (THEORY.md §1, §6). We
estimate the volume fractions ``p_t = vol(E_t) / vol(E)`` by Monte Carlo over a support E built
from measured last-layer states (bounding box, origin-centred l2 ball, PCA ellipsoid, or the
empirical states themselves), in chunks, with binomial standard errors. The authors' code uses
the nearest-row (Euclidean Voronoi) rule instead; ``rule="voronoi"`` reproduces it.

Never-hit tokens are handled with a stated bound: Monte Carlo cannot resolve ``p_t < 1/N``, and
a token whose cell is empty makes ``mu = -mean_t ln p_t`` infinite. We report the plug-in over
hit tokens and a lower bound on mu: Jensen on the never-hit group plus a Good-Turing upper
confidence bound on its total mass. Hence ``C ln|V| / mu_lower`` is an upper bound on the
refined slope (up to the Monte Carlo error of the hit cells).

Explained in: book/cells.md
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from . import models, profiles

SUPPORTS = ("box", "ball", "ellipsoid", "empirical")


@dataclass(frozen=True)
class CellsConfig:
    """Monte Carlo settings."""

    n_samples: int = 2**18  # points drawn from the support
    support: str = "box"  # one of SUPPORTS
    rule: str = "argmax"  # "argmax" (the paper's cells) or "voronoi" (the authors' code)
    chunk: int = 4096  # points per matmul
    screen_dtype: str = "float32"  # "bfloat16": fast screen + float32 recheck (needs AVX512-BF16)
    seed: int = 0  # sampling seed

    n_other: int = 2**13  # points for each other support and for the Voronoi comparison

    @classmethod
    def for_profile(cls, profile: str) -> CellsConfig:
        """smoke: 2^14 points; default: 2^18; full: 2^20 (> 10^6)."""
        return profiles.pick(profile, smoke=cls(n_samples=2**14, n_other=2**11), default=cls(),
                             full=cls(n_samples=2**20))

    @classmethod
    def for_model(cls, name: str, profile: str) -> CellsConfig:
        """Real models: the fixed config of the committed run (``REAL``); tiny ones: by profile."""
        return cls(**REAL[name]) if name in REAL else cls.for_profile(profile)


# Committed runs of the real models: a point costs 2 d |V| flops (5.7e7 SmolLM2, 3.4e8 Gemma-3).
# On this 2-core CPU SmolLM2's 2^20 points take about 5 min (benchmarks/bench_cells.py); Gemma-3's
# 10^6 would take over 20 min even at the GEMM peak, so it gets 2^16. `make results` refreshes them.
REAL = {"smollm2-135m": {"n_samples": 2**20, "n_other": 2**14},
        "gemma3-270m": {"n_samples": 2**16, "n_other": 2**12}}


def decoder(model) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Unembedding rows ``W [d_vocab, d_model]`` and bias ``b [d_vocab]`` (or None), as float32."""
    head = model.get_output_embeddings()
    bias = getattr(head, "bias", None)
    return head.weight.detach().float(), None if bias is None else bias.detach().float()


class Support:
    """A sampler of points from the measured support of the last-layer states.

    Explained in: book/cells.md
    """

    def __init__(self, states: torch.Tensor, kind: str = "box"):
        if kind not in SUPPORTS:
            raise ValueError(f"support must be one of {SUPPORTS}, not {kind!r}")
        x = states.reshape(-1, states.shape[-1]).float()
        self.kind, self.d = kind, x.shape[1]
        self.lo, self.hi = x.amin(0), x.amax(0)  # bounding box
        self.r2 = float(x.norm(dim=1).max())  # radius of the origin-centred l2 ball
        self.mean = x.mean(0)
        _, _, vt = torch.linalg.svd(x - self.mean, full_matrices=False)
        self.axes = vt  # principal directions, rows
        self.semi = ((x - self.mean) @ vt.T).abs().amax(0)  # ellipsoid semi-axes (max |projection|)
        self.points = x if kind == "empirical" else None

    def sample(self, n: int, gen: torch.Generator) -> torch.Tensor:
        """``n`` points, uniform in the support (empirical: drawn with replacement)."""
        if self.kind == "box":
            return self.lo + (self.hi - self.lo) * torch.rand(n, self.d, generator=gen)
        if self.kind == "empirical":
            return self.points[torch.randint(len(self.points), (n,), generator=gen)]
        k = self.d if self.kind == "ball" else len(self.semi)  # ellipsoid: rank of the sample
        g = torch.randn(n, k, generator=gen)  # uniform in the unit ball: direction * U^(1/k)
        unit = g / g.norm(dim=1, keepdim=True) * torch.rand(n, 1, generator=gen) ** (1.0 / k)
        if self.kind == "ball":
            return self.r2 * unit
        return self.mean + (unit * self.semi) @ self.axes


def assign(h: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None = None, *, rule: str = "argmax",
           screen_dtype: str = "float32", recheck: int = 8) -> torch.Tensor:
    """Cell index of each row of ``h [n, d]``: argmax of ``W h + b`` or the nearest row of W.

    With a low-precision ``screen_dtype`` the logits are computed fast and the ``recheck``
    best candidates are re-scored in float32, so ties within bf16 rounding are decided exactly.

    Explained in: book/cells.md
    """
    if rule == "voronoi":  # argmin |h - w|^2 = argmax <w, h> - |w|^2 / 2  (a power diagram)
        offset = -0.5 * (W * W).sum(1)
    elif rule == "argmax":
        offset = b
    else:
        raise ValueError("rule must be 'argmax' or 'voronoi'")
    if screen_dtype == "float32":
        return _argmax_blocked(h, W, offset)
    offset = torch.zeros(W.shape[0]) if offset is None else offset
    dt = getattr(torch, screen_dtype)
    cand = (h.to(dt) @ W.to(dt).T + offset.to(dt)).topk(recheck, dim=1).indices  # [n, recheck]
    exact = torch.einsum("nd,nkd->nk", h, W[cand]) + offset[cand]
    return cand.gather(1, exact.argmax(1, keepdim=True)).squeeze(1)


def _argmax_blocked(h: torch.Tensor, W: torch.Tensor, offset: torch.Tensor | None,
                    block: int = 8192) -> torch.Tensor:
    """``argmax(h @ W.T + offset, 1)`` over blocks of vocabulary rows: each block's logits stay
    in cache for their max, and no ``[n, |V|]`` matrix is allocated (1.3x faster at |V| = 49,152)."""
    n = h.shape[0]
    best_v = torch.full((n,), -torch.inf, dtype=h.dtype)
    best_i = torch.zeros(n, dtype=torch.long)
    buf = torch.empty(n, min(block, W.shape[0]), dtype=h.dtype)
    for s in range(0, W.shape[0], block):
        w = W[s : s + block]
        out = buf[:, : w.shape[0]] if w.shape[0] == buf.shape[1] else torch.empty(n, w.shape[0])
        torch.mm(h, w.T, out=out)
        if offset is not None:
            out += offset[s : s + block]
        v, i = out.max(1)
        better = v > best_v  # strict: ties go to the lower id, as with argmax
        best_v, best_i = torch.where(better, v, best_v), torch.where(better, i + s, best_i)
    return best_i


@torch.inference_mode()
def count_cells(W: torch.Tensor, b: torch.Tensor | None, support: Support, cfg: CellsConfig, *,
                verbose: bool = False) -> np.ndarray:
    """Monte Carlo hit counts ``[d_vocab]`` of the cells over ``cfg.n_samples`` support points.

    Explained in: book/cells.md
    """
    gen = torch.Generator().manual_seed(cfg.seed)
    counts = torch.zeros(W.shape[0], dtype=torch.long)
    sizes = [cfg.chunk] * (cfg.n_samples // cfg.chunk) + [cfg.n_samples % cfg.chunk]
    for n in tqdm([s for s in sizes if s], disable=not verbose, desc=f"cells {support.kind}"):
        idx = assign(support.sample(n, gen), W, b, rule=cfg.rule, screen_dtype=cfg.screen_dtype)
        counts += torch.bincount(idx, minlength=W.shape[0])
    return counts.numpy()


def cell_statistics(counts: np.ndarray, *, delta: float = 0.05, top: int = 50) -> dict:
    """Concentration of the cell volumes and the entropy rate mu with its lower bound.

    ``mu_lower`` uses the plug-in ``-ln p_hat`` for hit cells and, for the ``k0`` never-hit
    cells of unknown total mass ``M0``, Jensen ``-sum ln p_t >= -k0 ln(M0 / k0)`` with the
    Good-Turing bound ``M0 <= n1/N + (2 sqrt 2 + sqrt 3) sqrt(ln(3/delta)/N)`` (McAllester &
    Schapire 2000; holds with probability ``1 - delta``). Dead cells make the true mu infinite.

    Returns:
        JSON-able dict: ``n``, ``d_vocab``, ``n_hit``; ``top_ids``/``top_p``/``top_se`` (the
        ``top`` largest cells, binomial standard errors); ``count_values``/``count_freq`` (how
        many tokens were hit exactly c times: enough to rebuild the rank-volume curve);
        ``n80`` (tokens holding 80 % of the volume), ``missing_mass_upper``, ``mu_hit`` (mean of
        -ln p_hat over hit cells, not a bound), ``mu_lower``, ``sigma_hit`` (std of ln p_hat).

    Explained in: book/cells.md
    """
    counts = np.asarray(counts, dtype=np.int64)
    n, V = int(counts.sum()), len(counts)
    order = np.argsort(-counts, kind="stable")[:top]
    hit = counts[counts > 0]
    k0, n1 = V - len(hit), int((hit == 1).sum())
    m0 = min(1.0, n1 / n + (2 * np.sqrt(2) + np.sqrt(3)) * np.sqrt(np.log(3 / delta) / n))
    lnp = np.log(hit / n)
    values, freq = np.unique(hit, return_counts=True)
    p_top = counts[order] / n
    return {"n": n, "d_vocab": V, "n_hit": int(len(hit)), "top_ids": order.tolist(),
            "top_p": p_top.tolist(), "top_se": np.sqrt(p_top * (1 - p_top) / n).tolist(),
            "count_values": values[::-1].tolist(), "count_freq": freq[::-1].tolist(),
            "n80": int(np.searchsorted(np.cumsum(np.sort(hit)[::-1]) / n, 0.8) + 1),
            "missing_mass_upper": float(m0), "mu_hit": float(-lnp.mean()),
            "mu_lower": float((-lnp.sum() - (k0 * np.log(m0 / k0) if k0 else 0.0)) / V),
            "sigma_hit": float(lnp.std())}


def rank_volume(stats: dict) -> np.ndarray:
    """Cell fractions sorted in decreasing order (hit cells only), rebuilt from the count histogram.

    Explained in: book/cells.md
    """
    return np.repeat(np.asarray(stats["count_values"], float), stats["count_freq"]) / stats["n"]


def measure(lm, states: torch.Tensor, cfg: CellsConfig, *, verbose: bool = False) -> dict:
    """Cell statistics of one model over a support built from its states, plus the Voronoi check.

    Returns:
        ``cell_statistics`` of the ``cfg.rule`` cells over ``cfg.support``, with ``top_strings``
        (decoded); ``voronoi``: on ``cfg.n_other`` shared points, the fraction where the
        nearest-row rule picks the argmax token (``agree``) and the largest Voronoi cells;
        ``supports``: ``cell_statistics`` (top 10) over every other support, ``cfg.n_other`` points.

    Explained in: book/cells.md
    """
    W, b = decoder(lm.model)
    support = Support(states, cfg.support)
    out = cell_statistics(count_cells(W, b, support, cfg, verbose=verbose))
    out["top_strings"] = models.token_strings(lm.tokenizer, out["top_ids"])
    pts = support.sample(cfg.n_other, torch.Generator().manual_seed(cfg.seed + 1))
    arg, vor = assign(pts, W, b), assign(pts, W, b, rule="voronoi")
    vstats = cell_statistics(torch.bincount(vor, minlength=W.shape[0]).numpy(), top=10)
    out["voronoi"] = {"agree": float((arg == vor).float().mean()), "n": cfg.n_other,
                      "top_ids": vstats["top_ids"], "top_p": vstats["top_p"],
                      "top_strings": models.token_strings(lm.tokenizer, vstats["top_ids"])}
    out["supports"] = {}
    for kind in (k for k in SUPPORTS if k != cfg.support):
        small = dataclasses.replace(cfg, support=kind, n_samples=cfg.n_other)
        st = cell_statistics(count_cells(W, b, Support(states, kind), small), top=10)
        st["top_strings"] = models.token_strings(lm.tokenizer, st["top_ids"])
        out["supports"][kind] = st
    return out


@torch.inference_mode()
def plane_labels(W: torch.Tensor, b: torch.Tensor | None, anchors: torch.Tensor, *, n: int = 200,
                 margin: float = 0.5) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """Argmax token on a grid over the plane through three states ``anchors [3, d]``.

    Points are ``h0 + s (h1 - h0) + t (h2 - h0)`` for ``s, t`` in ``[-margin, 1 + margin]``.

    Returns:
        ``labels [n, n]`` (row = t, column = s) and the ``(s_min, s_max, t_min, t_max)`` extent.

    Explained in: book/cells.md
    """
    grid = torch.linspace(-margin, 1 + margin, n)
    t, s = torch.meshgrid(grid, grid, indexing="ij")
    h0, h1, h2 = anchors.float()
    pts = h0 + s.reshape(-1, 1) * (h1 - h0) + t.reshape(-1, 1) * (h2 - h0)
    labels = torch.cat([assign(c, W, b) for c in pts.split(4096)]).reshape(n, n)
    return labels.numpy(), (-margin, 1 + margin, -margin, 1 + margin)


def run(name: str, gcfg, cfg: CellsConfig, *, verbose: bool = False) -> dict:
    """Load a model, sample its states (``geometry.GeometryConfig`` ``gcfg``) and measure its cells.

    Returns:
        :func:`measure`'s dict plus ``model``, ``d_model``, ``d_vocab`` and ``geometry`` (the
        bound table of the same states, for the refined slopes).

    Explained in: book/cells.md
    """
    from . import geometry

    lm = models.load(name)
    sources = ("random",) if lm.tokenizer is None else ("random", "text")
    states = torch.cat([geometry.sample_states_memo(lm, gcfg, s)[0].reshape(-1, lm.d_model)
                        for s in sources])
    summary = geometry.summarize(states, max_cone_points=gcfg.max_cone_points, seed=gcfg.seed)
    out = measure(lm, states, cfg, verbose=verbose)
    out.update(model=name, d_model=lm.d_model, d_vocab=lm.d_vocab,
               geometry=geometry.bound_table(summary, lm.d_model, lm.d_vocab))
    return out


def cached_run(name: str, profile: str, *, verbose: bool = False):
    """:func:`run` through the results store: real models are heavy (committed in ``data/cells``).

    Returns:
        A ``results.Record``; ``record.result`` is :func:`run`'s dict.

    Explained in: book/cells.md
    """
    from . import geometry, results

    real = name in REAL
    gcfg = geometry.GeometryConfig() if real else geometry.GeometryConfig.for_profile(profile)
    cfg = CellsConfig.for_model(name, profile)
    return results.cached(f"cells-{name}", lambda: run(name, gcfg, cfg, verbose=verbose),
                          {"model": name, "geometry": gcfg, "cells": cfg}, chapter="cells",
                          profile=profile, heavy=real, seed=cfg.seed, device="cpu", dtype="float32")
