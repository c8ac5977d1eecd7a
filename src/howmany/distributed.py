"""Experiments on a Ray cluster: joining it, sizing the workers, and stored results computed there.

The plumbing every Ray backend shares: ``import_ray`` (Ray is the optional extra
``distributed``; without it, a one-line error names the extra), the command-line options
(``add_arguments``), ``ClusterConfig`` and ``connect`` (join a running cluster at ``"auto"`` or
``HOST:PORT``, else start a local one), and ``capacity`` (one worker per GPU of the cluster,
else one per ``cpus_per_worker`` CPUs).

``run_pending`` runs independent results of ``howmany.results.cached`` as Ray tasks. It plans
each call first (``howmany.pending``): a result already stored is skipped, so a killed driver
resumes where it stopped; the others go to the workers, one GPU each when the cluster has GPUs.
Only the driver writes: each result, as it arrives, through ``results.save``, into the file the
in-process run would have written. A task whose worker dies is retried by Ray; its result
reaches the driver, and is written, once. The functions are those the in-process run calls,
with the configs that seed them, so on CPU the ``result`` part of every file is the same.

The cramming sweeps use actors that hold a model instead (``howmany.cramming.cluster``).

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from tqdm import tqdm

from . import pending, results

MISSING_RAY = ('the Ray backend needs the optional extra "distributed": '
               'pip install -e ".[distributed]"')


def import_ray():
    """The ``ray`` module, or an ``ImportError`` whose one-line message names the extra.

    Explained in: book/reproducibility.md
    """
    try:
        import ray
    except ImportError as err:
        raise ImportError(MISSING_RAY) from err
    return ray


@dataclass(frozen=True)
class ClusterConfig:
    """Where a job runs and how failures are absorbed.

    Explained in: book/reproducibility.md
    """

    address: str | None = None  # None: start a local cluster; "auto" or "HOST:PORT": join one
    workers: int = 0  # workers at once; 0 = one per GPU of the cluster, else per cpus_per_worker
    cpus_per_worker: int = 1  # CPUs (and torch threads) per worker
    max_restarts: int = 3  # a killed actor is restarted this many times ...
    max_task_retries: int = 3  # ... and a task whose worker died retried this many times


def add_arguments(parser, *, inprocess: str, workers: str, ray: str = "on a Ray cluster") -> None:
    """``--backend inprocess|ray``, ``--address`` and ``--workers`` of a command that can run on
    a Ray cluster; ``inprocess``, ``ray`` and ``workers`` say what each backend and a worker do.

    Explained in: book/reproducibility.md
    """
    parser.add_argument("--backend", default="inprocess", choices=["inprocess", "ray"],
                        help=f"inprocess: {inprocess}; ray: {ray}")
    parser.add_argument("--address", default=None, help="ray: 'auto' or HOST:PORT of a running "
                        "cluster (default: start a local one)")
    parser.add_argument("--workers", type=int, default=0, help=f"ray: {workers} at once (default "
                        "one per GPU of the cluster, else one per CPU)")


def from_args(args) -> ClusterConfig:
    """The ``ClusterConfig`` of a command line built with :func:`add_arguments`."""
    return ClusterConfig(address=args.address, workers=args.workers)


def connect(ray, cluster: ClusterConfig) -> bool:
    """Join or start a cluster unless this process already has one; True if we started it.

    Explained in: book/reproducibility.md
    """
    if ray.is_initialized():
        return False
    kw = dict(include_dashboard=False, log_to_driver=False, logging_level="warning")
    if cluster.address is None and cluster.workers:
        kw["num_cpus"] = cluster.workers * cluster.cpus_per_worker
    ray.init(address=cluster.address, **kw)
    return True


def capacity(ray, cluster: ClusterConfig) -> tuple[int, int]:
    """``(workers, gpus)``: how many workers run at once, and the GPUs the cluster has.

    Explained in: book/reproducibility.md
    """
    res = ray.cluster_resources()
    gpus = int(res.get("GPU", 0))
    return cluster.workers or gpus or max(1, int(res.get("CPU", 1)) // cluster.cpus_per_worker), gpus


def compute(fn: Callable) -> dict:
    """The body of one Ray task: ``fn()``, its wall time and where it ran."""
    t0 = time.perf_counter()
    result = results.to_jsonable(fn())
    device = result.get("device") if isinstance(result, dict) else None
    return {"result": result, "wall_s": time.perf_counter() - t0, "device": device,
            "pid": os.getpid(), "host": socket.gethostname()}


def run_pending(calls: list[Callable], cluster: ClusterConfig = ClusterConfig(), *,
                verbose: bool = False, callback=None, desc: str = "on ray") -> tuple[list, dict]:
    """Compute on a Ray cluster the stored results that ``calls`` would compute in-process.

    Args:
        calls: zero-argument functions, each ending in one ``results.cached`` (for example
            ``functools.partial(copying.cached_run, cfg, profile)``); each is a unit.
        cluster: ``ClusterConfig`` (address, workers, retries of a task whose worker died).
        verbose: a progress bar on the driver with units done, running and failed.
        callback: ``callback(event, info)`` on the driver, events ``"dispatch"`` (``name``,
            ``path``), ``"done"`` (also ``pid``, ``host``, ``wall_s``) and ``"failed"``
            (``error``).

    Returns:
        ``(records, stats)``: a ``results.Record`` per call (``None`` where it failed) and the
        counts ``units`` (computed and written), ``skipped`` (already stored), ``failed``
        (left for the next run), ``workers``, ``device`` and the one-line ``errors``. Calls
        with the same config in the same chapter are computed once (a config fully determines
        its result) and written under each name.

    Explained in: book/reproducibility.md
    """
    ray = import_ray()
    planned = [pending.plan(call) for call in calls]
    records = [None if isinstance(p, pending.Pending) else p for p in planned]
    groups: dict[tuple, list[int]] = {}
    for i, job in enumerate(planned):
        if isinstance(job, pending.Pending):
            groups.setdefault((str(job.path.parent), results.config_key(job.config)), []).append(i)
    stats = {"units": 0, "skipped": len(calls) - sum(map(len, groups.values())), "failed": 0,
             "workers": 0, "device": None, "errors": []}
    if not groups:  # everything is stored: no cluster needed
        return records, stats
    emit = callback or (lambda event, info: None)
    started = connect(ray, cluster)
    n, gpus = capacity(ray, cluster)
    stats.update(workers=n, device="cuda" if gpus else "cpu")
    task = ray.remote(compute).options(num_cpus=cluster.cpus_per_worker, num_gpus=1 if gpus else 0,
                                       max_retries=cluster.max_task_retries)
    queue, running = list(groups.values()), {}
    bar = tqdm(total=len(calls), initial=stats["skipped"], disable=not verbose,
               desc=f"{desc} ({n} workers)")
    try:
        while queue or running:
            while queue and len(running) < n:
                idx = queue.pop(0)
                running[task.remote(planned[idx[0]].fn)] = idx
                emit("dispatch", {"name": planned[idx[0]].name, "path": planned[idx[0]].path})
            bar.set_postfix(running=len(running), failed=stats["failed"])
            [ref], _ = ray.wait(list(running), num_returns=1)
            idx = running.pop(ref)
            first = planned[idx[0]]
            try:
                out = ray.get(ref)
            except ray.exceptions.RayError as err:  # it raised, or its retries ran out
                stats["failed"] += len(idx)
                cause = getattr(err, "cause", None) or err  # what the task raised, if it did
                line = next((ln.strip() for ln in str(cause).splitlines() if ln.strip()), "")
                line = f"{type(cause).__name__}: {line}"
                stats["errors"].append(f"{first.name}: {line}")
                emit("failed", {"name": first.name, "path": first.path, "error": line})
            else:
                for i in idx:
                    records[i] = results.save(planned[i], out["result"], wall_s=out["wall_s"],
                                              device=out["device"] or stats["device"],
                                              extra={"backend": "ray", "host": out["host"]})
                stats["units"] += len(idx)
                bar.set_postfix(running=len(running), failed=stats["failed"], refresh=False)
                bar.update(len(idx))
                emit("done", {"name": first.name, "path": first.path, "pid": out["pid"],
                              "host": out["host"], "wall_s": out["wall_s"]})
    finally:
        bar.close()
        for ref in running:  # interrupted: this driver's tasks end with it
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
    return records, stats
