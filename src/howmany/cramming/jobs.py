"""Several processes on one machine share a ``cram`` command: ``--jobs N`` and ``--time-limit``.

One process crams one batch of strings at a time, and on a CPU several one-thread processes
cram faster than one process with every core (``benchmarks/bench_jobs.py``). ``run_jobs`` starts ``N`` copies of the same command line (without
``--jobs``); they split the sweep's batches through their claims (``cramming.claims``), exactly
as processes started by hand would, and write the same unit files. On a CPU each copy gets an
equal share of the cores as its thread count (``OMP_NUM_THREADS``) unless that is set already;
on a GPU the copies share the device. Each copy's output goes to its own log file; the parent
shows one progress bar of finished strings.

``time_limit``: when it runs out, every copy is stopped (SIGTERM). What they finished is stored,
and each unfinished batch resumes from its last snapshot (``cramming.resume``) when the same
command runs again. Ctrl-C stops the copies the same way.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

TIMED_OUT = 124  # the exit status when the time limit stopped the run (as timeout(1) uses)


def child_argv(argv: list[str]) -> list[str]:
    """``argv`` without ``--jobs`` and ``--time-limit`` (and their values): one copy's command.

    Explained in: book/reproducibility.md
    """
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--jobs", "--time-limit"):
            skip = True
        elif not a.startswith(("--jobs=", "--time-limit=")):
            out.append(a)
    return out


def _threads(jobs: int) -> dict:
    """Thread counts for one copy: the machine's cores split evenly, unless already set."""
    if "OMP_NUM_THREADS" in os.environ:
        return {}
    n = str(max(1, (os.cpu_count() or 1) // jobs))
    return {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n}


def _stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()


def run_jobs(argv: list[str], jobs: int, *, store: Path, count_done, total: int,
             time_limit: float | None = None, log_dir: Path | None = None,
             poll_s: float = 5.0) -> int:
    """Run ``jobs`` copies of ``python -m howmany <argv>`` sharing the store ``store``.

    Args:
        argv: the command line of one copy (``child_argv``).
        count_done: ``() -> int``, strings finished so far (the progress bar polls it).
        total: strings in all (the progress bar's end).
        time_limit: seconds after which every copy is stopped (``None``: none).
        log_dir: where ``job-K.log`` go (default: a new temporary folder).

    Returns:
        0 when every copy finished, ``TIMED_OUT`` when the time limit stopped them, else the
        first non-zero exit status of a copy.

    Explained in: book/reproducibility.md
    """
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if time_limit is not None and time_limit <= 0:
        raise ValueError(f"--time-limit must be positive seconds, got {time_limit}")
    log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="howmany-jobs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **_threads(jobs), "HOWMANY_STORE": str(store)}
    print(f"{jobs} processes share the sweep; their logs: {log_dir}/job-*.log", flush=True)
    procs, logs = [], []
    t0 = time.monotonic()
    status = 0
    bar = tqdm(total=total, initial=count_done(), desc=f"cram ({jobs} processes)", unit="string")
    try:
        for k in range(jobs):
            logs.append(open(log_dir / f"job-{k}.log", "w"))
            procs.append(subprocess.Popen([sys.executable, "-m", "howmany", *argv], env=env,
                                          stdout=logs[-1], stderr=subprocess.STDOUT))
        last = t0
        while any(p.poll() is None for p in procs):
            left = None if time_limit is None else time_limit - (time.monotonic() - t0)
            time.sleep(0.2 if left is None else max(0.0, min(0.2, left)))
            if time.monotonic() - last >= poll_s:  # the store is read every poll_s seconds
                bar.update(count_done() - bar.n)
                last = time.monotonic()
            if time_limit is not None and time.monotonic() - t0 >= time_limit:
                status = TIMED_OUT
                break
    except KeyboardInterrupt:
        status = 130
    finally:
        _stop(procs)
        bar.update(count_done() - bar.n)
        bar.close()
        for f in logs:
            f.close()
    if status == 0:
        status = next((p.returncode for p in procs if p.returncode), 0)
        if status:
            print(f"a process failed (exit status {status}); see its log in {log_dir}",
                  file=sys.stderr)
    elif status == TIMED_OUT:
        print(f"time limit of {time_limit:g} s reached: {count_done()} of {total} strings are "
              "stored; the same command resumes the rest from their snapshots", file=sys.stderr)
    return status
