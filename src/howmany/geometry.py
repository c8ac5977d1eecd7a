"""Geometry of the last-layer states: radius r, bounding box, PCA ellipsoid, enclosing cone, bound table.

The counting bounds of Meyer et al. (2026) need the support E of the vectors fed to the
unembedding and its radius r (paper §6, Fig. 5, Fig. 9, Table 2; THEORY.md §1 and §6). We sample
those post-final-norm states from random-token prompts (real tokens only) and from natural text
(CPython's bundled ``pydoc`` topics, always available offline), at every position of prompts of
length ``cfg.length``, and summarise them. The state at a fixed first token (BOS) is the same
for every prompt; it is reported apart and left out of the support.

Explained in: book/geometry.md
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

import numpy as np
import torch
from tqdm import tqdm

from . import bounds, precision, profiles, refinements
from .models import LM

PERCENTILES = (50.0, 99.0, 99.9)
FORMATS = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class GeometryConfig:
    """How many states to sample and how."""

    n_prompts: int = 24  # prompts per source (random tokens, natural text)
    length: int = 256  # tokens per prompt after the BOS; states at every position are kept
    batch_size: int = 8  # prompts per forward pass
    max_cone_points: int = 8192  # states used for the O(N^2) pairwise-angle scan (chunked)
    seed: int = 0  # prompt sampling seed

    @classmethod
    def for_profile(cls, profile: str) -> GeometryConfig:
        """smoke: 4 x 32 tokens; default: 24 x 256; full: 512 x 512 (the paper: 10k prompts)."""
        return profiles.pick(profile, smoke=cls(n_prompts=4, length=32, max_cone_points=512),
                             default=cls(), full=cls(n_prompts=512, length=512))


@contextlib.contextmanager
def capture_unembedding_input(model):
    """Record the input of the unembedding (``lm_head``) while the block runs; always unhooks.

    Yields:
        A list that receives one ``[batch, pos, d_model]`` tensor per forward pass.

    Explained in: book/geometry.md
    """
    seen: list[torch.Tensor] = []
    handle = model.get_output_embeddings().register_forward_pre_hook(
        lambda mod, args: seen.append(args[0].detach()))
    try:
        yield seen
    finally:
        handle.remove()


def allowed_token_ids(lm: LM) -> np.ndarray:
    """Ids of ordinary tokens (no special, added-special or unused tokens; below ``d_vocab``)."""
    if lm.tokenizer is None:
        return np.arange(1, lm.d_vocab)  # tiny models: 0 is BOS
    tok = lm.tokenizer
    bad = set(tok.all_special_ids)
    for i, added in getattr(tok, "added_tokens_decoder", {}).items():
        if added.special or str(added.content).startswith("<unused"):
            bad.add(int(i))
    ids = np.arange(min(lm.d_vocab, len(tok)))
    return ids[~np.isin(ids, sorted(bad))]


def natural_text() -> str:
    """English prose available offline: the CPython help topics (``pydoc_data.topics``)."""
    try:
        from pydoc_data.topics import topics

        return "\n\n".join(topics[k] for k in sorted(topics))
    except ImportError:  # a trimmed Python: fall back to the standard library's docstrings
        import collections, json, os, re  # noqa: E401

        return "\n\n".join(m.__doc__ or "" for m in (collections, json, os, re, contextlib))


def make_prompts(lm: LM, cfg: GeometryConfig, source: str) -> torch.Tensor:
    """``[n_prompts, length]`` token ids: uniform random ordinary tokens, or windows of natural text.

    Explained in: book/geometry.md
    """
    rng = np.random.default_rng([cfg.seed, {"random": 0, "text": 1}[source]])
    if source == "random":
        ids = rng.choice(allowed_token_ids(lm), size=(cfg.n_prompts, cfg.length))
    else:
        if lm.tokenizer is None:
            raise ValueError("natural-text prompts need a tokenizer (tiny models have none)")
        stream = np.array(lm.tokenizer(natural_text(), add_special_tokens=False).input_ids)
        starts = rng.integers(0, len(stream) - cfg.length, size=cfg.n_prompts)
        ids = np.stack([stream[s:s + cfg.length] for s in starts])
    return torch.as_tensor(ids, dtype=torch.long)


@torch.inference_mode()
def sample_states(lm: LM, cfg: GeometryConfig, source: str = "random", *,
                  verbose: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Post-final-norm last-layer states at every prompt position.

    The base model's ``last_hidden_state`` is what ``lm_head`` receives (checked in the tests
    with :func:`capture_unembedding_input` for Llama, GPT-NeoX and Gemma-3).

    Returns:
        ``states [n_prompts, length, d_model]`` (float32, CPU) and ``bos_state [d_model]``
        (the state at the fixed first token, or ``None`` without one).

    Explained in: book/geometry.md
    """
    prompts = make_prompts(lm, cfg, source)
    if lm.bos_id is not None:
        prompts = torch.cat([torch.full((len(prompts), 1), lm.bos_id), prompts], dim=1)
    body, out = lm.model.base_model, []
    for batch in tqdm(prompts.split(cfg.batch_size), disable=not verbose, desc=f"{lm.name} {source}"):
        out.append(body(input_ids=batch.to(lm.device)).last_hidden_state.float().cpu())
    states = torch.cat(out)
    if lm.bos_id is None:
        return states, None
    return states[:, 1:], states[0, 0]


