"""Benchmark: Monte Carlo cell volumes, points per second (target: 10^6 points in <= 5 min).

A point costs 2 d |V| flops (one row of logits), so the rate depends on the decoder size:
we time ``cells.count_cells`` on random decoders of the real models' shapes (no weights needed)
and on a tiny model, in fp32 and with the bf16 screen, and extrapolate to 10^6 points.

Usage: .venv/bin/python benchmarks/bench_cells.py [--points 16384]
"""

import argparse
import time

import torch

from howmany import cells

SHAPES = {"tiny (d=32, |V|=64)": (32, 64), "d=256, |V|=4096": (256, 4096),
          "SmolLM2-135M (576, 49152)": (576, 49152), "Gemma-3-270M (640, 262144)": (640, 262144)}
TARGET_S = 300.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=2**14)
    ap.add_argument("--dtypes", nargs="*", default=["float32", "bfloat16"])
    args = ap.parse_args()
    print(f"torch threads: {torch.get_num_threads()}")
    for label, (d, V) in SHAPES.items():
        torch.manual_seed(0)
        W, support = torch.randn(V, d) / d**0.5, cells.Support(torch.randn(1000, d), "box")
        for dt in args.dtypes:
            n = args.points if d * V < 1e8 else args.points // 4
            cfg = cells.CellsConfig(n_samples=n, screen_dtype=dt)
            t = time.perf_counter()
            cells.count_cells(W, None, support, cfg)
            rate = n / (time.perf_counter() - t)
            print(f"{label:28} {dt:9}: {rate:10.0f} points/s, {2 * d * V * rate / 1e9:6.1f} GFLOP/s, "
                  f"10^6 points in {1e6 / rate:8.0f} s "
                  f"[target <= {TARGET_S:.0f} s: {'met' if 1e6 / rate <= TARGET_S else 'MISSED'}]")


if __name__ == "__main__":
    main()
