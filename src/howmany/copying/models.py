"""Small causal sequence models for the copy task, written from scratch in plain PyTorch.

A pre-LayerNorm decoder-only transformer whose attention takes one of four position schemes —
NoPE (no positional information except the causal mask), RoPE (rotary, Su et al. 2021), ALiBi
(linear distance penalty, Press et al. 2022) and hard-ALiBi (some heads see only the last few
positions, Jelassi et al. 2024) — and an LSTM baseline. Every model maps token ids
``[batch, pos]`` to logits ``[batch, pos, d_vocab]`` and takes an optional cache so greedy
decoding costs one token per step. Paper: Sec. 5 (copying experiments) and Remark 1.1
(bounded-state models).

Explained in: book/copying.md
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

ARCHS = ("nope", "rope", "alibi", "hard_alibi", "lstm")


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of one copy model (all sizes CPU-friendly).

    Explained in: book/copying.md
    """

    arch: str = "rope"  # one of ARCHS
    d_model: int = 128  # residual width (LSTM: hidden size)
    n_layers: int = 2  # transformer blocks (LSTM: stacked layers)
    n_heads: int = 4  # attention heads per block
    d_vocab: int = 30  # 26 letters + BOS, separator, EOS, pad
    hard_windows: tuple = (2, 3, 0, 0)  # hard-ALiBi: positions each head sees (0 = all)
    rope_base: float = 10000.0  # RoPE frequency base

    @classmethod
    def smoke(cls, arch: str = "rope") -> ModelConfig:
        """A tiny variant for tests and smoke runs."""
        return cls(arch=arch, d_model=32, n_layers=2, n_heads=4)


def _rope(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate pairs of channels of ``x`` [batch, head, pos, d_head] by position-dependent angles."""
    d_head = x.shape[-1]
    freqs = base ** (-torch.arange(0, d_head, 2, dtype=torch.float32, device=x.device) / d_head)
    ang = pos.float()[:, None] * freqs[None, :]  # [pos, d_head/2]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's geometric head slopes 2^(-8h/H), h = 1..H (Press et al. 2022)."""
    return torch.tensor([2 ** (-8 * (h + 1) / n_heads) for h in range(n_heads)])


class Attention(nn.Module):
    """Multi-head causal self-attention with a pluggable position scheme and a KV cache."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg, self.n_heads = cfg, cfg.n_heads
        self.d_head = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.register_buffer("slopes", alibi_slopes(cfg.n_heads), persistent=False)
        wins = list(cfg.hard_windows) + [0] * cfg.n_heads
        self.register_buffer("windows", torch.tensor(wins[: cfg.n_heads]), persistent=False)

    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        """Additive attention bias [head, q, k]: causal mask plus the scheme's distance term."""
        rel = (q_pos[:, None] - k_pos[None, :]).float()  # distance back to the key
        bias = torch.zeros(self.n_heads, *rel.shape, device=rel.device)
        if self.cfg.arch == "alibi":
            bias = bias - self.slopes[:, None, None] * rel
        if self.cfg.arch == "hard_alibi":  # head h sees only the last windows[h] positions
            w = self.windows[:, None, None].float()
            bias = bias.masked_fill((w > 0) & (rel >= w), float("-inf"))
        return bias.masked_fill(rel < 0, float("-inf"))

    def forward(self, x, cache=None):
        b, t, _ = x.shape  # [batch, pos, d_model]
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        past = 0 if cache is None else cache["t"]
        q_pos = torch.arange(past, past + t, device=x.device)
        if self.cfg.arch == "rope":
            q, k = _rope(q, q_pos, self.cfg.rope_base), _rope(k, q_pos, self.cfg.rope_base)
        if cache is None:  # fresh: the cache is just this call's keys and values
            cache = {"k": k, "v": v, "t": t}
        elif cache["k"].shape[2] >= past + t:  # reserved room: write in place, no copy
            cache["k"][:, :, past : past + t], cache["v"][:, :, past : past + t] = k, v
            cache["t"] = past + t
        else:
            cache = {"k": torch.cat([cache["k"][:, :, :past], k], 2),
                     "v": torch.cat([cache["v"][:, :, :past], v], 2), "t": past + t}
        k, v = cache["k"][:, :, : past + t], cache["v"][:, :, : past + t]
        k_pos = torch.arange(past + t, device=x.device)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias(q_pos, k_pos))
        return self.out(att.transpose(1, 2).reshape(b, t, -1)), cache


