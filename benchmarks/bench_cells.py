"""Benchmark: Monte Carlo cell volumes, points per second (target: 10^6 points in <= 5 min).

A point costs 2 d |V| flops (one row of logits), so the rate is set by the decoder's size and
the machine's GEMM speed. In one run this script measures

1. the GEMM peak of this machine (a square float32 matmul),
2. ``cells.count_cells`` on random decoders of the real models' shapes (the cost does not depend
   on the weights), as points/s and as a fraction of that peak,
3. with ``--million``: an actual run of 10^6 points on the SmolLM2-135M shape (not extrapolated),

and for every shape the time 10^6 points would take *at the measured peak*, the floor of any
exact method that computes every logit.

Usage: .venv/bin/python benchmarks/bench_cells.py [--points 16384] [--million]

Explained in: book/cells.md
"""

import argparse
import time

import torch

from howmany import cells, results
from howmany.paths import data_dir

from bench_cramming import matmul_peak  # same directory: the GEMM peak both benchmarks report

SHAPES = {"tiny (d=32, |V|=64)": (32, 64), "d=256, |V|=4096": (256, 4096),
          "SmolLM2-135M (576, 49152)": (576, 49152), "Gemma-3-270M (640, 262144)": (640, 262144)}
TARGET_S = 300.0


def rate(d: int, V: int, n: int) -> float:
    torch.manual_seed(0)
    W, support = torch.randn(V, d) / d**0.5, cells.Support(torch.randn(1000, d), "box")
    cells.count_cells(W, None, support, cells.CellsConfig(n_samples=min(n, 4096)))  # warm-up
    t = time.perf_counter()
    counts = cells.count_cells(W, None, support, cells.CellsConfig(n_samples=n))
    wall = time.perf_counter() - t
    assert counts.sum() == n
    return n / wall, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=2**14)
    ap.add_argument("--million", action="store_true", help="also run 10^6 points (SmolLM2 shape)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    peak = matmul_peak(size=2048, reps=5)
    rows = []
    print(f"torch threads: {torch.get_num_threads()}; float32 GEMM peak {peak / 1e9:.0f} GFLOP/s")
    for label, (d, V) in SHAPES.items():
        n = args.points if d * V < 1e8 else args.points // 4
        r, _ = rate(d, V, n)
        floor = 2 * d * V * 1e6 / peak
        rows.append({"shape": label, "d": d, "d_vocab": V, "points": n, "points_per_s": r,
                     "fraction_of_peak": 2 * d * V * r / peak, "million_s_extrapolated": 1e6 / r,
                     "million_s_floor_at_peak": floor})
        print(f"{label:28}: {r:9.0f} points/s = {2 * d * V * r / peak:4.0%} of peak; 10^6 points "
              f"in {1e6 / r:6.0f} s (floor at peak {floor:5.0f} s) "
              f"[target <= {TARGET_S:.0f} s: {'met' if 1e6 / r <= TARGET_S else 'MISSED'}]")
    if args.million:
        d, V = SHAPES["SmolLM2-135M (576, 49152)"]
        r, wall = rate(d, V, 10**6)
        rows.append({"shape": "SmolLM2-135M, 10^6 points run", "d": d, "d_vocab": V, "points": 10**6,
                     "points_per_s": r, "million_s_measured": wall})
        print(f"measured: 10^6 points on the SmolLM2-135M shape in {wall:.0f} s ({r:.0f} points/s) "
              f"[target <= {TARGET_S:.0f} s: {'met' if wall <= TARGET_S else 'MISSED'}]")
    out = {"gemm_peak_flop_per_s": peak, "threads": torch.get_num_threads(), "rows": rows,
           "target_s": TARGET_S}
    path = data_dir() / "cells" / f"benchmark-{results.config_key(vars(args))}.json"
    results.atomic_write_json(path, {"config": vars(args), "result": out, "provenance":
                                     results.provenance(seed=0, device="cpu", dtype="float32",
                                                        wall_s=time.perf_counter() - t_start)})
    print(path)


if __name__ == "__main__":
    main()
