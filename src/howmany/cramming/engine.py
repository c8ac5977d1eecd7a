"""The cramming engine: optimise soft prompts until a frozen LM greedily reproduces a target.

This is the experiment behind the paper's accessibility curves (Meyer et al. 2026, §5.1, Fig. 3,
Table 1; protocol of Kuratov et al. 2025). ``B`` independent soft prompts ``[B, m, d_model]`` are
optimised together: the loss is a *sum* of per-string losses and AdamW is elementwise (here with a
per-string learning-rate schedule), so a batch is exactly ``B`` separate runs, only faster. Rules:

* **No free token**: the first target token is predicted from the last prompt position.
* **Verified success**: a string counts only when greedy generation from the stored prompt,
  rounded to the stated precision, reproduces all its tokens; teacher-forced accuracy only
  triggers the check.
* **Non-finite is not failure**: NaN or overflow in the loss, the gradient or the rounded prompt
  gives ``status="nan"``.

``CramConfig`` holds every knob of one run; named recipes (the paper's, Kuratov et al.'s,
Progressive Cramming's, the book's) are in ``howmany.cramming.recipes`` and the threshold searches
that call ``cram`` in ``howmany.cramming.thresholds``.

Explained in: book/cramming.md
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from .decoding import frame, greedy_generate, round_prompt, verify  # noqa: F401 - re-exported
from .starts import embedding_std, init_prompts, restart_state  # noqa: F401 - re-exported

LAYOUTS = ("bos-mem", "mem-bos", "mem")
SCHEDULES = ("constant", "cosine")
INITS = ("embedding", "fixed")
# Fields added after sweeps were stored, with their "off" value (left out of the config hash).
_LATER = {"init": "embedding", "schedule": "constant", "warmup": 0, "string_steps": 0,
          "restarts": 0, "cold_steps": 0}


@dataclass(frozen=True)
class CramConfig:
    """Optimiser and protocol settings of one cramming run; named presets live in ``recipes``."""

    lr: float = 1e-2  # AdamW peak learning rate
    betas: tuple = (0.9, 0.9)  # AdamW betas
    weight_decay: float = 0.01  # AdamW decoupled weight decay
    eps: float = 1e-8  # AdamW epsilon
    max_steps: int = 3000  # step cap per attempt (per target length when growing)
    patience: int = 500  # stop an attempt after this many steps without a lower loss
    layout: str = "bos-mem"  # [BOS, mem, targets]; "mem-bos" = authors' Llama; "mem" = no BOS
    precision: str = "model"  # prompt rounding before verification: model dtype, a dtype, or a grid step
    init: str = "embedding"  # "embedding": std = init_scale × embedding std; "fixed": std = init_scale
    init_scale: float = 1.0  # see ``init``
    lookahead: int = 8  # grow: extra target tokens fed beyond the current length
    schedule: str = "constant"  # "constant", or "cosine": linear warm-up then cosine decay
    warmup: int = 0  # warm-up steps of the schedule (counted per string, from its (re)start)
    string_steps: int = 0  # cap on all steps of one string (0 = none); also the cosine horizon
    restarts: int = 0  # cold restarts (fresh seed) at a length where an attempt failed, per length
    cold_steps: int = 0  # step cap of a cold restart's first attempt (0 = max_steps)

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r}: choose one of {', '.join(LAYOUTS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}: choose one of {', '.join(SCHEDULES)}")
        if self.init not in INITS:
            raise ValueError(f"unknown init {self.init!r}: choose one of {', '.join(INITS)}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr}")
        if self.max_steps < 1 or self.patience < 1:
            raise ValueError(f"max_steps and patience must be >= 1, got {self.max_steps}, {self.patience}")
        if min(self.warmup, self.string_steps, self.restarts, self.cold_steps) < 0:
            raise ValueError("warmup, string_steps, restarts and cold_steps must be >= 0")
        if not self.init_scale > 0:
            raise ValueError(f"init_scale must be positive, got {self.init_scale}")

    @classmethod
    def for_profile(cls, profile: str) -> CramConfig:
        from ..profiles import pick

        return pick(profile, smoke=cls(max_steps=300, patience=100),
                    default=cls(max_steps=1000, patience=300), full=cls())

    def to_dict(self) -> dict:
        """Plain fields; knobs added after the first stored sweeps are left out while they are
        off, so a configuration that does not use them keeps its stored hash and folder."""
        return {k: v for k, v in asdict(self).items() if _LATER.get(k, object()) != v}

    def lr_at(self, t) -> np.ndarray:
        """Learning rate after ``t`` steps of a string (array); the schedule's shape, per string."""
        t = np.asarray(t, dtype=float)
        if self.schedule == "constant":
            return np.full(t.shape, self.lr)
        warm = np.minimum(1.0, (t + 1) / max(self.warmup, 1)) if self.warmup else np.ones(t.shape)
        horizon = max(self.string_steps - self.warmup, 1) if self.string_steps else None
        if horizon is None:
            return self.lr * warm
        frac = np.clip((t - self.warmup) / horizon, 0.0, 1.0)
        return self.lr * warm * np.where(t < self.warmup, 1.0, 0.5 * (1 + np.cos(math.pi * frac)))


