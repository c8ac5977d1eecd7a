"""Verified success: greedy decoding from a soft prompt rounded to the stated precision.

A string counts as crammed only when greedy generation from the stored prompt, rounded to the
precision the bound assumes (Meyer et al. 2026, Ass. 4.3), reproduces every target token;
teacher-forced accuracy during optimisation only triggers this check (§5.1).

Explained in: book/cramming.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from .engine import CramConfig


def round_prompt(x: torch.Tensor, precision: str, model_dtype: torch.dtype) -> torch.Tensor:
    """Round a prompt to the stated precision (dtype name or an ℓ∞ grid step ε, Ass. 4.3)."""
    if precision == "model":
        return x.to(model_dtype)
    if precision in ("float32", "bfloat16", "float16"):
        return x.to(getattr(torch, precision)).to(model_dtype)
    step = float(precision)
    return (torch.round(x / step) * step).to(model_dtype)


def frame(model, bos_id, layout: str, mem: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Input embeddings [B, pos, d] for ``layout`` around the prompt ``mem``, then token ids."""
    emb = model.get_input_embeddings()
    b = mem.shape[0]
    bos = emb(torch.full((b, 1), int(bos_id), device=mem.device)) if layout != "mem" else None
    parts = {"bos-mem": [bos, mem], "mem-bos": [mem, bos], "mem": [mem]}[layout]
    return torch.cat([p.to(mem.dtype) for p in parts] + [emb(ids).to(mem.dtype)], dim=1)


@torch.no_grad()
def greedy_generate(model, bos_id, layout: str, prompts: torch.Tensor, n: int) -> torch.Tensor:
    """Greedy decoding of ``n`` tokens from soft prompts [B, m, d] (KV cache); returns [B, n]."""
    empty = torch.zeros(prompts.shape[0], 0, dtype=torch.long, device=prompts.device)
    x = frame(model, bos_id, layout, prompts, empty)
    out = model(inputs_embeds=x, use_cache=True)
    toks = [out.logits[:, -1].argmax(-1)]
    for _ in range(n - 1):  # transformers >= 5.2 names the KV cache `cache`, older `past_key_values`
        kv = {"cache": out.cache} if hasattr(out, "cache") else {"past_key_values": out.past_key_values}
        out = model(input_ids=toks[-1][:, None], use_cache=True, **kv)
        toks.append(out.logits[:, -1].argmax(-1))
    return torch.stack(toks, dim=1)


def verify(model, bos_id, cfg: CramConfig, prompts: torch.Tensor, targets: torch.Tensor,
           lengths) -> np.ndarray:
    """True where greedy generation from the rounded prompt reproduces the first ``lengths`` tokens."""
    dtype = next(model.parameters()).dtype
    gen = greedy_generate(model, bos_id, cfg.layout, round_prompt(prompts, cfg.precision, dtype),
                          int(max(lengths))).to(targets.device)
    return np.array([bool((gen[i, :k] == targets[i, :k]).all()) for i, k in enumerate(lengths)])
