"""Benchmark: the geometry of a real model (<= 0.5B params) in <= 3 min on this CPU.

Times ``geometry.measure`` (random-token and natural-text prompts, the default profile's
sample size, the bound table) for each model, plus the cached reload of the model.

Usage: .venv/bin/python benchmarks/bench_geometry.py [MODEL ...] [--profile default]
"""

import argparse
import time

from howmany import geometry, models

TARGET_S = 180.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--profile", default="default")
    args = ap.parse_args()
    cfg = geometry.GeometryConfig.for_profile(args.profile)
    for name in args.models:
        t0 = time.perf_counter()
        lm = models.load(name)
        t1 = time.perf_counter()
        rep = geometry.measure(lm, cfg)
        t2 = time.perf_counter()
        n = rep["all"]["n"]
        print(f"{name}: load {t1 - t0:.1f} s, geometry of {n} states {t2 - t1:.1f} s "
              f"({n / (t2 - t1):.0f} states/s), total {t2 - t0:.1f} s "
              f"[target <= {TARGET_S:.0f} s: {'met' if t2 - t0 <= TARGET_S else 'MISSED'}]; "
              f"r_inf = {rep['all']['r_inf']:.3g}")


if __name__ == "__main__":
    main()
