"""Cramming benchmark: the reference protocol vs our engine, and FLOP/s vs matmul peak.

Two measurements, side by side in one run (issue 5; chapter book/cramming.md, "Benchmark"):

1. **time to n50.** A faithful re-implementation of the reference protocol (Kuratov et al.
   2025 / the paper's code: one string at a time, the model loaded twice for every run, a fixed
   grid of target lengths, ``torch.optim.AdamW`` and one ``.item()`` sync per step) against our
   engine (batched, solved strings leave the batch, warm growing curriculum) on the *same*
   strings, model, layout, loss and step budget. Ours: n50 = median of the strings' thresholds.
   Reference: every (string, grid length) is an independent cold run (as in the paper's code,
   no early stop after a failure); n50 = where the success fraction over the grid falls to 1/2.
2. **throughput.** Achieved FLOP/s of one batched cramming step (≈ 4 · non-embedding-and-head
   parameters · tokens: forward plus input-gradient backward) against the matmul peak measured
   in the same process.

Usage (results go to ``data/cramming/benchmark-<hash>.json`` with provenance)::

    python benchmarks/bench_cramming.py --model smollm2-135m --strings 4 --grid 4 8 12 16 \
        --max-steps 300 --patience 100
    python benchmarks/bench_cramming.py --model smollm2-135m --strings 4 --grid 4 8 12 16 20 \
        --max-steps 300 --patience 100 --recipe book   # the book's recipe against the reference
    python benchmarks/bench_cramming.py --model tiny --strings 8   # seconds, tiny LeCun model

Explained in: book/cramming.md
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F

from howmany import cramming, models, results
from howmany.paths import data_dir


def load(name: str):
    if name == "tiny":
        return cramming.scaling.tiny_lm(d_model=64, d_vocab=64)
    return models.load(name, device="cpu")


def reference_one(name: str, target: np.ndarray, m: int, cfg: cramming.CramConfig, seed: int) -> bool:
    """One reference run: model loaded for training and again for evaluation, torch AdamW,
    .item() each step, stop at 100 % teacher-forced accuracy."""
    load(name)  # the reference code loads a second copy to evaluate the trained prompt
    lm = load(name)
    model = lm.model
    x = cramming.init_prompts(model, m, [seed], cfg).requires_grad_(True)
    opt = torch.optim.AdamW([x], lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    tg = torch.as_tensor(target)[None]
    best, since = float("inf"), 0
    for _ in range(cfg.max_steps):
        emb = cramming.decoding.frame(model, lm.bos_id, cfg.layout, x, tg[:, :-1])
        logits = model(inputs_embeds=emb, logits_to_keep=tg.shape[1]).logits
        loss = F.cross_entropy(logits[0], tg[0])
        acc = (logits[0].argmax(-1) == tg[0]).float().mean().item()  # the per-step sync
        if acc == 1.0:
            return True
        opt.zero_grad()
        loss.backward()
        opt.step()
        since = 0 if loss.item() < best else since + 1
        best = min(best, loss.item())
        if since >= cfg.patience:
            return False
    return False


def reference_protocol(name, tg, m, cfg, grid) -> tuple[float, float, list]:
    """Every (string, grid length) is an independent cold run, as in the paper's code: one
    string at a time, the model loaded twice per run. Returns (n50, wall s, success rows)."""
    t0 = time.perf_counter()
    ok = [[reference_one(name, row[:n], m, cfg, seed=1000 * i + n) for n in grid]
          for i, row in enumerate(tg)]
    return cramming.accessibility.n50_grid(grid, np.mean(ok, axis=0)), time.perf_counter() - t0, ok


def ours(name, tg, m, cfg, n_max, recipe=None) -> tuple[float, float, list]:
    """Our engine: a named recipe (``--recipe``), else warm growth with the reference's caps."""
    t0 = time.perf_counter()
    lm = load(name)
    if recipe:
        res = cramming.recipes.run(cramming.recipes.get(recipe), lm.model, lm.bos_id,
                                   tg[:, :n_max], m, seeds=range(len(tg)), n_max=n_max)
    else:
        res = cramming.thresholds_grow(lm.model, lm.bos_id, tg[:, :n_max], m, cfg,
                                       seeds=range(len(tg)))
    thr = [r["threshold"] for r in res]
    return float(np.median(thr)), time.perf_counter() - t0, thr


