"""The authors' radius r_inf: last-position states of random-token prompts, per dtype and length.

The paper's Table 2 lists a radius r per model (Meyer et al. 2026, §6, Fig. 5); the authors' code
feeds sequences of token ids drawn uniformly over the whole embedding matrix (special tokens
included, no BOS) of lengths 4, 8, ..., 4096 to the base model (``AutoModel``), keeps the
``last_hidden_state`` at the last position, and reports the largest l-infinity norm over all
sequences, computed in NumPy on float32 copies. :func:`sweep` does the same for one model in one
dtype, counting states that hold inf or NaN, and :func:`authors_statistic` reproduces what that
NumPy maximum returns on such states. :func:`unloaded_twin` builds the randomly initialised model
that ``AutoModel`` returns for a Gemma-3 causal-LM checkpoint in transformers 4.56 (the weights
are not matched, and RMSNorm weights start at one). :func:`largest_cells` gives the largest
decoder cell over the bounding box of each measurement's states.

Explained in: book/geometry.md
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from . import cells, models, profiles

WEIGHTS = ("loaded", "unloaded")  # the checkpoint's weights, or the random init AutoModel gave Gemma-3


@dataclass(frozen=True)
class RadiusConfig:
    """Which prompts, how many, and in which number formats."""

    lengths: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512, 1024)  # the authors: 4 ... 4096
    n_samples: tuple[int, ...] = (64, 64, 64, 64, 64, 32, 16, 8, 4)  # per length (authors: 10^4)
    batch_tokens: int = 1024  # tokens per forward pass (batch = max(1, batch_tokens // length))
    cell_points: int = 2**10  # Monte Carlo points for the largest cell over the states' box
    seed: int = 0  # the ids of length L use seed + L, as the authors' script does

    def __post_init__(self):
        if len(self.lengths) != len(self.n_samples):
            raise ValueError("lengths and n_samples must have the same length")

    @classmethod
    def for_profile(cls, profile: str) -> RadiusConfig:
        """smoke: 3 lengths x 8 sequences; default and full: the committed CPU sweep."""
        return profiles.pick(profile, smoke=cls(lengths=(4, 8, 16), n_samples=(8, 8, 8),
                                                batch_tokens=32, cell_points=2**10), default=cls())


def random_ids(d_embed: int, length: int, n: int, *, seed: int) -> torch.Tensor:
    """``[n, length]`` token ids uniform over ``0 .. d_embed - 1`` (every row of the embedding).

    Explained in: book/geometry.md
    """
    gen = torch.Generator().manual_seed(seed + length)
    return torch.randint(0, d_embed, (n, length), generator=gen)


@torch.inference_mode()
def last_states(body, ids: torch.Tensor, *, batch_size: int = 8) -> torch.Tensor:
    """``last_hidden_state[:, -1]`` of the base model for each row of ``ids``, as float32 ``[n, d]``.

    The model runs in its own dtype; inf and NaN are kept as they come out.

    Explained in: book/geometry.md
    """
    out = []
    for batch in ids.split(batch_size):
        h = body(input_ids=batch, attention_mask=torch.ones_like(batch), use_cache=False)
        out.append(h.last_hidden_state[:, -1].float())
    return torch.cat(out)


def linf_norms(states: torch.Tensor) -> np.ndarray:
    """Per-state ``max_i |h_i|`` in NumPy: a state holding NaN gives NaN, one holding inf gives inf.

    Explained in: book/geometry.md
    """
    return np.abs(states.numpy()).max(axis=1)


def authors_statistic(states: torch.Tensor) -> float:
    """The authors' r_inf: NumPy's largest row l-infinity norm, NaN and inf propagating.

    One NaN state makes it NaN, one inf state (and no NaN) makes it inf: overflowed states can
    never lower it.

    Explained in: book/geometry.md
    """
    return float(np.max(np.linalg.norm(states.numpy(), ord=np.inf, axis=1)))


def nonfinite_counts(states: torch.Tensor) -> dict:
    """States holding a NaN (``n_nan``) and states holding inf but no NaN (``n_inf``).

    Explained in: book/geometry.md
    """
    nan = torch.isnan(states).any(1)
    inf = torch.isinf(states).any(1) & ~nan
    return {"n": len(states), "n_nan": int(nan.sum()), "n_inf": int(inf.sum())}


def summarize(states: torch.Tensor) -> dict:
    """Per-state norms and the radius statistics of one set of states ``[n, d]``.

    Returns:
        ``linf`` (per state, ``None`` where not finite), ``r_inf`` (max over finite states, the
        book's statistic), ``authors`` (``repr`` of :func:`authors_statistic`: a number,
        ``'nan'`` or ``'inf'``), ``r_2`` (max finite l2 norm) and :func:`nonfinite_counts`.

    Explained in: book/geometry.md
    """
    ninf = linf_norms(states)
    ok = np.isfinite(ninf)
    return {"linf": [float(v) if f else None for v, f in zip(ninf, ok)],
            "r_inf": float(ninf[ok].max()) if ok.any() else None,
            "authors": repr(authors_statistic(states)),
            "r_2": float(states[torch.from_numpy(ok)].norm(dim=1).max()) if ok.any() else None,
            **nonfinite_counts(states)}


def running_max(linf: list) -> np.ndarray:
    """Largest finite norm among the first k states, for k = 1 .. n (stability of the maximum).

    Explained in: book/geometry.md
    """
    x = np.array([-np.inf if v is None else v for v in linf], dtype=float)
    return np.maximum.accumulate(x)


def pooled_norms(result: dict, *, seed: int = 0) -> list:
    """Every state's ``||h||_inf`` of a :func:`sweep` over all lengths, in a seeded random order.

    Feeding this to :func:`running_max` shows how the pooled maximum (the paper's r) settles.

    Explained in: book/geometry.md
    """
    norms = [v for row in result["lengths"] for v in row["linf"]]
    return [norms[i] for i in np.random.default_rng(seed).permutation(len(norms))]


def unloaded_twin(lm, *, seed: int = 0, norm_init: float = 1.0):
    """The base model with random weights, as ``AutoModel`` builds it when no checkpoint key matches.

    With transformers 4.56, ``AutoModel.from_pretrained`` on a Gemma-3 causal-LM checkpoint
    returns a ``Gemma3TextModel`` none of whose 236 weights are loaded; new RMSNorm weights were
    set to one (``norm_init``), so Gemma's ``(1 + w)`` scales by two.

    Returns:
        A float32 base model in eval mode, frozen.

    Explained in: book/geometry.md
    """
    base = lm.model.base_model
    torch.manual_seed(seed)
    body = type(base)(base.config)  # the class's own random initialisation
    for mod in body.modules():
        if "RMSNorm" in type(mod).__name__ and getattr(mod, "weight", None) is not None:
            mod.weight.data.fill_(norm_init)
    return body.float().eval().requires_grad_(False)


def sweep(body, cfg: RadiusConfig, *, verbose: bool = False) -> dict:
    """r_inf of one base model in its current dtype at every prompt length of ``cfg``.

    Returns:
        ``{"lengths": [summarize(...) + "length" + "wall_s"], "pooled": summarize of all
        lengths without the per-state list}``; the pooled ``authors`` value is the paper's statistic.

    Explained in: book/geometry.md
    """
    d_embed = body.get_input_embeddings().weight.shape[0]
    rows, pooled = [], []
    for length, n in tqdm(list(zip(cfg.lengths, cfg.n_samples)), disable=not verbose):
        t0 = time.perf_counter()
        states = last_states(body, random_ids(d_embed, length, n, seed=cfg.seed),
                             batch_size=max(1, cfg.batch_tokens // length))
        rows.append({"length": length, **summarize(states), "wall_s": time.perf_counter() - t0})
        pooled.append(states)
    whole = summarize(torch.cat(pooled))
    del whole["linf"]
    return {"lengths": rows, "pooled": whole, "states": torch.cat(pooled)}


def largest_cells(lm, states: torch.Tensor, cfg: RadiusConfig) -> dict:
    """Largest argmax and nearest-row cell over the bounding box of the finite ``states``.

    The decoder is always the loaded model's (the authors' cell code loads it with
    ``AutoModelForCausalLM``, which matches the checkpoint).

    Returns:
        Per rule: ``p_max``, its binomial ``se``, the token ``string``, ``n_hit`` and ``n``.

    Explained in: book/cells.md
    """
    W, b = cells.decoder(lm.model)
    finite = states[torch.isfinite(states).all(1)]
    support = cells.Support(finite, "box")
    out = {}
    for rule in ("argmax", "voronoi"):
        ccfg = cells.CellsConfig(n_samples=cfg.cell_points, rule=rule, seed=cfg.seed)
        st = cells.cell_statistics(cells.count_cells(W, b, support, ccfg), top=1)
        out[rule] = {"p_max": st["top_p"][0], "se": st["top_se"][0], "n_hit": st["n_hit"],
                     "n": st["n"], "string": models.token_strings(lm.tokenizer, st["top_ids"])[0]}
    return out


def _body(name: str, weights: str, dtype: str, cfg: RadiusConfig):
    """``(lm, base model)``: ``name`` loaded in ``dtype``, or its unloaded twin cast to it."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, not {weights!r}")
    lm = models.load(name, dtype=dtype if weights == "loaded" else "float32", device="cpu")
    body = lm.model.base_model if weights == "loaded" else unloaded_twin(lm, seed=cfg.seed)
    return lm, body.to(getattr(torch, dtype))


