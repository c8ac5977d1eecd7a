"""A tiny d = 2 transformer whose whole prompt plane can be enumerated (Thm 4.5 made visible).

Implements the setting of Meyer et al. 2026, §3–4 (Def. 4.1 accessibility, Ass. 4.3 finite
precision, Thm 4.5): a soft prompt of m vectors in [-r, r]^2, rounded by the model to the
ε-grid, followed by greedy decoding. Because d·m is tiny, *every* grid prompt can be decoded, so
the number of distinct outputs of length n is counted exactly, not sampled.

Explained in: book/accessible.md
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special


@dataclass(frozen=True)
class ToyConfig:
    """Model and grid of the toy (all dimensions tiny)."""

    d_model: int = 2  # d: width of the residual stream and of the prompt vectors
    d_vocab: int = 8  # |V|
    n_layers: int = 2  # transformer blocks
    d_mlp: int = 16  # hidden width of each MLP
    n_ctx: int = 16  # longest sequence: m prompt vectors + n - 1 generated tokens
    m: int = 1  # prompt length (number of soft-prompt vectors)
    r: float = 2.0  # prompt coordinates lie in [-r, r]
    eps: float = 1 / 8  # precision ε: grid step, the model rounds inputs to εZ (Ass. 4.3)
    n_max: int = 10  # longest output length enumerated
    init_scale: float = 2.5  # std of the random weights (larger: more prompt-dependent outputs)
    seed: int = 0  # weight seed

    @classmethod
    def for_profile(cls, profile: str, **kw) -> ToyConfig:
        """Smoke: a coarse grid; default/full: a fine grid (m = 1) or a 4-D grid (m = 2)."""
        fine = {"smoke": 1 / 8, "default": 1 / 32, "full": 1 / 128}[profile]
        if kw.get("m", 1) == 2:
            fine = {"smoke": 1, "default": 1 / 2, "full": 1 / 4}[profile]
        return cls(**{"eps": fine, **kw})

    @property
    def grid_side(self) -> int:
        """Grid points per axis, ⌊2r/ε⌋ + 1."""
        return int(math.floor(2 * self.r / self.eps + 1e-9)) + 1


class ToyTransformer:
    """Pre-norm decoder-only transformer, one head, d_model = 2, inputs rounded to the ε-grid.

    Plain NumPy in float64: the toy needs no autograd, only exact, reproducible forward passes.

    Explained in: book/accessible.md
    """

    def __init__(self, cfg: ToyConfig):
        self.cfg = cfg
        rng = np.random.default_rng(cfg.seed)
        d, s = cfg.d_model, cfg.init_scale

        def w(*shape):  # random weights, reproducible from cfg.seed
            return rng.standard_normal(shape) * s

        self.embed, self.pos = w(cfg.d_vocab, d), w(cfg.n_ctx, d)
        self.attn = [w(4, d, d) / math.sqrt(d) for _ in range(cfg.n_layers)]
        self.mlp_in = [w(d, cfg.d_mlp) / math.sqrt(d) for _ in range(cfg.n_layers)]
        self.mlp_out = [w(cfg.d_mlp, d) / math.sqrt(cfg.d_mlp) for _ in range(cfg.n_layers)]
        self.unembed, self.bias = w(cfg.d_vocab, d), w(cfg.d_vocab) * 0.1

    def quantise(self, prompt: np.ndarray) -> np.ndarray:
        """Q_ε: clip to [-r, r] and round each coordinate to the grid -r + εZ (Ass. 4.3)."""
        r, eps = self.cfg.r, self.cfg.eps
        return np.round((np.clip(prompt, -r, r) + r) / eps) * eps - r

    def __call__(self, prompt: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Next-token logits at the last position.

        Args:
            prompt: [batch, m, d_model] soft prompts; tokens: [batch, k] generated so far.

        Returns:
            [batch, d_vocab] logits.
        """
        x = np.concatenate([self.quantise(prompt), self.embed[tokens]], axis=1)  # [batch, pos, d]
        pos = x.shape[1]
        x = x + self.pos[:pos]
        mask = np.triu(np.full((pos, pos), -np.inf), 1)
        for a, wi, wo in zip(self.attn, self.mlp_in, self.mlp_out):
            h = np.tanh(x)  # bounded but magnitude-aware (an RMS norm in d = 2 keeps only the angle)
            q, k, v = h @ a[0], h @ a[1], h @ a[2]
            att = _softmax(q @ k.transpose(0, 2, 1) / math.sqrt(x.shape[-1]) + mask)
            x = x + (att @ v) @ a[3]
            x = x + _gelu(np.tanh(x) @ wi) @ wo
        return _rms(x[:, -1]) @ self.unembed.T + self.bias


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + special.erf(x / math.sqrt(2)))  # the exact (erf) form


