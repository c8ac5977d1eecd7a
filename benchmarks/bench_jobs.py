"""Benchmark: one cramming sweep run by one process with every core, then by ``--jobs N``.

The same command line (same units, seeds and batches) runs twice, side by side in one run, each
into its own temporary store: first as one process whose torch uses all ``--cores`` threads,
then as ``--jobs N`` processes with ``cores / N`` threads each (``cramming.jobs``). Prints both
wall times (start-up and model loading included, as a user sees them), their ratio, the strings
each stored, and the 1-minute load average before and after (the machine may be shared). The
two runs' thresholds can differ in the last bits where the thread counts differ, so they are
counted, not compared.

Usage: python benchmarks/bench_jobs.py [--model smollm2-135m] [--jobs 2] [--cores 2]
       [--strings 4] [--max-steps 60]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd, store: Path, threads: int) -> tuple[float, int]:
    env = {**os.environ, "HOWMANY_STORE": str(store), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads), "TQDM_DISABLE": "1"}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "howmany", *cmd], env=env, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return wall, len(list(store.rglob("m*-grow-s*.json")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny-llama-d32-v64-l2")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--strings", type=int, default=4)
    ap.add_argument("--max-steps", type=int, default=60)
    args = ap.parse_args()
    kind = "random-tokens" if args.model.startswith("tiny") else "random-words"
    cmd = ["cram", args.model, "--kind", kind, "--m", "1", "2", "--strings", str(args.strings),
           "--batch", "1", "--n-max", "4", "4", "--max-steps", str(args.max_steps),
           "--patience", str(args.max_steps // 2), "--methods", "grow", "--profile", "full"]
    root = Path(tempfile.mkdtemp(prefix="bench-jobs-"))
    load0 = os.getloadavg()[0]
    one, n_one = run(cmd, root / "one", args.cores)
    # each copy gets cores / jobs threads, as --jobs gives it on a machine of --cores cores
    many, n_many = run([*cmd, "--jobs", str(args.jobs)], root / "jobs", max(1, args.cores // args.jobs))
    print(json.dumps({
        "model": args.model, "strings": 2 * args.strings, "cores": args.cores,
        "one_process_s": round(one, 1), "jobs": args.jobs, "jobs_s": round(many, 1),
        "speedup": round(one / many, 2), "stored": {"one": n_one, "jobs": n_many},
        "load_avg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)]}, indent=1))


if __name__ == "__main__":
    main()
