"""Cramming sweeps on a Ray cluster: the same units, seeds and files as the in-process sweep.

``run_sweeps`` spreads the units of one or several sweeps (``sweep.plan_units``: method, m, a
batch of strings) over Ray actors, one per device, each holding its model, loaded once. Only
the driver writes: each finished unit goes through ``sweep.write_unit`` (atomic, one file per
string) into the sweep's usual folder. A killed driver therefore resumes by skipping finished
files; an actor killed mid-task is restarted by Ray, which retries the task, and the unit is
written once, when its result reaches the driver. Seeds and batches are those of
``sweep.run_sweep``, so on CPU the ``result`` part of every file is bitwise the same whichever
backend or worker computed it; provenance differs (times, command, ``backend``, ``host``).

Ray is an optional extra: ``pip install -e ".[distributed]"``; joining the cluster and sizing
the workers is shared with the other Ray backends (``howmany.distributed``).

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tqdm import tqdm

from .. import results
from ..distributed import MISSING_RAY, ClusterConfig, capacity, connect, import_ray
from . import sweep, units, widen

__all__ = ["MISSING_RAY", "ClusterConfig", "CramWorker", "import_ray", "paper_command",
           "paper_sweeps", "remeasure_commands", "remeasure_sweeps", "run_sweeps", "sweep_flops"]


class CramWorker:
    """State of one Ray actor: the model it holds (loaded once) and the targets of its sweeps."""

    def __init__(self, device: str, threads: int):
        import torch

        torch.set_num_threads(threads)  # as many threads as the actor's CPUs, on every node
        self.device, self.key, self.lm, self.targets = device, None, None, {}

    def pid(self) -> int:
        return os.getpid()

    def run(self, cfg: sweep.SweepConfig, unit, base: dict | None = None) -> dict:
        """Compute one unit (``base``: stored rows it continues, ``sweep.base_rows``); the model
        is loaded on the first unit that needs it."""
        from .. import models

        if self.key != (cfg.model, cfg.dtype):
            self.lm, self.targets = None, {}  # release the previous model before loading
            self.lm = models.load(cfg.model, dtype=cfg.dtype, device=self.device)
            self.key = (cfg.model, cfg.dtype)
        if cfg not in self.targets:
            self.targets[cfg] = sweep.sweep_targets(cfg, self.lm)
        rows, wall = sweep.compute_unit(self.lm, cfg, unit, self.targets[cfg], base=base)
        return {"rows": rows, "wall_s": wall, "device": self.lm.device, "pid": os.getpid(),
                "host": socket.gethostname()}


def _next(queues: list[list], cfgs: list, key) -> int | None:
    """The sweep an idle actor serves next: its own model first, else the longest queue."""
    same = [k for k, q in enumerate(queues) if q and (cfgs[k].model, cfgs[k].dtype) == key]
    if same:
        return same[0]
    rest = [k for k, q in enumerate(queues) if q]
    return max(rest, key=lambda k: len(queues[k])) if rest else None


def run_sweeps(sweeps, cluster: ClusterConfig | None = None, *, only_ms=None,
               batch_size: int | None = None, verbose: bool = False, callback=None) -> dict:
    """Run (or resume) several sweeps together on a Ray cluster; the units of all of them share
    the actors, so a cluster stays busy.

    Args:
        sweeps: ``[(SweepConfig, folder), ...]``; each folder is the sweep's usual folder.
        cluster: ``ClusterConfig`` (address, number of actors, restarts and retries); default
            a local cluster.
        only_ms, batch_size: as in ``sweep.run_sweep`` (what this run does, not the config).
        verbose: a progress bar with strings done and units running and failed.
        callback: ``callback(event, info)`` on the driver, events ``"start"`` (``pids`` of the
            actors), ``"dispatch"`` and ``"done"`` (``actor``, ``pid``, ``model``, ``unit``).

    Returns:
        Counts: ``units`` written, ``failed`` (retries exhausted: left for the next run),
        ``restarted`` (units that finished on a restarted actor), ``workers``, ``device``.

    Explained in: book/reproducibility.md
    """
    ray, cluster = import_ray(), cluster or ClusterConfig()
    started = connect(ray, cluster)
    cfgs, folders = [c for c, _ in sweeps], [Path(f) for _, f in sweeps]
    for cfg, folder in zip(cfgs, folders):  # strings a narrower cap finished below it
        if widen.narrower_sweeps(cfg, folder):
            results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance":
                                      results.provenance(seed=cfg.seed, dtype=cfg.dtype)})
            widen.inherit(cfg, folder)
    queues = [list(sweep.plan_units(c, f, only_ms=only_ms, batch_size=batch_size))
              for c, f in zip(cfgs, folders)]
    n, gpus = capacity(ray, cluster)
    device = "cuda" if gpus else "cpu"
    actor_cls = ray.remote(CramWorker).options(
        num_cpus=cluster.cpus_per_worker, num_gpus=1 if gpus else 0,
        max_restarts=cluster.max_restarts, max_task_retries=cluster.max_task_retries)
    actors, running = [], {}
    total = sum(len(c.methods) * len(c.ms) * c.n_strings for c in cfgs)
    done = sum(units.unit_path(f, m, me, i).exists() for c, f in zip(cfgs, folders)
               for me in c.methods for m in c.ms for i in range(c.n_strings))
    bar = tqdm(total=total, initial=done, disable=not verbose, desc=f"cram on ray ({n} workers)")
    stats = {"units": 0, "failed": 0, "restarted": 0, "workers": n, "device": device}
    emit = callback or (lambda event, info: None)
    try:
        for cfg, folder in zip(cfgs, folders):
            results.atomic_write_json(folder / "sweep.json", {"config": cfg, "provenance":
                                      results.provenance(seed=cfg.seed, device=device,
                                                         dtype=cfg.dtype)})
        actors = [actor_cls.remote(device, cluster.cpus_per_worker) for _ in range(n)]
        pids = ray.get([a.pid.remote() for a in actors])
        emit("start", {"pids": list(pids)})
        idle, key = list(range(n)), [None] * n
        while True:
            while idle and (k := _next(queues, cfgs, key[idle[0]])) is not None:
                a, unit = idle.pop(0), queues[k].pop(0)
                key[a] = (cfgs[k].model, cfgs[k].dtype)
                base = sweep.base_rows(cfgs[k], folders[k], unit)
                running[actors[a].run.remote(cfgs[k], unit, base)] = (a, k, unit)
                emit("dispatch", {"actor": a, "pid": pids[a], "model": cfgs[k].model, "unit": unit})
            if not running:
                break
            [ref], _ = ray.wait(list(running), num_returns=1)
            a, k, unit = running.pop(ref)
            idle.append(a)
            try:
                out = ray.get(ref)
            except ray.exceptions.RayError:  # retries exhausted: the unit stays for the next run
                stats["failed"] += 1
                bar.set_postfix(running=len(running), failed=stats["failed"], refresh=False)
                continue
            if out["pid"] != pids[a]:  # the actor was restarted and Ray retried the task
                stats["restarted"] += 1
                pids[a] = out["pid"]
            sweep.write_unit(folders[k], cfgs[k], unit, out["rows"], device=out["device"],
                             wall_s=out["wall_s"], extra={"backend": "ray", "host": out["host"]})
            stats["units"] += 1
            bar.update(len(unit[2]))
            bar.set_postfix(running=len(running), failed=stats["failed"], refresh=False)
            emit("done", {"actor": a, "pid": out["pid"], "model": cfgs[k].model, "unit": unit,
                          "wall_s": out["wall_s"]})
    finally:
        bar.close()
        for actor in actors:  # this driver's actors end with it (also on Ctrl-C)
            ray.kill(actor)
        if started:
            ray.shutdown()
    return stats


# Sustained FLOP/s assumed for one data-centre GPU on these small batches: an assumption, not a
# measurement (a few tenths of the bf16 matmul peak of current GPUs).
ASSUMED_GPU_FLOPS = 2e14
# Hub models of the paper's Table 1, with the parameter count their names give (an estimate).
PAPER_MODELS = {"EleutherAI/pythia-160m": 160e6, "EleutherAI/pythia-410m": 410e6,
                "EleutherAI/pythia-1b": 1e9, "Qwen/Qwen2.5-0.5B": 0.5e9, "Qwen/Qwen2.5-1.5B": 1.5e9,
                "meta-llama/Llama-3.2-1B": 1e9, "google/gemma-3-270m": 270e6}


def sweep_flops(cfg: sweep.SweepConfig, n_params: float) -> float:
    """An upper estimate of a sweep's FLOPs: every attempt runs to its step cap.

    One optimiser step on a string of ``P`` positions costs about ``4 · n_params · P`` FLOPs: a
    forward pass (2 per parameter and position) and a backward pass to the prompt only (about 2
    more; the training rule of thumb, 6, also counts weight gradients, which a frozen model does
    not need). Positions: the prompt, the BOS token of the layout and the target prefix. Steps
    per string: ``grid`` runs every grid length, ``bisect`` about log2(n_max) lengths near
    n_max / 2, ``grow`` every length from 1 to n_max, each at most ``cram.max_steps`` steps.
    Verification (greedy decoding) is left out. Real runs stop earlier (success or patience).

    Explained in: book/reproducibility.md
    """
    c = cfg.cram
    total = 0.0
    for m in cfg.ms:
        p, n_max = m + (c.layout != "mem"), cfg.n_max(m)
        if "grid" in cfg.methods:
            total += sum(p + n for n in cfg.grid(m)) * c.max_steps
        if "bisect" in cfg.methods:
            total += (n_max + 1).bit_length() * (p + n_max / 2) * c.max_steps
        if "grow" in cfg.methods:  # every length, then each cold restart once at n_max
            grow = sum(p + n + c.lookahead for n in range(1, n_max + 1)) * c.max_steps
            if c.string_steps:
                grow = min(grow, c.string_steps * (p + n_max + c.lookahead))
            total += grow + c.restarts * (c.cold_steps or c.max_steps) * (p + n_max)
    return 4.0 * n_params * total * cfg.n_strings


def paper_sweeps(kinds=("random-words", "pg19")) -> list:
    """The paper's full cramming experiment as sweeps: every model of ``PAPER_MODELS``, m = 1..5,
    20 strings per m and kind, the paper's recipe (a cold start on each grid length).

    Explained in: book/reproducibility.md
    """
    from . import recipes

    return [sweep.SweepConfig.for_recipe(name, recipes.get("paper"), kind=kind, ms=(1, 2, 3, 4, 5),
                                         n_strings=20, batch_size=20, dtype="bfloat16")
            for name in PAPER_MODELS for kind in kinds]


def paper_command(address: str = "auto") -> str:
    """The one command that runs ``paper_sweeps()`` on the Ray cluster at ``address``.

    Explained in: book/reproducibility.md
    """
    return ("python -m howmany cram --models " + " ".join(PAPER_MODELS) + " --recipe paper "
            "--m 1 2 3 4 5 --strings 20 --batch 20 --kind random-words pg19 --dtype bfloat16 "
            f"--profile full --backend ray --address {address}")


# The book's real models with their parameter counts (from their names, as in PAPER_MODELS).
BOOK_MODEL_PARAMS = {"smollm2-135m": 135e6, "gemma3-270m": 270e6}
# What the book's recipe re-measures: (model, target kind, m values, prefix cap n_max_per_m),
# 16 strings per m, n_max(m) = 16 + n_max_per_m·m. Gemma-3-270M gets twice the default cap:
# with the book's recipe, its strings reached 16 + 48m at m = 1 and 2 (cramming.widen keeps
# what a sweep at the default cap finished below it).
REMEASURE = (("smollm2-135m", "random-words", (1, 2, 3, 4, 5), 48),
             ("smollm2-135m", "natural", (1, 2, 3), 48),
             ("gemma3-270m", "random-words", (1, 2, 3, 4), 96))
# The prefix cap of a sweep that names none (also the default of ``--n-max``).
CAP_DEFAULT = (sweep.SweepConfig.n_max_base, sweep.SweepConfig.n_max_per_m)
REPLICATION_GRID = 25  # the paper-protocol point: A(n) at n = 5, 10, ..., 25 (m = 1)
REHEARSAL_SCALE = 0.01  # a rehearsal's share of every step cap


def remeasure_sweeps(strings: int = 16, *, rehearsal: bool = False) -> list:
    """The chapter's real-model sweeps re-measured with the book's recipe, then one replication
    point under the paper's protocol: Gemma-3-270M, m = 1, the grid n = 5..25, once with the
    authors' layout (``mem-bos``) and once with ours (``bos-mem``). Same strings and prompt seeds
    as the stored budget-limited sweeps; one batch holds all ``strings`` of an m.

    ``rehearsal``: the same sweeps cut to their first m, with every step cap scaled by
    ``REHEARSAL_SCALE`` (recipes ``book@x0.01`` and ``paper@x0.01``): every model, target
    kind and layout goes through loading, cramming and storing in minutes, so a setup fault
    shows before the hours of the real run. Its thresholds measure nothing.

    Explained in: book/cramming.md
    """
    from dataclasses import replace

    from . import recipes

    scale = f"@x{REHEARSAL_SCALE:g}" if rehearsal else ""
    book, paper = recipes.get("book" + scale), recipes.get("paper" + scale)
    out = [sweep.SweepConfig.for_recipe(model, book, kind=kind, ms=ms[:1] if rehearsal else ms,
                                        n_strings=strings, batch_size=strings, n_max_per_m=per_m)
           for model, kind, ms, per_m in REMEASURE]
    for layout in ("mem-bos", "bos-mem"):
        rec = replace(paper, cram=replace(paper.cram, layout=layout))
        out.append(sweep.SweepConfig.for_recipe("gemma3-270m", rec, ms=(1,), n_strings=strings,
                                                batch_size=strings, n_max_base=REPLICATION_GRID,
                                                n_max_per_m=0))
    return out


def remeasure_commands(strings: int = 16, extra: str = "") -> list[str]:
    """The ``python -m howmany cram`` command lines of ``remeasure_sweeps()``, one per line of
    a script; ``extra`` is appended to each (e.g. ``"--dtype bfloat16"`` or a Ray backend).

    Explained in: book/cramming.md
    """
    lines = []
    for cfg in remeasure_sweeps(strings):
        ms = " ".join(map(str, cfg.ms))
        line = (f"python -m howmany cram {cfg.model} --recipe {cfg.recipe} --kind {cfg.kind} "
                f"--m {ms} --strings {cfg.n_strings} --batch {cfg.batch_size}")
        if cfg.recipe == "paper" or (cfg.n_max_base, cfg.n_max_per_m) != CAP_DEFAULT:
            line += f" --n-max {cfg.n_max_base} {cfg.n_max_per_m}"
        if cfg.recipe == "paper":
            line += f" --layout {cfg.cram.layout}"
        lines.append(f"{line} --profile full {extra}".rstrip())
    return lines