def _rms(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6)


def grid_prompts(cfg: ToyConfig) -> np.ndarray:
    """All grid prompts: [G^(d m), m, d] with G = ⌊2r/ε⌋+1 points per coordinate.

    Explained in: book/accessible.md
    """
    axis = -cfg.r + cfg.eps * np.arange(cfg.grid_side)
    n_coord = cfg.d_model * cfg.m
    mesh = np.meshgrid(*([axis] * n_coord), indexing="ij")
    return np.stack([g.ravel() for g in mesh], axis=1).reshape(-1, cfg.m, cfg.d_model)


def greedy_decode(model: ToyTransformer, prompts: np.ndarray, n: int, *,
                  batch: int = 65_536) -> np.ndarray:
    """Greedy outputs g_n(X) of length n for every prompt (batched).

    Returns:
        [n_prompts, n] int array of token ids.

    Explained in: book/accessible.md
    """
    out = np.empty((len(prompts), n), np.int64)
    for start in range(0, len(prompts), batch):
        x = np.asarray(prompts[start:start + batch], np.float64)
        toks = np.empty((len(x), 0), np.int64)
        for _ in range(n):
            toks = np.concatenate([toks, model(x, toks).argmax(-1)[:, None]], axis=1)
        out[start:start + batch] = toks
    return out


@dataclass
class ToyEnumeration:
    """Exact output census of the toy over its whole prompt grid."""

    n: list  # output lengths 1..n_max
    n_distinct: list  # number of distinct greedy outputs of each length
    n_prompts: int  # grid points (G^(d m)): the bound of Thm 4.5 for this grid
    d_vocab: int  # |V|
    tokens: list  # [n_prompts][n_max] greedy tokens of every grid prompt (empty unless kept)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def enumerate_outputs(cfg: ToyConfig, *, keep_tokens: bool = False) -> ToyEnumeration:
    """Decode every grid prompt and count distinct outputs for each n ≤ cfg.n_max.

    Explained in: book/accessible.md
    """
    model = ToyTransformer(cfg)
    tokens = greedy_decode(model, grid_prompts(cfg), cfg.n_max)
    counts = [len(np.unique(tokens[:, :k], axis=0)) for k in range(1, cfg.n_max + 1)]
    kept = tokens.tolist() if keep_tokens else []
    return ToyEnumeration(list(range(1, cfg.n_max + 1)), counts, len(tokens), cfg.d_vocab, kept)


def prefix_labels(tokens: np.ndarray, n: int) -> np.ndarray:
    """Label of each row's length-n prefix (0..#distinct-1), numbered in order of first appearance.

    Explained in: book/accessible.md
    """
    _, first, inv = np.unique(tokens[:, :n], axis=0, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))  # relabel by first appearance: stable colours
    return rank[inv.ravel()]


def same_cell_invariance(cfg: ToyConfig, n_prompts: int, n: int, *, seed: int = 0) -> float:
    """Fraction of random prompts whose output equals that of a random point of the same grid cell.

    Ass. 4.3 built in: the model only sees Q_ε X, so the result must be 1.0.

    Explained in: book/accessible.md
    """
    rng = np.random.default_rng(seed)
    model = ToyTransformer(cfg)
    x = rng.uniform(-cfg.r, cfg.r, size=(n_prompts, cfg.m, cfg.d_model))
    centre = np.round((x + cfg.r) / cfg.eps) * cfg.eps - cfg.r  # the grid point of x's cell
    y = centre + rng.uniform(-0.499, 0.499, size=x.shape) * cfg.eps  # elsewhere in that cell
    y = np.clip(y, -cfg.r, cfg.r)
    same = greedy_decode(model, x, n) == greedy_decode(model, y, n)
    return float(same.all(axis=1).mean())