def reserve(cache: list[dict], extra: int) -> list[dict]:
    """Grow each layer's KV cache once by ``extra`` positions, so decoding writes in place."""
    out = []
    for c in cache:
        pad = c["k"].new_zeros(*c["k"].shape[:2], extra, c["k"].shape[3])
        out.append({"k": torch.cat([c["k"], pad], 2), "v": torch.cat([c["v"], pad], 2),
                    "t": c["t"]})
    return out


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x, cache=None):
        a, cache = self.attn(self.ln1(x), cache)
        x = x + a
        return x + self.mlp(self.ln2(x)), cache


class CopyTransformer(nn.Module):
    """Decoder-only transformer with no absolute position embedding; positions enter via attention.

    Explained in: book/copying.md
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.unembed = nn.Linear(cfg.d_model, cfg.d_vocab, bias=False)
        self.apply(_init)

    def forward(self, idx: torch.Tensor, cache=None):
        """Logits [batch, pos, d_vocab] for ids [batch, pos]; returns (logits, new cache)."""
        x = self.embed(idx)  # [batch, pos, d_model]
        new = []
        for i, block in enumerate(self.blocks):
            x, c = block(x, None if cache is None else cache[i])
            new.append(c)
        return self.unembed(self.ln_f(x)), new


class CopyLSTM(nn.Module):
    """Stacked LSTM baseline: a bounded state, like the SSMs of the paper's Remark 1.1.

    Explained in: book/copying.md
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.lstm = nn.LSTM(cfg.d_model, cfg.d_model, cfg.n_layers, batch_first=True)
        self.unembed = nn.Linear(cfg.d_model, cfg.d_vocab)

    def forward(self, idx: torch.Tensor, cache=None):
        """Logits [batch, pos, d_vocab]; the cache is the (h, c) state after the last position."""
        h, state = self.lstm(self.embed(idx), cache)
        return self.unembed(h), state


def _init(module: nn.Module) -> None:
    """GPT-2 style initialisation: N(0, 0.02) weights, zero biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)


def build(cfg: ModelConfig) -> nn.Module:
    """A freshly initialised model for ``cfg.arch``.

    Explained in: book/copying.md
    """
    if cfg.arch not in ARCHS:
        raise ValueError(f"unknown arch {cfg.arch!r}: choose one of {', '.join(ARCHS)}")
    return CopyLSTM(cfg) if cfg.arch == "lstm" else CopyTransformer(cfg)


def n_params(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class PretrainedCopier(torch.nn.Module):
    """A pretrained causal LM restricted to the copy vocabulary (for fine-tuning, paper Sec. 5).

    Each of the ``d_vocab`` copy symbols is mapped to one token of the model's own vocabulary
    (the symbol's single-token spelling when a tokenizer is given, else ids ``2, 3, ...``); the
    logits are read back at those tokens only, so training and decoding code is shared with the
    from-scratch models.

    Explained in: book/copying.md
    """

    def __init__(self, lm, symbols: str):
        super().__init__()
        self.lm = lm.model.requires_grad_(True).train()
        if lm.tokenizer is None:
            ids = list(range(2, 2 + len(symbols)))
        else:
            ids = [lm.tokenizer.encode(c, add_special_tokens=False) for c in symbols]
            if any(len(i) != 1 for i in ids):
                raise ValueError("every copy symbol must be a single token of the tokenizer")
            ids = [i[0] for i in ids]
        self.register_buffer("ids", torch.tensor(ids), persistent=False)

    def forward(self, idx: torch.Tensor, cache=None):
        """Logits [batch, pos, n_symbols]; the cache is the model's own KV cache.

        Only the symbols' rows of the unembedding are applied (the full-vocabulary logits would
        cost a fifth of SmolLM2's compute and gigabytes at length 300); a final soft-cap, if the
        model has one, is applied as the model would.
        """
        out = self.lm.base_model(input_ids=self.ids[idx], cache=cache, use_cache=True)
        head = self.lm.get_output_embeddings()
        bias = None if getattr(head, "bias", None) is None else head.bias[self.ids]
        logits = torch.nn.functional.linear(out.last_hidden_state, head.weight[self.ids], bias)
        cap = getattr(self.lm.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits, out.cache