def run(name: str, weights: str, dtype: str, cfg: RadiusConfig, *, verbose: bool = False) -> dict:
    """Load ``name`` (or its unloaded twin) in ``dtype``, :func:`sweep` it and find its largest cells.

    Explained in: book/geometry.md
    """
    lm, body = _body(name, weights, dtype, cfg)
    out = sweep(body, cfg, verbose=verbose)
    if dtype != "float32":  # the decoder in float32 for the cells, never a rounded copy
        lm = models.load(name, device="cpu")
    out["cells"] = largest_cells(lm, out.pop("states"), cfg)
    out.update(model=name, weights=weights, dtype=dtype, d_model=lm.d_model, d_vocab=lm.d_vocab)
    return out


def cone_angle(name: str, weights: str, dtype: str, cfg: RadiusConfig) -> dict:
    """The widest angle between two of :func:`sweep`'s finite states, the paper's cone angle
    theta (its cone has half-angle theta / 2), measured on the authors' sampling.

    Returns:
        ``theta`` (radians: the arccosine of the smallest pairwise cosine) and ``n`` (states).

    Explained in: book/geometry.md
    """
    from .geometry import min_pairwise_cosine

    states = sweep(_body(name, weights, dtype, cfg)[1], cfg)["states"].float()
    finite = states[torch.isfinite(states).all(1)]
    return {"theta": float(np.arccos(np.clip(min_pairwise_cosine(finite), -1.0, 1.0))),
            "n": len(finite)}