_MEMO: dict = {}


def sample_states_memo(lm: LM, cfg: GeometryConfig, source: str = "random"):
    """:func:`sample_states`, remembered for the last model so that cells reuse geometry's states."""
    key = (lm.name, lm.dtype, cfg, source)
    if key not in _MEMO:
        if _MEMO and next(iter(_MEMO))[0] != lm.name:
            _MEMO.clear()  # keep one model's states only
        _MEMO[key] = sample_states(lm, cfg, source)
    return _MEMO[key]


def min_pairwise_cosine(x: torch.Tensor, *, chunk: int = 1024) -> float:
    """Smallest cosine between any two rows of ``x [N, d]``, in ``chunk x N`` blocks (never N x N).

    Explained in: book/geometry.md
    """
    u = torch.nn.functional.normalize(x.double(), dim=1)
    return float(min(float((u[i:i + chunk] @ u.T).min()) for i in range(0, len(u), chunk)))


def summarize(states: torch.Tensor, *, max_cone_points: int = 8192, seed: int = 0) -> dict:
    """Radii, percentiles, bounding box, PCA ellipsoid and enclosing cones of ``states [..., d]``.

    Returns:
        A JSON-able dict: ``r_inf``, ``r_2`` (maxima), ``r_inf_pct``/``r_2_pct`` (percentiles
        ``PERCENTILES`` of the norms), ``box_lo``/``box_hi``/``widths``, ``pca_sd`` and
        ``pca_halfwidth`` (largest |projection| on each principal axis, around the mean),
        ``theta`` (arccos of the min pairwise cosine; the paper's cone angle, half-angle theta/2),
        ``phi_mean`` (largest angle to the mean direction: a cone that truly encloses the sample),
        ``n``.

    Explained in: book/geometry.md
    """
    x = states.reshape(-1, states.shape[-1]).double()
    ninf, n2 = x.abs().amax(1).numpy(), x.norm(dim=1).numpy()
    lo, hi = x.amin(0).numpy(), x.amax(0).numpy()
    centred = x - x.mean(0)
    _, sing, vt = torch.linalg.svd(centred, full_matrices=False)
    proj = centred @ vt.T  # coordinates on the principal axes
    mean_dir = torch.nn.functional.normalize(x.mean(0), dim=0)
    cos_mean = (torch.nn.functional.normalize(x, dim=1) @ mean_dir).clamp(-1, 1)
    pick = np.random.default_rng(seed).permutation(len(x))[:max_cone_points]
    return {
        "n": int(len(x)), "r_inf": float(ninf.max()), "r_2": float(n2.max()),
        "r_inf_pct": np.percentile(ninf, PERCENTILES).tolist(),
        "r_2_pct": np.percentile(n2, PERCENTILES).tolist(),
        "box_lo": lo.tolist(), "box_hi": hi.tolist(), "widths": (hi - lo).tolist(),
        "pca_sd": (sing / np.sqrt(max(len(x) - 1, 1))).tolist(),
        "pca_halfwidth": proj.abs().amax(0).tolist(),
        "theta": float(np.arccos(np.clip(min_pairwise_cosine(x[pick]), -1, 1))),
        "phi_mean": float(torch.arccos(cos_mean.min())),
    }


