"""Where a cramming run starts: fresh soft prompts, and cold restarts of a stalled row.

Two knobs of a recipe act here (``CramConfig.init`` with ``init_scale``, and ``restarts`` with
``cold_steps``). A fresh prompt is drawn from N(0, σ²), with σ either the standard deviation of
the model's own input embeddings times ``init_scale`` (the default, kept by the ``paper`` and
``kuratov`` presets) or the fixed ``init_scale`` (Progressive Cramming's 0.02), one generator per
string, so that each string's start is reproducible whatever batch it runs in. A cold restart
gives a row whose warm trajectory stalled the next fresh prompt (seed ``seed + 104_729 * r`` for
restart ``r``), zero Adam moments and a new schedule, at the length where it stalled, so that no
threshold rests on a single trajectory.

Explained in: book/cramming.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from .engine import CramConfig

RESTART_SEED_STRIDE = 104_729  # restart r of a row starts from seed + r * this prime


def embedding_std(model, n_ids: int = 4096) -> float:
    """Std of the *effective* input embeddings (Gemma scales them by sqrt(d) inside the module)."""
    emb = model.get_input_embeddings()
    ids = torch.randperm(emb.num_embeddings, generator=torch.Generator().manual_seed(0))[:n_ids]
    with torch.no_grad():
        return float(emb(ids.to(emb.weight.device)).float().std())


def init_prompts(model, m: int, seeds, cfg: CramConfig) -> torch.Tensor:
    """Fresh prompts [B, m, d] ~ N(0, σ²), one generator per seed (reproducible per string)."""
    d = model.get_input_embeddings().embedding_dim
    sigma = cfg.init_scale * (embedding_std(model) if cfg.init == "embedding" else 1.0)
    rows = [torch.randn(m, d, generator=torch.Generator().manual_seed(int(s))) for s in seeds]
    return torch.stack(rows) * sigma


def restart_state(model, m: int, cfg: CramConfig, seed: int, o: dict, p, mom, var, arrays: dict,
                  i: int, length: int) -> None:
    """Turn row ``i`` into a cold restart at ``length`` (in place): the next fresh seed's prompt,
    zero Adam moments, a new schedule, the cold attempt's step cap; its record goes on."""
    r = len(o["restarts"]) + 1
    o["restarts"].append([o["steps"], int(length)])
    o["status"] = "active"
    p[i] = init_prompts(model, m, [seed + RESTART_SEED_STRIDE * r], cfg)[0].to(p.device)
    mom[i], var[i] = 0.0, 0.0
    arrays["tries"][i] += 1
    for k, v in (("t_adam", 0), ("best", np.inf), ("since", 0), ("attempt", 0),
                 ("cap", cfg.cold_steps or cfg.max_steps)):
        arrays[k][i] = v
