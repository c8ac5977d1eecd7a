"""The copy task: data, training with resumable checkpoints, greedy evaluation, the cliff fit.

A training example is ``$ s | s .`` with ``s`` a uniformly random string over 26 letters; the
loss counts only the copied part (``s`` after the separator, and the end symbol). Models from
``howmany.copymodels`` are trained on lengths in a range (default 5–50), with resumable
checkpoints outside the repository, and evaluated by ``howmany.copyeval`` at lengths up to
several times longer. Paper: Sec. 5 (copying experiments), Cor. 4.10.

Explained in: book/copying.md
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from . import copymodels, profiles
from .results import config_key
from .utils import resolve_device

LETTERS = 26  # ids 0..25 are the letters a..z
BOS, SEP, EOS, PAD = 26, 27, 28, 29  # "$", "|", ".", padding
SYMBOLS = "abcdefghijklmnopqrstuvwxyz$|._"


@dataclass(frozen=True)
class CopyConfig:
    """One training run plus its evaluation grid."""

    model: copymodels.ModelConfig = field(default_factory=copymodels.ModelConfig)
    min_len: int = 5  # shortest training string
    max_len: int = 50  # longest training string
    steps: int = 2000  # optimiser steps
    batch_size: int = 32  # strings per step
    lr: float = 1e-3  # peak AdamW learning rate (linear warm-up, cosine decay)
    warmup: int = 100  # warm-up steps
    eval_lengths: tuple = (5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 70, 80, 90, 100, 125, 150,
                           200, 250, 300)  # string lengths evaluated
    eval_strings: int = 100  # strings per evaluated length
    seed: int = 0  # seeds initialisation, training data and test strings
    threads: int = 1  # torch CPU threads (tiny models gain nothing from more; a shared CPU loses)
    pretrained: str = ""  # fine-tune this howmany.models name instead of training from scratch
    device: str = "cpu"  # "cpu", "cuda" or "auto"

    @classmethod
    def for_profile(cls, profile: str, arch: str = "rope", **overrides) -> CopyConfig:
        """Sizes per profile: ``smoke`` is tiny, ``default`` fits a 2-core CPU, ``full`` is larger."""
        if profiles.check(profile) == "smoke":
            base = cls(model=copymodels.ModelConfig.smoke(arch), min_len=2, max_len=8,
                       steps=150, lr=3e-3, warmup=20, eval_lengths=(2, 4, 8, 12, 16, 24),
                       eval_strings=20)
        else:  # d_model 64 rather than 128: the five models must train in minutes on 2 cores
            base = cls(model=copymodels.ModelConfig(arch=arch, d_model=64), lr=3e-3)
        return replace(base, **overrides)

    def key(self) -> str:
        """8-hex hash of the training part of the config (names its checkpoint)."""
        train = {k: v for k, v in asdict(self).items() if not k.startswith("eval")}
        return f"{self.pretrained or self.model.arch}-{config_key(train)}"


ARCH_LABELS = {"nope": "NoPE", "rope": "RoPE", "alibi": "ALiBi", "hard_alibi": "hard-ALiBi",
               "lstm": "LSTM"}
# Step budgets of the default profile (2 shared CPU cores, ~8 min for everything). ALiBi, the
# fastest learner here, gets the steps that bring it to >= 99 % at every training length; RoPE
# keeps 1500; NoPE, hard-ALiBi and the LSTM were still near chance after 1500 steps in our
# calibration runs, so they get 300–500 and the chapter reports them as not learned.
DEFAULT_STEPS = {"nope": 300, "rope": 1500, "alibi": 3000, "hard_alibi": 300, "lstm": 500}


def suite(profile: str, *, seed: int = 0) -> list[CopyConfig]:
    """The chapter's runs, one per architecture, with the per-architecture step budgets.

    Explained in: book/copying.md
    """
    if profile == "smoke":
        return [CopyConfig.for_profile(profile, a, seed=seed) for a in ARCH_LABELS]
    return [CopyConfig.for_profile(profile, a, seed=seed, steps=DEFAULT_STEPS[a])
            for a in ARCH_LABELS]


def finetune_config(profile: str, *, seed: int = 0) -> CopyConfig:
    """Fine-tuning a pretrained model (SmolLM2-135M; a tiny random Llama in ``smoke``).

    Explained in: book/copying.md
    """
    if profiles.check(profile) == "smoke":
        return CopyConfig.for_profile(profile, pretrained="tiny-llama-d32-v64-l1", steps=20,
                                      eval_lengths=(2, 8), seed=seed)
    # SmolLM2 already copies in context (first-step loss ~1.2, ~0.05 after a few steps), so
    # 150 steps of 16 strings (~15 min on 2 CPU cores) is far past convergence on lengths 5-50.
    return CopyConfig.for_profile(profile, pretrained="smollm2-135m", steps=150, lr=1e-4,
                                  warmup=10, batch_size=16, device="auto", seed=seed, threads=2,
                                  eval_lengths=(5, 10, 20, 30, 40, 50, 60, 75, 100, 150, 200, 300))


def random_strings(n_strings: int, length: int, gen: torch.Generator) -> torch.Tensor:
    """Uniform random letter ids [n_strings, length]."""
    return torch.randint(0, LETTERS, (n_strings, length), generator=gen)


def make_batch(lengths: list[int], gen: torch.Generator):
    """Padded copy examples for the given string lengths.

    Returns:
        ``(inputs, targets, mask)``, each [batch, 2*max(lengths)+2]: ``inputs`` are the ids of
        ``$ s | s .`` without the last symbol, ``targets`` the next ids, and ``mask`` is True
        exactly where the target is a copied letter or the end symbol.

    Explained in: book/copying.md
    """
    width = 2 * max(lengths) + 3
    seqs = torch.full((len(lengths), width), PAD)
    mask = torch.zeros(len(lengths), width, dtype=torch.bool)
    for i, n in enumerate(lengths):
        s = random_strings(1, n, gen)[0]
        seqs[i, : 2 * n + 3] = torch.cat([torch.tensor([BOS]), s, torch.tensor([SEP]), s,
                                          torch.tensor([EOS])])
        mask[i, n + 2 : 2 * n + 3] = True  # copied letters and EOS, as positions in seqs
    return seqs[:, :-1], seqs[:, 1:], mask[:, 1:]


def sample_lengths(n: int, lo: int, hi: int, gen: torch.Generator) -> list[int]:
    """``n`` lengths uniform on {lo, ..., hi}."""
    return torch.randint(lo, hi + 1, (n,), generator=gen).tolist()


def checkpoint_dir() -> Path:
    """``$HOWMANY_CHECKPOINTS`` or ``~/.cache/howmany/checkpoints`` (outside the repository)."""
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


def train(cfg: CopyConfig, *, model=None, verbose: bool = False, save_every: int = 250,
          use_checkpoints: bool = True):
    """Train (or resume, or load) a copy model; checkpoints are keyed by ``cfg.key()``.

    Args:
        cfg: run configuration.
        model: an already built model (e.g. a pretrained wrapper); default ``copymodels.build``.
        verbose: show a tqdm progress bar.
        save_every: steps between checkpoints (a killed run resumes from the last one).
        use_checkpoints: read and write ``checkpoint_dir()/<key>.pt``.

    Returns:
        ``(model, info)``; ``info`` has ``train_s`` and ``train_cpu_s`` (wall and CPU seconds of
        training, summed over resumes),
        ``losses`` (mean loss per 50 steps) and ``n_params``.

    Explained in: book/copying.md
    """
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    dev = resolve_device(cfg.device)
    model = (copymodels.build(cfg.model) if model is None else model).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    path = checkpoint_dir() / f"{cfg.key()}.pt"
    step, info = 0, {"train_s": 0.0, "train_cpu_s": 0.0, "losses": [],
                     "n_params": copymodels.n_params(model)}
    if use_checkpoints and path.exists():
        state = torch.load(path, weights_only=False, map_location=dev)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        step, info = state["step"], state["info"]
    model.train()
    running, t0, c0 = [], time.perf_counter(), time.process_time()
    bar = tqdm(total=cfg.steps, initial=step, disable=not verbose, desc=cfg.pretrained or cfg.model.arch)
    while step < cfg.steps:
        lengths = sample_lengths(cfg.batch_size, cfg.min_len, cfg.max_len, gen)
        inp, tgt, mask = (t.to(dev) for t in make_batch(lengths, gen))
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
        if len(running) == 50 or step == cfg.steps:
            info["losses"].append(float(np.mean(running)))
            bar.set_postfix(loss=f"{info['losses'][-1]:.3f}")
            running = []
        if use_checkpoints and (step % save_every == 0 or step == cfg.steps):
            info["train_s"] += time.perf_counter() - t0
            info["train_cpu_s"] = info.get("train_cpu_s", 0.0) + time.process_time() - c0
            t0, c0 = time.perf_counter(), time.process_time()
            _save(path, {"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                         "gen": gen.get_state(), "info": info, "config": asdict(cfg)})
    bar.close()
    if not use_checkpoints:  # otherwise counted at the last save
        info["train_s"] += time.perf_counter() - t0
        info["train_cpu_s"] += time.process_time() - c0
    model.eval()
    return model, info


def run(cfg: CopyConfig, *, verbose: bool = False) -> dict:
    """Train (or reuse the checkpoint) and evaluate one architecture; a JSON-able summary.

    Explained in: book/copying.md
    """
    from . import copyeval  # evaluation builds on this module's data functions

    t0 = time.perf_counter()
    model = None
    if cfg.pretrained:  # paper Sec. 5: fine-tune a pretrained model on the same task
        from . import models

        lm = models.load(cfg.pretrained, device=resolve_device(cfg.device))
        model = copymodels.PretrainedCopier(lm, SYMBOLS)
    model, info = train(cfg, model=model, verbose=verbose, save_every=50 if cfg.pretrained else 250)
    t1, c1 = time.perf_counter(), time.process_time()
    rows = copyeval.evaluate(model, cfg.eval_lengths, cfg.eval_strings, seed=cfg.seed,
                             verbose=verbose)
    ns, exact = [r["n"] for r in rows], [r["exact"] for r in rows]
    embed = getattr(model, "embed", None)  # prompt vectors of the bounds: the input embeddings
    r = float(embed.weight.detach().norm(dim=1).max()) if embed is not None else float("nan")
    return {"arch": cfg.pretrained or cfg.model.arch, "n_params": info["n_params"], "r_embed": r,
            "train_s": info["train_s"], "train_cpu_s": info.get("train_cpu_s"),  # None: not kept
            "train_call_s": t1 - t0, "eval_s": time.perf_counter() - t1,
            "eval_cpu_s": time.process_time() - c1,
            "losses": info["losses"], "rows": rows, "fit": copyeval.fit_cliff(ns, exact)}


def cached_finetune(profile: str, *, seed: int = 0, verbose: bool = False):
    """The fine-tuning run through the results store (heavy: committed in ``data/copying``).

    Returns:
        A ``results.Record``; ``record.result`` is :func:`run`'s dict. Outside ``full`` (and
        ``smoke``, which computes a tiny one) a missing file raises ``MissingResultError``.

    Explained in: book/copying.md
    """
    from . import results

    cfg = finetune_config(profile, seed=seed)
    return results.cached("copy-finetune", lambda: run(cfg, verbose=verbose), cfg,
                          chapter="copying", profile=profile, heavy=True, seed=seed,
                          dtype="float32")


def _cli(args) -> int:
    """``python -m howmany copy``: train (or reuse) the chapter's models and say where each breaks."""
    from . import copyeval

    if args.finetune:
        rec = cached_finetune(args.profile, seed=args.seed, verbose=True)
        train_max = finetune_config(args.profile, seed=args.seed).max_len
        print(copyeval.summary(rec.result, train_max=train_max), rec.path, flush=True)
        return 0
    for cfg in suite(args.profile, seed=args.seed):
        if args.arch and cfg.model.arch not in args.arch:
            continue
        row = copyeval.summary(run(cfg, verbose=True), train_max=cfg.max_len)
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in row.items()), flush=True)
    return 0


def add_cli(sub) -> None:
    """Register the ``copy`` sub-command (checkpoints go to ``checkpoint_dir()``)."""
    p = sub.add_parser("copy", help="train/evaluate the copy-task models of book/copying.md")
    p.add_argument("--profile", default="default", help="smoke | default | full")
    p.add_argument("--arch", nargs="*", choices=copymodels.ARCHS, help="default: all five")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--finetune", action="store_true",
                   help="fine-tune the pretrained model instead (SmolLM2-135M; hours on a CPU)")
    p.set_defaults(func=_cli)
