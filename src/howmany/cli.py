"""Command line: ``python -m howmany <command> ...``.

Commands:
  info                 versions, device, where data/, figures and the store live
  results [CHAPTER]    list stored results with their provenance
  book ACTION          the book pipeline (build / execute / notebooks), see ``howmany.bookbuild``

Each experiment module adds its own command here (``geometry``, ``cram``, ``copy``).

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import argparse
import json
import sys


def _info(args) -> int:
    from . import __version__, plotting
    from .results import _versions
    from .utils import data_dir, resolve_device

    import torch  # noqa: F401  (so its version is reported)
    import transformers  # noqa: F401

    print(json.dumps({"howmany": __version__, "versions": _versions(),
                      "device": resolve_device("auto"), "data_dir": str(data_dir()),
                      "figures_dir": str(plotting.figures_dir())}, indent=1))
    return 0


def _results(args) -> int:
    from .utils import data_dir

    base = data_dir() / args.chapter if args.chapter else data_dir()
    for path in sorted(base.rglob("*.json")):
        try:  # result records, sweep headers (config + provenance) and sweep units
            prov = json.loads(path.read_text()).get("provenance", {})
        except (json.JSONDecodeError, AttributeError) as err:
            print(f"{path.relative_to(data_dir())}  UNREADABLE ({err})")
            continue
        print(f"{path.relative_to(data_dir())}  commit={str(prov.get('git_commit'))[:8]} "
              f"device={prov.get('device')} dtype={prov.get('dtype')} "
              f"wall={prov.get('wall_time_s')}s  {prov.get('utc_time')}")
    return 0


def _geometry(args) -> int:
    from . import geometry, models

    lm = models.load(args.model, dtype=args.dtype)
    cfg = geometry.GeometryConfig.for_profile(args.profile)
    rep = geometry.measure(lm, cfg, verbose=True)
    g = rep["all"]
    print(f"{lm.name}: d = {lm.d_model}, |V| = {lm.d_vocab}, states = {g['n']} "
          f"({cfg.n_prompts} prompts x {cfg.length} tokens per source: {', '.join(rep['sources'])})")
    print(f"r_inf = {g['r_inf']:.4g} (p50/p99/p99.9 {'/'.join(f'{x:.4g}' for x in g['r_inf_pct'])}), "
          f"r_2 = {g['r_2']:.4g}, theta = {g['theta']:.3f} rad, BOS state r_inf = {rep['r_bos']}")
    print(f"{'format':6} {'convention':10} {'eps':>10} {'C_ball':>9} {'C_box':>9} {'C_cone':>9}")
    for row in rep["table"]:
        print(f"{row['format']:6} {row['convention']:10} {row['eps']:10.3g} {row['C_ball']:9.1f} "
              f"{row['C_box']:9.1f} {row['C_cone']:9.1f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    ap = argparse.ArgumentParser(prog="python -m howmany", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, device and folders").set_defaults(func=_info)
    p = sub.add_parser("results", help="list stored results in data/")
    p.add_argument("chapter", nargs="?", default=None)
    p.set_defaults(func=_results)
    from .cramming.sweep import add_cli as _add_cram_cli

    _add_cram_cli(sub)
    from .copying import add_cli as _add_copy_cli

    _add_copy_cli(sub)
    p = sub.add_parser("geometry", help="d, |V|, radius r, eps and slope bounds of a model")
    p.add_argument("model", help="smollm2-135m | gemma3-270m | tiny-llama-d32-v64-l2 | org/hub-id")
    p.add_argument("--profile", default="smoke", help="sample size: smoke (seconds) | default | full")
    p.add_argument("--dtype", default="float32")
    p.set_defaults(func=_geometry)
    p = sub.add_parser("book", help="book pipeline: build | execute | notebooks", add_help=False)
    p.set_defaults(func=None)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m howmany`` and the ``howmany`` script."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "book":  # the pipeline has its own parser
        from . import bookbuild

        return bookbuild.main(argv[1:])
    args = build_parser().parse_args(argv)
    return args.func(args)
