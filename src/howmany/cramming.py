"""Cramming: optimise soft prompts until a frozen LM greedily reproduces a target string.

This is the experiment behind the paper's accessibility curves (Meyer et al. 2026, §5.1, Fig. 3,
Table 1; protocol of Kuratov et al. 2025; THEORY.md §7). ``B`` independent soft prompts
``[B, m, d_model]`` are optimised together: the loss is a *sum* of per-string losses and AdamW is
elementwise, so a batch is exactly ``B`` separate runs, only faster. Rules:

* **No free token** — the first target token is predicted from the last prompt position.
* **Verified success** — a string counts only when greedy generation from the stored prompt,
  rounded to the stated precision, reproduces all its tokens; teacher-forced accuracy only
  triggers the check. A string is frozen at its first verified success.
* **Thresholds on nested prefixes** — (a) ``bisect``: cold-start bisection on the prefix length
  (faithful to the paper's independent runs); (b) ``grow``: one warm-started run whose target
  grows by one verified token at a time (fast).
* NaN / overflow is detected per string and reported as ``status="nan"``, never as a failure.

Explained in: book/cramming.md
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

LAYOUTS = ("bos-mem", "mem-bos", "mem")


@dataclass(frozen=True)
class CramConfig:
    """Optimiser and protocol settings (defaults: the paper's / Kuratov et al.'s)."""

    lr: float = 1e-2  # AdamW learning rate
    betas: tuple = (0.9, 0.9)  # AdamW betas
    weight_decay: float = 0.01  # AdamW decoupled weight decay
    eps: float = 1e-8  # AdamW epsilon
    max_steps: int = 3000  # steps per attempt (per target length when growing)
    patience: int = 500  # stop an attempt after this many steps without a lower loss
    layout: str = "bos-mem"  # [BOS, mem, targets]; "mem-bos" = authors' Llama; "mem" = no BOS
    precision: str = "model"  # prompt rounding before verification: model dtype, a dtype, or a grid step
    init_scale: float = 1.0  # init std = init_scale × std of the (scaled) token embeddings
    lookahead: int = 8  # grow: extra target tokens fed beyond the current length

    @classmethod
    def for_profile(cls, profile: str) -> CramConfig:
        from .profiles import pick

        return pick(profile, smoke=cls(max_steps=300, patience=100),
                    default=cls(max_steps=1000, patience=300), full=cls())

    def to_dict(self) -> dict:
        return asdict(self)


def _check(m: int, lengths) -> None:
    if int(m) <= 0:
        raise ValueError(f"prompt length m must be positive, got {m}")
    if min(int(n) for n in lengths) <= 0:
        raise ValueError(f"target lengths n must be positive, got {list(lengths)}")


def embedding_std(model, n_ids: int = 4096) -> float:
    """Std of the *effective* input embeddings (Gemma scales them by sqrt(d) inside the module)."""
    emb = model.get_input_embeddings()
    ids = torch.randperm(emb.num_embeddings, generator=torch.Generator().manual_seed(0))[:n_ids]
    with torch.no_grad():
        return float(emb(ids.to(emb.weight.device)).float().std())


def init_prompts(model, m: int, seeds, cfg: CramConfig) -> torch.Tensor:
    """Fresh prompts [B, m, d] ~ N(0, σ²), one generator per seed (reproducible per string)."""
    d, sigma = model.get_input_embeddings().embedding_dim, cfg.init_scale * embedding_std(model)
    rows = [torch.randn(m, d, generator=torch.Generator().manual_seed(int(s))) for s in seeds]
    return torch.stack(rows) * sigma


def round_prompt(x: torch.Tensor, precision: str, model_dtype: torch.dtype) -> torch.Tensor:
    """Round a prompt to the stated precision (dtype name or an ℓ∞ grid step ε, Ass. 4.3)."""
    if precision == "model":
        return x.to(model_dtype)
    if precision in ("float32", "bfloat16", "float16"):
        return x.to(getattr(torch, precision)).to(model_dtype)
    step = float(precision)
    return (torch.round(x / step) * step).to(model_dtype)


def _frame(model, bos_id, layout: str, mem: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
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
    x = _frame(model, bos_id, layout, prompts, empty)
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


def cram(model, bos_id, targets, m: int, cfg: CramConfig, *, seeds, lengths=None,
         grow: bool = False, start_lengths=None, verbose: bool = False) -> list[dict]:
    """Cram B strings at once; each row is an independent problem (batch = separate runs).

    Args:
        model: frozen causal LM (Hugging Face); its dtype is the compute dtype.
        bos_id: id of the fixed token of the layout (ignored for layout "mem").
        targets: int tensor/array [B, N] (rows may be right-padded beyond their length).
        m: soft-prompt length (> 0).
        cfg: ``CramConfig``.
        seeds: one init seed per row.
        lengths: tokens to reproduce per row (default N); with ``grow`` the maximal length.
        grow: warm-started curriculum: after each verified success the target grows past
            the longest teacher-forced-correct prefix; the row ends at ``lengths`` or on failure.
        start_lengths: first target length per row when growing (default 1).

    Returns:
        One dict per row: ``status`` ("solved", "failed" or "nan"), ``n_verified`` (longest
        verified prefix), ``steps``, ``first_success_step``, ``loss``, ``tf_prefix``
        (teacher-forced correct prefix at the end) and ``prompt`` (tensor, the verified one).

    Explained in: book/cramming.md
    """
    dev = next(model.parameters()).device
    tg = torch.as_tensor(np.asarray(targets), dtype=torch.long, device=dev)
    b, n_all = tg.shape
    lengths = np.full(b, n_all) if lengths is None else np.asarray(lengths, dtype=int)
    _check(m, lengths)
    if cfg.layout not in LAYOUTS:
        raise ValueError(f"unknown layout {cfg.layout!r}: choose one of {', '.join(LAYOUTS)}")
    model.requires_grad_(False)
    dtype = next(model.parameters()).dtype
    p = init_prompts(model, m, seeds, cfg).to(dev)  # fp32 master copy [B, m, d]
    mom, var = torch.zeros_like(p), torch.zeros_like(p)
    t_adam = np.zeros(b, dtype=int)
    cur = (np.asarray(start_lengths, dtype=int) if start_lengths is not None else np.ones(b, int)) \
        if grow else lengths.copy()
    cur = np.minimum(cur, lengths)
    best, since, attempt = np.full(b, np.inf), np.zeros(b, int), np.zeros(b, int)
    out = [dict(status="active", n_verified=0, steps=0, first_success_step=None, loss=None,
                tf_prefix=0, prompt=None) for _ in range(b)]
    b1, b2 = cfg.betas
    step = 0
    bar = tqdm(disable=not verbose, desc=f"cram m={m} B={b}", unit="step", leave=False,
               mininterval=10)
    while True:
        act = np.array([i for i in range(b) if out[i]["status"] == "active"])
        if act.size == 0:
            break
        step += 1
        bar.update(1)
        bar.set_postfix(active=act.size, verified=int(sum(o["n_verified"] for o in out)), refresh=False)
        feed = np.minimum(cur[act] + (cfg.lookahead if grow else 0), lengths[act])
        nf = int(feed.max())
        x = p[act].clone().requires_grad_(True)
        ids = tg[act, : nf - 1]
        logits = model(inputs_embeds=_frame(model, bos_id, cfg.layout, x.to(dtype), ids),
                       logits_to_keep=nf).logits.float()  # positions P-1 .. P+nf-2
        ce = F.cross_entropy(logits.transpose(1, 2), tg[act, :nf], reduction="none")  # [Ba, nf]
        pos = torch.arange(nf, device=dev)[None, :]
        mask = (pos < torch.as_tensor(cur[act], device=dev)[:, None]).float()
        loss_rows = (ce * mask).sum(1) / mask.sum(1)
        loss_rows.sum().backward()
        g = x.grad.float()
        with torch.no_grad():
            ok = logits.argmax(-1) == tg[act, :nf]
            ok &= pos < torch.as_tensor(feed, device=dev)[:, None]
            prefix = ok.long().cumprod(1).sum(1).cpu().numpy()  # the one host sync per step
            lr_ = loss_rows.detach().cpu().numpy()
            finite = np.isfinite(lr_) & torch.isfinite(g).flatten(1).all(1).cpu().numpy()
            cand = [j for j, i in enumerate(act) if finite[j] and prefix[j] >= cur[i]]
            passed = set()
            if cand:
                k = [int(prefix[j]) if grow else int(cur[act[j]]) for j in cand]
                good = verify(model, bos_id, cfg, p[act[cand]], tg[act[cand]], k)
                passed = {j for j, gd in zip(cand, good) if gd}
                for j, kk in zip(cand, k):
                    if j in passed:
                        i = act[j]
                        out[i].update(n_verified=kk, prompt=p[i].clone())
                        out[i]["first_success_step"] = out[i]["first_success_step"] or step
            for j, i in enumerate(act):
                o = out[i]
                o.update(steps=step, loss=float(lr_[j]), tf_prefix=int(prefix[j]))
                if not finite[j]:
                    o["status"] = "nan"
                elif j in passed and (not grow or o["n_verified"] >= lengths[i]):
                    o["status"] = "solved"
                elif j in passed:  # grow: next target length, fresh patience, warm prompt
                    cur[i], best[i], since[i], attempt[i] = o["n_verified"] + 1, np.inf, 0, 0
                else:
                    attempt[i] += 1
                    since[i] = 0 if lr_[j] < best[i] else since[i] + 1
                    best[i] = min(best[i], lr_[j])
                    if attempt[i] >= cfg.max_steps or since[i] >= cfg.patience:
                        o["status"] = "failed"
            upd = [j for j, i in enumerate(act) if out[i]["status"] == "active"]
            if upd:  # AdamW (decoupled weight decay), elementwise: identical to torch.optim.AdamW
                i = act[upd]
                t_adam[i] += 1
                tt = torch.as_tensor(t_adam[i], dtype=torch.float32, device=dev)[:, None, None]
                gi = g[upd]
                mom[i] = b1 * mom[i] + (1 - b1) * gi
                var[i] = b2 * var[i] + (1 - b2) * gi * gi
                pi = p[i] * (1 - cfg.lr * cfg.weight_decay)
                denom = (var[i] / (1 - b2**tt)).sqrt() + cfg.eps
                p[i] = pi - cfg.lr * (mom[i] / (1 - b1**tt)) / denom
    bar.close()
    for o in out:
        if o["status"] == "failed" and grow and o["n_verified"] > 0:
            o["status"] = "stopped"  # grew until the optimiser stalled: n_verified is the threshold
    return out


def thresholds_bisect(model, bos_id, targets, m: int, cfg: CramConfig, *, seeds, n_max=None,
                      verbose: bool = False) -> list[dict]:
    """Largest crammable prefix per string by bisection; every trial is a cold start.

    Success is monotone in the prefix length, so ``ceil(log2(n_max + 1))`` rounds suffice; all
    strings bisect in lockstep (one batched ``cram`` per round). ``censored`` marks strings that
    succeed at ``n_max`` itself (their threshold is at least that).

    Explained in: book/cramming.md
    """
    tg = np.asarray(targets)
    b = tg.shape[0]
    n_max = tg.shape[1] if n_max is None else int(n_max)
    lo, hi = np.zeros(b, int), np.full(b, n_max + 1)
    steps, nan = np.zeros(b, int), np.zeros(b, bool)
    for rnd in range(math.ceil(math.log2(n_max + 1)) + 1):
        live = np.where((hi - lo > 1) & ~nan)[0]
        if live.size == 0:
            break
        mid = (lo[live] + hi[live]) // 2
        res = cram(model, bos_id, tg[live], m, cfg, lengths=mid,
                   seeds=[int(seeds[i]) * 1000 + rnd for i in live], verbose=verbose)
        for j, i in enumerate(live):
            steps[i] += res[j]["steps"]
            nan[i] |= res[j]["status"] == "nan"
            if res[j]["status"] == "solved":
                lo[i] = mid[j]
            else:
                hi[i] = mid[j]
    return [dict(threshold=int(lo[i]), censored=bool(lo[i] >= n_max), steps=int(steps[i]),
                 status="nan" if nan[i] else "ok", method="bisect") for i in range(b)]


def thresholds_grow(model, bos_id, targets, m: int, cfg: CramConfig, *, seeds, n_max=None,
                    verbose: bool = False) -> list[dict]:
    """Largest crammable prefix per string by a warm-started growing curriculum (one run each).

    Explained in: book/cramming.md
    """
    tg = np.asarray(targets)
    n_max = tg.shape[1] if n_max is None else int(n_max)
    res = cram(model, bos_id, tg[:, :n_max], m, cfg, seeds=seeds, grow=True, verbose=verbose)
    return [dict(threshold=int(r["n_verified"]), censored=r["status"] == "solved",
                 steps=int(r["steps"]), status="nan" if r["status"] == "nan" else "ok",
                 method="grow") for r in res]


THRESHOLD_METHODS = {"bisect": thresholds_bisect, "grow": thresholds_grow}


def with_steps(cfg: CramConfig, max_steps: int, patience: int) -> CramConfig:
    """A copy of ``cfg`` with another step budget (benchmarks and profiles)."""
    return replace(cfg, max_steps=int(max_steps), patience=int(patience))
