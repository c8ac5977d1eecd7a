"""``make results BACKEND=ray``: the long computations of the ``full`` profile on a Ray cluster.

Before the chapters execute, ``on_ray`` computes on the cluster what, in-process, they would
compute one after another: the cramming chapter's sweeps (``cramming.store.book_config`` of
every model in ``BOOK_MODELS``, through ``cramming.cluster.run_sweeps``) and every copy-task
training (``copying.cluster.full_units``). Both write into the usual folders of ``data/``, so
the chapters then find their results stored and only read them; whatever else they compute
(measurements on real models, cheap experiments) runs in-process as before. Finished results
are skipped, so a rerun resumes.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

from . import distributed, results


def cram_sweeps() -> list:
    """``[(SweepConfig, folder), ...]``: the cramming chapter's sweeps of the ``full`` profile.

    Explained in: book/reproducibility.md
    """
    from .cramming import store

    root = results.store_root("full", heavy=True)
    return [(cfg, store.sweep_dir(cfg, root))
            for cfg in (store.book_config(name, "full") for name in store.BOOK_MODELS)]


def on_ray(cluster: distributed.ClusterConfig | None = None, *, verbose: bool = True,
           log=print) -> dict:
    """Compute the cramming sweeps and the copy-task trainings of ``full`` on one Ray cluster.

    Args:
        cluster: ``distributed.ClusterConfig`` (address, workers); default a local cluster.
        verbose: progress bars on the driver.
        log: where the one-line summaries go.

    Returns:
        ``{"cramming": counts, "copying": counts}`` (see ``run_sweeps`` and ``run_pending``).

    Raises:
        ImportError: Ray is not installed (the message names the extra).
        RuntimeError: some units failed even after Ray's retries (rerun to resume).

    Explained in: book/reproducibility.md
    """
    from .copying import cluster as copy_cluster
    from .cramming import cluster as cram_cluster

    ray, cluster = distributed.import_ray(), cluster or distributed.ClusterConfig()
    started = distributed.connect(ray, cluster)  # one cluster for both, joined once
    try:
        cram = cram_cluster.run_sweeps(cram_sweeps(), cluster, verbose=verbose)
        log(f"cramming sweeps on ray: {cram['units']} units computed, {cram['failed']} failed")
        _, copy = copy_cluster.run(copy_cluster.full_units(), cluster, verbose=verbose)
        log(f"copy-task trainings on ray: {copy['units']} computed, {copy['skipped']} already "
            f"stored, {copy['failed']} failed" + "".join(f"\n  {e}" for e in copy["errors"]))
    finally:
        if started:
            ray.shutdown()
    if cram["failed"] or copy["failed"]:
        raise RuntimeError(f"{cram['failed'] + copy['failed']} units failed on the cluster; "
                           "rerun the same command to resume")
    return {"cramming": cram, "copying": copy}


def before_chapters(profile: str, cluster: distributed.ClusterConfig) -> dict:
    """``book execute --backend ray``: :func:`on_ray`, for the ``full`` profile only.

    Explained in: book/reproducibility.md
    """
    if profile != "full":
        raise ValueError(f"--backend ray computes the results of the full profile, not "
                         f"{profile!r}; add --profile full")
    return on_ray(cluster)