def cached_cone_angle(name: str, weights: str, dtype: str, profile: str):
    """:func:`cone_angle` through the results store, like :func:`cached_run`.

    Explained in: book/geometry.md
    """
    from . import results

    real = name in models.OFFLINE
    cfg = RadiusConfig() if real else RadiusConfig.for_profile(profile)
    return results.cached(f"theta-{name}-{weights}-{dtype}",
                          lambda: cone_angle(name, weights, dtype, cfg),
                          {"model": name, "weights": weights, "dtype": dtype, "radius": cfg},
                          chapter="geometry", profile=profile, heavy=real, seed=cfg.seed,
                          device="cpu", dtype=dtype)


def cached_run(name: str, weights: str, dtype: str, profile: str, *, verbose: bool = False):
    """:func:`run` through the results store: real models are heavy (committed in ``data/geometry``).

    Returns:
        A ``results.Record``; ``record.result`` is :func:`run`'s dict.

    Explained in: book/geometry.md
    """
    from . import results

    real = name in models.OFFLINE
    cfg = RadiusConfig() if real else RadiusConfig.for_profile(profile)
    return results.cached(f"rinf-{name}-{weights}-{dtype}",
                          lambda: run(name, weights, dtype, cfg, verbose=verbose),
                          {"model": name, "weights": weights, "dtype": dtype, "radius": cfg},
                          chapter="geometry", profile=profile, heavy=real, seed=cfg.seed,
                          device="cpu", dtype=dtype)
