"""Benchmark: one small tiny-model cramming sweep in-process and on a local Ray cluster.

Runs the same sweep (same units, seeds and batches) twice, side by side in one run: with
``sweep.run_sweep`` in this process, then with ``cramming.cluster.run_sweeps`` on a local Ray
cluster of ``--workers`` actors (one CPU each). Prints the wall times and their ratio, the Ray
cluster's start-up (``ray.init`` and the actors), and the overhead per unit: a unit's round
trip on the driver (dispatch to result) minus its compute time on the worker (median; the
maximum includes loading the model on an actor's first unit). Also checks that
both backends wrote the same unit results, and prints the 1-minute load average before and after
(the machine may be shared). Ray lowers its workers' priority by 15 nice levels by default, which on
a busy shared machine starves them; ``--worker-niceness 0`` (the default here) runs them at the
driver's priority, like the in-process run, and ``--worker-niceness 15`` shows Ray's default.

Usage: python benchmarks/bench_ray.py [--workers 2] [--strings 8] [--ms 1 2 3] [--max-steps 100]
"""

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from howmany import cramming, models
from howmany.cramming import cluster, sweep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny-llama-d32-v64-l2")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--strings", type=int, default=8)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--max-steps", type=int, default=100)
    ap.add_argument("--worker-niceness", type=int, default=0, help="Ray's default is 15")
    args = ap.parse_args()
    os.environ["RAY_worker_niceness"] = str(args.worker_niceness)  # read by the local raylet
    cfg = sweep.SweepConfig(model=args.model, kind="random-tokens", ms=tuple(args.ms),
                            n_strings=args.strings, n_max_base=2, n_max_per_m=4,
                            methods=("grow",), batch_size=args.batch,
                            cram=cramming.CramConfig(max_steps=args.max_steps,
                                                     patience=args.max_steps // 2))
    n_units = len(list(sweep.plan_units(cfg, Path(tempfile.mkdtemp()))))
    load0 = os.getloadavg()[0]
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))

    torch.set_num_threads(1)  # one CPU, like each actor
    t0 = time.perf_counter()
    sweep.run_sweep(models.load(cfg.model, device="cpu"), cfg, sweep.sweep_dir(cfg, root / "a"))
    t_in = time.perf_counter() - t0

    ray = cluster.import_ray()
    t0 = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
             logging_level="warning")
    sent, trips, marks, compute = {}, [], {}, []

    def timing(event, info):
        now = time.perf_counter()
        if event == "start":
            marks["start"] = now
        elif event == "dispatch":
            sent[(info["model"], info["unit"][1], tuple(info["unit"][2]))] = now
        elif event == "done":
            key = (info["model"], info["unit"][1], tuple(info["unit"][2]))
            trips.append(now - sent[key] - info["wall_s"])
            compute.append(info["wall_s"])

    stats = cluster.run_sweeps([(cfg, sweep.sweep_dir(cfg, root / "b"))],
                               cluster.ClusterConfig(workers=args.workers), callback=timing)
    t_ray = time.perf_counter() - t0
    t_start = marks["start"] - t0
    ray.shutdown()
    load1 = os.getloadavg()[0]

    walls = [json.loads(p.read_text())["provenance"]["wall_time_s"]
             for p in sweep.sweep_dir(cfg, root / "a").glob("m*-*-s*.json")]  # same within a unit
    read = lambda d: {p.name: json.loads(p.read_text())["result"]  # noqa: E731
                      for p in sorted(sweep.sweep_dir(cfg, d).glob("m*-*-s*.json"))}
    same = read(root / "a") == read(root / "b")
    print(f"sweep: {args.model}, m = {args.ms}, {args.strings} strings in batches of "
          f"{args.batch}: {n_units} units; {os.cpu_count()} CPUs, load average "
          f"{load0:.1f} before, {load1:.1f} after")
    print(f"{'backend':28} {'wall s':>8} {'per unit s':>11}")
    print(f"{'in-process (1 thread)':28} {t_in:8.1f} {t_in / n_units:11.2f}")
    print(f"{f'ray, {args.workers} workers, total':28} {t_ray:8.1f} {t_ray / n_units:11.2f}")
    print(f"{'ray, without start-up':28} {t_ray - t_start:8.1f} {(t_ray - t_start) / n_units:11.2f}")
    print(f"ratio in-process / ray: {t_in / t_ray:.2f} (total), {t_in / (t_ray - t_start):.2f} "
          f"(without the {t_start:.1f} s start-up of the cluster and its actors)")
    print(f"overhead per unit (round trip on the driver minus compute on the worker): median "
          f"{statistics.median(trips) * 1e3:.0f} ms, max {max(trips) * 1e3:.0f} ms (an actor's "
          f"first unit also loads the model) over {len(trips)} units; failed {stats['failed']}")
    print(f"compute per unit (median): in-process {statistics.median(walls):.2f} s, on a ray "
          f"worker {statistics.median(compute):.2f} s (worker niceness +{args.worker_niceness})")
    print(f"unit results identical to in-process: {same}")


if __name__ == "__main__":
    main()
