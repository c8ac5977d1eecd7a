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

__all__ = ["MISSING_RAY", "ClusterConfig", "CramWorker", "import_ray", "run_sweeps"]


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