def matmul_peak(dtype=torch.float32, size: int = 1024, reps: int = 10) -> float:
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * size**3 * reps / (time.perf_counter() - t0)


def step_flops_per_s(lm, batch: int, n: int, steps: int = 3) -> dict:
    model = lm.model
    emb_params = model.get_input_embeddings().weight.numel()
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    n_params = sum(p.numel() for p in model.parameters()) - (0 if tied else emb_params)
    x = torch.randn(batch, 1 + n, lm.d_model, requires_grad=True)
    walls = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        model(inputs_embeds=x, logits_to_keep=n).logits.float().logsumexp(-1).sum().backward()
        walls.append(time.perf_counter() - t0)
    wall = float(np.median(walls[1:]))
    flops = 4.0 * n_params * batch * (1 + n)
    return {"batch": batch, "n": n, "step_s": wall, "flops": flops, "flop_per_s": flops / wall}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--strings", type=int, default=4)
    ap.add_argument("--m", type=int, default=1)
    ap.add_argument("--grid", type=int, nargs="+", default=[2, 4, 6, 8, 10, 12])
    ap.add_argument("--max-steps", type=int, default=300)
    ap.add_argument("--patience", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--recipe", default=None,
                    help="our side runs this recipe (cramming.recipes) instead of plain growth")
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--throughput-only", action="store_true", help="only FLOP/s vs matmul peak")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = cramming.CramConfig(max_steps=args.max_steps, patience=args.patience)
    lm = load(args.model)
    n_max = max(args.grid)
    tg = (np.random.default_rng(args.seed).integers(2, lm.d_vocab, size=(args.strings, n_max))
          if lm.tokenizer is None else cramming.targets.make_targets(
              "random-words", args.strings, n_max, seed=args.seed, tokenizer=lm.tokenizer,
              d_vocab=lm.d_vocab))
    peak = matmul_peak()
    thr = step_flops_per_s(lm, batch=8, n=32)
    out = {"model": args.model, "recipe": args.recipe, "m": args.m, "strings": args.strings, "grid": args.grid,
           "cram": cfg.to_dict(), "matmul_peak_flop_per_s": peak, "step": thr,
           "fraction_of_peak": thr["flop_per_s"] / peak, "threads": torch.get_num_threads()}
    if not args.throughput_only:
        n50_ours, t_ours, thr_ours = ours(args.model, tg, args.m, cfg, n_max, args.recipe)
        out.update(ours_n50=n50_ours, ours_wall_s=t_ours, ours_thresholds=thr_ours,
                   ours_n50_grid=cramming.accessibility.n50_grid(  # the same estimator
                       args.grid, cramming.accessibility.accessible_fraction(thr_ours, args.grid)))
    if not (args.skip_reference or args.throughput_only):
        n50_ref, t_ref, ok = reference_protocol(args.model, tg, args.m, cfg, args.grid)
        out.update(reference_n50=n50_ref, reference_wall_s=t_ref, reference_success=ok,
                   speedup=t_ref / t_ours,
                   n50_ratio=out["ours_n50_grid"] / n50_ref if n50_ref else None)  # same estimator
    path = data_dir() / "cramming" / f"benchmark-{args.model}-{results.config_key(vars(args))}.json"
    results.atomic_write_json(path, {"config": vars(args), "result": out,
                                     "provenance": results.provenance(seed=args.seed, device="cpu",
                                                                      dtype="float32")})
    print(path)
    print({k: v for k, v in out.items() if k not in ("cram", "ours_thresholds")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