def radius_by_position(states: torch.Tensor) -> dict:
    """Per position: max and median over prompts of ``||h||_inf``; running max over positions.

    Explained in: book/geometry.md
    """
    ninf = states.abs().amax(-1)  # [prompt, pos]
    return {"max": ninf.amax(0).tolist(), "median": ninf.median(0).values.tolist(),
            "running_max": torch.cummax(ninf.amax(0), 0).values.tolist()}


def bound_table(summary: dict, d: int, d_vocab: int, *, conventions=("absolute", "relative"),
                formats=FORMATS) -> list[dict]:
    """Slope bounds per number format and eps convention: C_ball, C_box, C_cone (THEORY.md §6).

    ``C_ball`` uses ``r = r_inf`` (Cor. 4.6), ``C_box`` the bounding-box widths, ``C_cone`` the
    paper's half-angle ``theta / 2`` with the exact sector fraction.

    Explained in: book/geometry.md
    """
    r, widths, phi = summary["r_inf"], np.asarray(summary["widths"]), summary["theta"] / 2
    rows = []
    for conv in conventions:
        for fmt in formats:
            eps = float(precision.epsilon(fmt, r, conv))
            rows.append({"format": fmt, "convention": conv, "eps": eps,
                         "C_ball": float(bounds.slope_bound(d, r, eps, d_vocab)),
                         "C_box": float(refinements.slope_box(widths, eps, d_vocab)),
                         "C_cone": float(refinements.slope_cone(d, r, eps, d_vocab, phi))})
    return rows


def measure(lm: LM, cfg: GeometryConfig, *, sources=("random", "text"), verbose: bool = False) -> dict:
    """Sample states from each source and return the full geometry report of one model.

    Returns:
        ``{"model", "d_model", "d_vocab", "config", "sources": {src: summary + "by_position"},
        "all": summary of the union, "r_bos", "table": bound_table(all)}``.

    Explained in: book/geometry.md
    """
    if lm.tokenizer is None:
        sources = tuple(s for s in sources if s != "text")
    report, pooled, r_bos = {}, [], None
    for src in sources:
        states, bos_state = sample_states_memo(lm, cfg, src)
        report[src] = summarize(states, max_cone_points=cfg.max_cone_points, seed=cfg.seed)
        report[src]["by_position"] = radius_by_position(states)
        pooled.append(states.reshape(-1, lm.d_model))
        r_bos = None if bos_state is None else float(bos_state.abs().max())
    union = summarize(torch.cat(pooled), max_cone_points=cfg.max_cone_points, seed=cfg.seed)
    return {"model": lm.name, "d_model": lm.d_model, "d_vocab": lm.d_vocab, "config": asdict(cfg),
            "sources": report, "all": union, "r_bos": r_bos,
            "table": bound_table(union, lm.d_model, lm.d_vocab)}


def cached_measure(name: str, profile: str, *, verbose: bool = False):
    """:func:`measure` through the results store; real models are heavy (committed in ``data/geometry``).

    Real models use the fixed ``GeometryConfig()`` (the states of ``cells.cached_run`` too);
    tiny models use ``GeometryConfig.for_profile(profile)`` and recompute.

    Returns:
        A ``results.Record``; ``record.result`` is :func:`measure`'s dict.

    Explained in: book/geometry.md
    """
    from . import models, results

    real = name in models.OFFLINE
    cfg = GeometryConfig() if real else GeometryConfig.for_profile(profile)
    return results.cached(f"geometry-{name}", lambda: measure(models.load(name), cfg, verbose=verbose),
                          {"model": name, "geometry": cfg}, chapter="geometry", profile=profile,
                          heavy=real, seed=cfg.seed, device="cpu", dtype="float32")