def _check(m: int, lengths) -> None:
    if int(m) <= 0:
        raise ValueError(f"prompt length m must be positive, got {m}")
    if min(int(n) for n in lengths) <= 0:
        raise ValueError(f"target lengths n must be positive, got {list(lengths)}")


def cram(model, bos_id, targets, m: int, cfg: CramConfig, *, seeds, lengths=None,
         grow: bool = False, start_lengths=None, verbose: bool = False,
         callback=None, resume=None, snapshot=None, snapshot_s: float = 60.0) -> list[dict]:
    """Cram B strings at once; each row is an independent problem (batch = separate runs).

    Args:
        model: frozen causal LM (Hugging Face); its dtype is the compute dtype.
        bos_id: id of the fixed token of the layout (ignored for layout "mem").
        targets: int tensor/array [B, N] (rows may be right-padded beyond their length).
        m: soft-prompt length (> 0).
        cfg: ``CramConfig`` (schedule, caps, patience, restarts; see ``recipes`` for presets).
        seeds: one init seed per row (cold restarts: ``starts.restart_state``).
        lengths: tokens to reproduce per row (default N); with ``grow`` the maximal length.
        grow: warm-started curriculum: after each verified success the target grows past
            the longest teacher-forced-correct prefix; the row ends at ``lengths`` or on failure.
            With ``cfg.restarts`` a stalled row gets cold restarts at its stall length first.
        start_lengths: first target length per row when growing (default 1).
        callback: ``callback(step, info)`` after every step; ``info`` holds per-row lists
            ``loss``, ``tf_prefix``, ``n_verified``, ``length`` (current target) and ``active``.
        resume: per row, a state from ``snapshot`` (or ``cramming.resume``) to go on from, or
            None for a fresh start; a resumed row continues exactly as the run it came from.
        snapshot: ``snapshot(states)`` every ``snapshot_s`` seconds of wall time, with every
            row's state (plain tensors and numbers) so that a killed run can be resumed.

    Returns:
        One dict per row: ``status`` ("solved", "failed", "stopped" or "nan"), ``n_verified``
        (longest verified prefix), ``steps``, ``first_success_step``, ``loss``, ``tf_prefix``
        (teacher-forced correct prefix at the end), ``history`` (``[steps, n_verified]`` at
        every verified success: the budget curve), ``restarts`` (``[steps, length]`` where each
        cold restart began; restart ``r`` of a row uses seed ``seed + starts.RESTART_SEED_STRIDE * r``) and
        ``prompt`` (tensor, the verified one).

    Explained in: book/cramming.md
    """
    dev = next(model.parameters()).device
    tg = torch.as_tensor(np.asarray(targets), dtype=torch.long, device=dev)
    b, n_all = tg.shape
    lengths = np.full(b, n_all) if lengths is None else np.asarray(lengths, dtype=int)
    _check(m, lengths)
    model.requires_grad_(False)
    dtype = next(model.parameters()).dtype
    seeds = [int(s) for s in seeds]
    p = init_prompts(model, m, seeds, cfg).to(dev)  # fp32 master copy [B, m, d]
    mom, var = torch.zeros_like(p), torch.zeros_like(p)
    t_adam = np.zeros(b, dtype=int)  # Adam step per row (reset by a cold restart)
    cur = (np.asarray(start_lengths, dtype=int) if start_lengths is not None else np.ones(b, int)) \
        if grow else lengths.copy()
    cur = np.minimum(cur, lengths)
    best, since, attempt = np.full(b, np.inf), np.zeros(b, int), np.zeros(b, int)
    cap = np.full(b, cfg.max_steps)  # step cap of the current attempt
    tries = np.zeros(b, int)  # cold restarts at the current length (reset by progress)
    off = [0] * b  # steps a resumed row had taken before this call (plain ints)
    out = [dict(status="active", n_verified=0, steps=0, first_success_step=None, loss=None,
                tf_prefix=0, history=[], restarts=[], prompt=None) for _ in range(b)]
    arrays = dict(t_adam=t_adam, cur=cur, best=best, since=since, attempt=attempt, cap=cap,
                  tries=tries)
    for i, st in enumerate(resume or []):
        if st is None:
            continue
        for k, t in (("p", p), ("mom", mom), ("var", var)):
            t[i] = torch.as_tensor(st[k], dtype=torch.float32, device=dev)
        for k, a in arrays.items():
            a[i] = st[k]
        out[i] = {**st["out"], "history": [list(h) for h in st["out"]["history"]],
                  "restarts": [list(h) for h in st["out"]["restarts"]]}
        off[i] = int(out[i]["steps"])

    def states() -> list[dict]:
        return [dict(p=p[i].cpu().clone(), mom=mom[i].cpu().clone(), var=var[i].cpu().clone(),
                     out={**out[i], "prompt": None if out[i]["prompt"] is None
                          else out[i]["prompt"].cpu().clone()},
                     **{k: a[i].item() for k, a in arrays.items()}) for i in range(b)]

    b1, b2 = cfg.betas
    step, last_snap = 0, time.monotonic()
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
        logits = model(inputs_embeds=frame(model, bos_id, cfg.layout, x.to(dtype), ids),
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
            rounded = round_prompt(p[act], cfg.precision, dtype)  # overflow here is non-finite too
            # a prompt whose squared norm overflows fp32 is silently zeroed by the model's
            # normalisation (x / sqrt(inf)): overflow without NaN, so it counts as non-finite too
            sq = rounded.float().pow(2).sum(-1)
            finite = (np.isfinite(lr_) & torch.isfinite(g).flatten(1).all(1).cpu().numpy()
                      & torch.isfinite(sq).all(1).cpu().numpy())
            cand = [j for j, i in enumerate(act) if finite[j] and prefix[j] >= cur[i]]
            passed, fresh = set(), set()  # fresh: rows cold-restarted this step (no update)
            if cand:
                k = [int(prefix[j]) if grow else int(cur[act[j]]) for j in cand]
                good = verify(model, bos_id, cfg, p[act[cand]], tg[act[cand]], k)
                passed = {j for j, gd in zip(cand, good) if gd}
                for j, kk in zip(cand, k):
                    if j in passed and kk > out[act[j]]["n_verified"]:
                        i = act[j]
                        out[i].update(n_verified=kk, prompt=p[i].clone())
                        out[i]["history"].append([step + off[i], kk])
                        out[i]["first_success_step"] = out[i]["first_success_step"] or step + off[i]
            for j, i in enumerate(act):
                o, s_i = out[i], step + off[i]  # s_i: the row's own step count
                o.update(steps=s_i, loss=float(lr_[j]), tf_prefix=int(prefix[j]))
                if not finite[j]:
                    o["status"] = "nan"
                elif j in passed and (not grow or o["n_verified"] >= lengths[i]):
                    o["status"] = "solved"
                elif j in passed:  # grow: next target length, fresh patience, warm prompt
                    cur[i], best[i], since[i], attempt[i] = o["n_verified"] + 1, np.inf, 0, 0
                    cap[i], tries[i] = cfg.max_steps, 0
                else:
                    attempt[i] += 1
                    since[i] = 0 if lr_[j] < best[i] else since[i] + 1
                    best[i] = min(best[i], lr_[j])
                    if attempt[i] >= cap[i] or since[i] >= cfg.patience:
                        o["status"] = "failed"
                if cfg.string_steps and s_i >= cfg.string_steps and o["status"] == "active":
                    o["status"] = "failed"  # the string's whole budget is spent
                if (o["status"] == "failed" and tries[i] < cfg.restarts
                        and not (cfg.string_steps and s_i >= cfg.string_steps)):
                    fresh.add(i)
                    restart_state(model, m, cfg, seeds[i], o, p, mom, var, arrays, i, cur[i])
            upd = [j for j, i in enumerate(act) if out[i]["status"] == "active" and i not in fresh]
            if upd:  # AdamW (decoupled weight decay), elementwise: identical to torch.optim.AdamW
                i = act[upd]
                t_adam[i] += 1
                tt = torch.as_tensor(t_adam[i], dtype=torch.float32, device=dev)[:, None, None]
                lr = torch.as_tensor(cfg.lr_at(t_adam[i] - 1), dtype=torch.float32,
                                     device=dev)[:, None, None]
                gi = g[upd]
                mom[i] = b1 * mom[i] + (1 - b1) * gi
                var[i] = b2 * var[i] + (1 - b2) * gi * gi
                pi = p[i] * (1 - lr * cfg.weight_decay)
                denom = (var[i] / (1 - b2**tt)).sqrt() + cfg.eps
                p[i] = pi - lr * (mom[i] / (1 - b1**tt)) / denom
        if callback is not None:
            callback(step, dict(loss=[o["loss"] for o in out], tf_prefix=[o["tf_prefix"] for o in out],
                                n_verified=[o["n_verified"] for o in out], length=cur.tolist(),
                                active=[o["status"] == "active" for o in out]))
        if snapshot is not None and time.monotonic() - last_snap >= snapshot_s:
            snapshot(states())
            last_snap = time.monotonic()
    bar.close()
    for o in out:
        if o["status"] == "failed" and grow and o["n_verified"] > 0:
            o["status"] = "stopped"  # grew until the optimiser stalled: n_verified is the threshold
    return out
