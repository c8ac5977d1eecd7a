"""Training a copier: length curriculum, resumable checkpoints, training curves, a learning-rate sweep.

Models from ``howmany.copying.models`` are trained on lengths in a range (default 5–50) that a
curriculum opens up gradually (``task.curriculum_max``). Every ``curve_every`` steps the mean
loss and the exact-string accuracy on held-out strings of a few training lengths are recorded;
training stops early once every one of those lengths reaches ``stop_exact`` (the authors'
criterion is 100 %). Checkpoints hold plain tensors and JSON-able values only and are read with
``torch.load(..., weights_only=True)``. Paper: Sec. 5 (copying experiments).

Explained in: book/copying.md
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from ..results import config_key
from ..devices import resolve_device
from . import evaluation, models, task


@dataclass(frozen=True)
class CopyConfig:
    """One training run plus its evaluation grid.

    Explained in: book/copying.md
    """

    model: models.ModelConfig = field(default_factory=models.ModelConfig)  # architecture
    min_len: int = 5  # shortest training string
    max_len: int = 50  # longest training string
    steps: int = 2000  # optimiser steps at most
    batch_size: int = 32  # strings per step
    lr: float = 1e-3  # peak AdamW learning rate (linear warm-up, cosine decay to lr/10)
    warmup: int = 100  # warm-up steps
    ramp: int = 0  # curriculum: steps until the longest length is max_len (0: no curriculum)
    length_power: float = 0.0  # P(length n) ∝ n**length_power (0: uniform)
    curve_every: int = 250  # steps between points of the training curve
    curve_lengths: tuple = (5, 10, 20, 30, 40, 50)  # held-out lengths of the training curve
    curve_strings: int = 50  # held-out strings per curve length
    stop_exact: float = 0.0  # stop once every curve length is copied this well (0: never)
    stop_repeat: int = 1  # ... at this many consecutive curve points
    eval_lengths: tuple = (5, 10, 20, 30, 40, 50, 60, 80, 100)  # string lengths evaluated
    eval_strings: int = 100  # strings per evaluated length
    seed: int = 0  # seeds initialisation, training data and test strings
    threads: int = 1  # torch CPU threads (tiny models gain nothing from more; a shared CPU loses)
    pretrained: str = ""  # fine-tune this howmany.models name instead of training from scratch
    device: str = "auto"  # "cpu", "cuda" or "auto" (a GPU when one is visible)
    init_from: str = ""  # continue from this run's checkpoint key (weights, optimiser, data)

    def fields(self) -> dict:
        """``asdict`` of the config, without ``init_from`` when it is unset (so the keys of
        runs made before continuations existed do not change).

        Explained in: book/copying.md
        """
        out = asdict(self)
        if not out["init_from"]:
            del out["init_from"]
        return out

    def key(self) -> str:
        """8-hex hash of the training part of the config (names its checkpoint).

        ``stop_repeat`` is left out: it only decides where a run ends, not its steps, so a
        stricter rule continues from the checkpoint where a laxer one stopped.
        """
        train = {k: v for k, v in self.fields().items()
                 if not k.startswith("eval") and k not in ("device", "threads", "stop_repeat")}
        return f"{self.pretrained or self.model.arch}-{config_key(train)}"


def checkpoint_dir() -> Path:
    """``$HOWMANY_CHECKPOINTS`` or ``~/.cache/howmany/checkpoints`` (outside the repository).

    Explained in: book/copying.md
    """
    env = os.environ.get("HOWMANY_CHECKPOINTS")
    return Path(env) if env else Path.home() / ".cache" / "howmany" / "checkpoints"


def _save(path: Path, state: dict) -> None:
    """Atomic ``torch.save``: temporary file in the same folder, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _lr(step: int, cfg: CopyConfig) -> float:
    """Linear warm-up to ``cfg.lr``, then cosine decay to a tenth of it."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def _continue_from(cfg: CopyConfig, model, opt, gen, dev) -> dict:
    """Load the checkpoint ``cfg.init_from`` (weights, optimiser state, data stream) into
    ``model``, ``opt`` and ``gen``; its step count and training curve come back as the info of
    the run that continues it (``init_steps``, ``init_curve``, ``init_train_s``)."""
    path = checkpoint_dir() / f"{cfg.init_from}.pt"
    if not path.exists():
        raise FileNotFoundError(f"init_from={cfg.init_from!r}: no checkpoint {path}; train that "
                                "run first")
    state = torch.load(path, weights_only=True, map_location=dev)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    gen.set_state(state["gen"])
    parent = json.loads(state["info"])
    return {"init_steps": state["step"], "init_curve": parent["curve"],
            "init_train_s": parent["train_s"]}


def curve_point(model, cfg: CopyConfig, step: int, losses: list) -> dict:
    """One point of the training curve: mean loss since the last point and held-out accuracy.

    The held-out strings (seed ``1000 + cfg.seed``) differ from the training stream and from the
    test strings of the final evaluation.

    Explained in: book/copying.md
    """
    rows = evaluation.evaluate(model, cfg.curve_lengths, cfg.curve_strings, seed=1000 + cfg.seed)
    model.train()
    hi = task.curriculum_max(step, min_len=cfg.min_len, max_len=cfg.max_len, ramp=cfg.ramp)
    return {"step": step, "loss": float(np.mean(losses)) if losses else float("nan"),
            "max_len": hi, "exact": [r["exact"] for r in rows]}


def full_curve(run: dict) -> list:
    """A run's training curve from its first step: a continuation's parent curve, then its own
    points with their steps counted from the parent's start.

    Explained in: book/copying.md
    """
    offset = run.get("init_steps", 0)
    return list(run.get("init_curve", [])) + [{**p, "step": offset + p["step"]}
                                              for p in run["curve"]]


def _done(cfg: CopyConfig, curve: list) -> bool:
    """Whether the last ``stop_repeat`` curve points all meet ``stop_exact`` on the full range."""
    last = curve[-max(1, cfg.stop_repeat):]
    return bool(cfg.stop_exact and len(last) == max(1, cfg.stop_repeat)
                and all(p["max_len"] == cfg.max_len and min(p["exact"]) >= cfg.stop_exact
                        for p in last))


def train(cfg: CopyConfig, *, model=None, verbose: bool = False, save_every: int = 250,
          use_checkpoints: bool = True):
    """Train (or resume, or load) a copy model; checkpoints are keyed by ``cfg.key()``.

    Args:
        cfg: run configuration.
        model: an already built model (e.g. a pretrained wrapper); default ``models.build``.
        verbose: show a tqdm progress bar.
        save_every: steps between checkpoints (a killed run resumes from the last one).
        use_checkpoints: read and write ``checkpoint_dir()/<key>.pt``.

    Returns:
        ``(model, info)``; ``info`` has ``steps`` (steps taken; fewer than ``cfg.steps`` when
        ``stop_exact`` was reached), ``train_s`` and ``train_cpu_s`` (wall and CPU seconds,
        summed over resumes), ``curve`` (see ``curve_point``), ``n_params`` and ``device``;
        a continuation (``cfg.init_from``) adds its parent's ``init_steps``, ``init_curve`` and
        ``init_train_s``, and counts its own steps and curve from zero.

    Explained in: book/copying.md
    """
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    dev = resolve_device(cfg.device)
    model = (models.build(cfg.model) if model is None else model).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    path = checkpoint_dir() / f"{cfg.key()}.pt"
    step, info = 0, {"train_s": 0.0, "train_cpu_s": 0.0, "curve": [],
                     "n_params": models.n_params(model), "device": dev}
    if use_checkpoints and path.exists():
        state = torch.load(path, weights_only=True, map_location=dev)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        step, info = state["step"], json.loads(state["info"])
    elif cfg.init_from:
        info.update(_continue_from(cfg, model, opt, gen, dev))
    model.train()
    running, t0, c0 = [], time.perf_counter(), time.process_time()
    bar = tqdm(total=cfg.steps, initial=step, disable=not verbose,
               desc=cfg.pretrained or cfg.model.arch)
    while step < cfg.steps and not _done(cfg, info["curve"]):
        hi = task.curriculum_max(step, min_len=cfg.min_len, max_len=cfg.max_len, ramp=cfg.ramp)
        lengths = task.sample_lengths(cfg.batch_size, cfg.min_len, hi, gen,
                                      power=cfg.length_power)
        inp, tgt, mask = (t.to(dev) for t in task.make_batch(lengths, gen))
        logits, _ = model(inp)
        loss = F.cross_entropy(logits[mask], tgt[mask])
        for group in opt.param_groups:
            group["lr"] = _lr(step, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        running.append(loss.item())
        bar.update(1)
        if step % cfg.curve_every == 0 or step == cfg.steps:
            info["curve"].append(curve_point(model, cfg, step, running))
            bar.set_postfix(loss=f"{info['curve'][-1]['loss']:.3f}")
            running = []
        if use_checkpoints and (step % save_every == 0 or step == cfg.steps
                                or _done(cfg, info["curve"])):
            info["train_s"] += time.perf_counter() - t0
            info["train_cpu_s"] += time.process_time() - c0
            t0, c0 = time.perf_counter(), time.process_time()
            info["steps"] = step
            _save(path, {"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                         "gen": gen.get_state(), "info": json.dumps(info),
                         "config": json.dumps(cfg.fields())})
    bar.close()
    if not use_checkpoints:  # otherwise counted at the last save
        info["train_s"] += time.perf_counter() - t0
        info["train_cpu_s"] += time.process_time() - c0
    info["steps"] = step
    model.eval()
    return model, info


def lr_sweep(cfg: CopyConfig, lrs: tuple, steps: int, *, verbose: bool = False) -> dict:
    """Short runs of ``cfg`` at each learning rate; the one with the lowest final loss wins.

    Each run takes ``steps`` steps with the curriculum compressed into them, so every rate sees
    the whole training range; the score is the mean loss over the last curve interval.

    Returns:
        ``{"lrs", "steps", "final_loss" (per rate), "curves" (per rate), "best"}``.

    Explained in: book/copying.md
    """
    losses, curves = [], []
    for lr in lrs:
        short = replace(cfg, lr=lr, steps=steps, ramp=steps // 2, stop_exact=0.0,
                        warmup=min(cfg.warmup, steps // 10), curve_every=max(1, steps // 4))
        _, info = train(short, verbose=verbose)
        curves.append(info["curve"])
        losses.append(info["curve"][-1]["loss"])
    best = lrs[int(np.nanargmin(np.where(np.isfinite(losses), losses, np.inf)))]
    return {"lrs": list(lrs), "steps": steps, "final_loss": losses, "curves": curves,
            "best": best}
