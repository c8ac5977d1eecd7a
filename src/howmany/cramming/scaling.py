"""Controlled scaling of the cramming slope with d and |V| on tiny random transformers.

Cor. 4.6 (Meyer et al. 2026, §4; THEORY.md §4) predicts a slope bound
``C = d ln(1 + 2r/ε) / ln|V|``: linear in the width d and inversely proportional to ln|V|.
The paper varies d and |V| only together, across pretrained models. Here we vary them one at a
time on tiny random Llama models (same depth, heads and seed), cram uniformly random token
strings for several m, and compare the measured slopes with ``d / ln|V|``.

Tiny models come from ``howmany.models.tiny``; their weights are re-drawn with a LeCun
(1/fan-in) scale, because the 0.02 default makes a random network's outputs nearly independent
of its input, so nothing can be crammed.

Explained in: book/cramming.md
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch
from tqdm import tqdm

from .. import bounds, models, profiles
from . import accessibility, thresholds
from ..devices import resolve_device
from .engine import CramConfig


def tiny_lm(*, d_model: int = 32, d_vocab: int = 64, n_layers: int = 2, seed: int = 0,
            device: str = "cpu"):
    """``models.tiny`` with LeCun-initialised weights (every matrix ~ N(0, 1/fan_in)).

    The weights are drawn on the CPU (the same on every machine), then moved to ``device``
    (``"auto"``: a GPU when one is visible).

    Explained in: book/cramming.md
    """
    lm = models.tiny(d_model=d_model, d_vocab=d_vocab, n_layers=n_layers, seed=seed, device="cpu")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in lm.model.parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
    device = resolve_device(device)
    return lm if device == "cpu" else replace(lm, model=lm.model.to(device), device=device)


@dataclass(frozen=True)
class ScalingConfig:
    """The grid of tiny models and the cramming budget."""

    d_models: tuple = (16, 32, 64)  # widths, at vocab d_vocab_ref
    d_vocabs: tuple = (64, 512, 4096)  # vocabularies, at width d_model_ref
    d_model_ref: int = 32  # width used when |V| varies
    d_vocab_ref: int = 64  # vocabulary used when d varies
    ms: tuple = (1, 2, 3)  # soft-prompt lengths
    n_strings: int = 8  # random-token strings per (model, m)
    n_max: int = 24  # longest prefix tried
    seed: int = 0  # model, string and init seed
    cram: CramConfig = field(
        default_factory=lambda: CramConfig(max_steps=150, patience=50))

    @classmethod
    def for_profile(cls, profile: str) -> ScalingConfig:
        """smoke: 2 widths, m = 1, 2, 3 strings; default/full: the 5-model cross, m = 1..3."""
        small = CramConfig(max_steps=60, patience=30)
        return profiles.pick(profile, smoke=cls(d_models=(16, 32), d_vocabs=(64,), ms=(1, 2),
                                                n_strings=3, n_max=8, cram=small),
                             default=cls())

    def grid(self) -> list[tuple[int, int]]:
        """(d, |V|) pairs: a cross through (d_model_ref, d_vocab_ref)."""
        pairs = [(d, self.d_vocab_ref) for d in self.d_models]
        pairs += [(self.d_model_ref, v) for v in self.d_vocabs]
        return list(dict.fromkeys(pairs))

    def to_dict(self) -> dict:
        return asdict(self)


def run_scaling(cfg: ScalingConfig, *, verbose: bool = False, device: str = "cpu") -> dict:
    """Thresholds (grow method) for every (d, |V|, m); slope fit per model; theory column.

    Returns:
        ``{"rows": [{d, d_vocab, m, thresholds}], "fits": [{d, d_vocab, slope, ..., C_rel}]}``
        where ``C_rel`` is Cor. 4.6's bound with the relative precision ε = r·2⁻¹¹ (then r
        cancels and C = d ln 4097 / ln|V|).

    Explained in: book/cramming.md
    """
    rows, fits = [], []
    jobs = [(d, v, m) for d, v in cfg.grid() for m in cfg.ms]
    bar = tqdm(jobs, disable=not verbose, desc="tiny scaling")
    cache: dict = {}
    for d, v, m in bar:
        if (d, v) not in cache:
            cache.clear()
            cache[(d, v)] = tiny_lm(d_model=d, d_vocab=v, seed=cfg.seed, device=device)
        lm = cache[(d, v)]
        tg = np.random.default_rng([cfg.seed, d, v]).integers(2, v, size=(cfg.n_strings, cfg.n_max))
        res = thresholds.thresholds_grow(lm.model, lm.bos_id, tg, m, cfg.cram,
                                       seeds=[cfg.seed * 1000 + m * 100 + i for i in range(cfg.n_strings)])
        rows.append({"d": d, "d_vocab": v, "m": m, "thresholds": [r["threshold"] for r in res],
                     "steps": [r["steps"] for r in res]})
    for d, v in cfg.grid():
        by_m = {r["m"]: np.array(r["thresholds"], float) for r in rows
                if r["d"] == d and r["d_vocab"] == v}
        fit = accessibility.slope_fit(by_m, n_boot=200, seed=cfg.seed).to_dict()
        c_rel = float(bounds.slope_bound(d, 1.0, 2.0**-11, v))
        fits.append({"d": d, "d_vocab": v, **fit, "C_rel": c_rel, "d_over_lnV": d / math.log(v)})
    return {"rows": rows, "fits": fits}


def proportionality(fits: list[dict]) -> dict:
    """Least-squares fit ``slope = k · d / ln|V|`` through the origin, with its R².

    Explained in: book/cramming.md
    """
    x = np.array([f["d_over_lnV"] for f in fits])
    y = np.array([f["slope"] for f in fits])
    k = float((x * y).sum() / (x * x).sum())
    ss_res, ss_tot = float(((y - k * x) ** 2).sum()), float(((y - y.mean()) ** 2).sum())
    return {"k": k, "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0}


def cold_vs_warm(*, d_model: int = 32, d_vocab: int = 64, ms=(1, 2), n_strings: int = 8,
                 n_max: int = 24, seed: int = 0, cram: CramConfig | None = None,
                 device: str = "cpu") -> dict:
    """Both threshold methods on the same strings and model: ``{method: {m: thresholds}}``.

    Explained in: book/cramming.md
    """
    cram = cram or CramConfig(max_steps=150, patience=50)
    lm = tiny_lm(d_model=d_model, d_vocab=d_vocab, seed=seed, device=device)
    tg = np.random.default_rng([seed, d_model, d_vocab]).integers(2, d_vocab, size=(n_strings, n_max))
    out: dict = {}
    for method in ("grow", "bisect"):
        fn = thresholds.THRESHOLD_METHODS[method]
        for m in ms:
            res = fn(lm.model, lm.bos_id, tg, m, cram, seeds=[seed * 1000 + m * 100 + i
                                                              for i in range(n_strings)])
            out.setdefault(method, {})[m] = [r["threshold"] for r in res]
            out.setdefault(method + "_steps", {})[m] = int(sum(r["steps"] for r in res))
    return out
