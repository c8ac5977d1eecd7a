"""The chapter's copy experiments: which models are trained, how, and where their results live.

Three profiles (``howmany.profiles``): ``smoke`` trains tiny models on short strings; ``full``
trains the five from-scratch copiers to the training range (curriculum, learning rate from a
measured sweep, early stop at 100 % on held-out training lengths), evaluates them on the fine
grid, and stores the results in ``data/copying/``; ``default`` reads those and trains one small
fast copier fresh. Fine-tuning a pretrained model is ``copying.finetuning``. Paper: Sec. 5.

Explained in: book/copying.md
"""

from __future__ import annotations

import time
from dataclasses import replace

from .. import profiles, results
from ..devices import resolve_device
from . import evaluation, models, range_check
from .training import CopyConfig, lr_sweep, train

ARCH_LABELS = {"nope": "NoPE", "rope": "RoPE", "alibi": "ALiBi", "hard_alibi": "hard-ALiBi",
               "lstm": "LSTM"}
SWEEP_LRS = (1e-3, 3e-3, 1e-2)  # learning rates of the sweep (full profile)
SWEEP_STEPS = 400  # steps of each sweep run
# Learning rates of a continuation's sweep (``init_from``): around where a 20,000-step cosine of
# the sweep's rates ends (a tenth of the peak), since a restart at the full peak first undoes
# part of what the parent learned.
CONTINUE_LRS = (1e-4, 3e-4, 1e-3)
# Model sizes of the full profile: transformers of width 64 and 4 heads, with the depth each
# needs to learn the training range (2 layers of hard-ALiBi or NoPE did not: see the chapter);
# the LSTM's whole memory is its state, so it gets a wider one.
FULL_MODELS = {a: models.ModelConfig(arch=a, d_model=64) for a in ARCH_LABELS}
FULL_MODELS.update({a: models.ModelConfig(arch=a, d_model=64, n_layers=4)
                    for a in ("hard_alibi", "nope")})
FULL_MODELS["lstm"] = models.ModelConfig(arch="lstm", d_model=256, n_layers=1)
FULL_CHECK = tuple(range(5, 51, 5))  # held-out lengths of the stopping rule (full profile)
WIDTHS = {"lstm": (64, 128, 256, 512), "alibi": (32, 64, 128)}  # width-vs-cliff runs (full)
# Torch threads of the width runs that need more than one: the LSTM of hidden size 512 costs
# about 3.5 times the 256 one per step (0.57 s against 0.16 s on one thread, batch 32), so it
# takes both of a 2-core machine. Threads are part of a run's key (they change the sums' order).
WIDE_THREADS = {("lstm", 512): 2}
# Shorter training ranges (full) for the copier that does not learn 5-50 within its steps: the
# LSTM trained on 5-10 and 5-20 under the same protocol tells a model that learns slowly from one
# that cannot copy, and gives it a cliff past a range it has learned.
SHORT_RANGE = {"lstm": (10, 20)}
# Deeper copiers (full): the suite's LSTM stacked two high, the same width and protocol, for the
# copier whose mistakes show it losing its place in the string (see the chapter).
DEPTHS = {"lstm": (2,)}
# Step caps of the full profile: 20,000, and twice that for hard-ALiBi, whose held-out accuracy
# was still one or two strings short at length 50 when the 20,000-step cosine had run out.
FULL_STEPS = {"hard_alibi": 40_000}


def config(profile: str, arch: str = "rope", **overrides) -> CopyConfig:
    """One from-scratch run per profile: ``smoke`` tiny, ``default`` one fast small copier,
    ``full`` trained to the training range 5–50 and evaluated on the fine grid.

    Explained in: book/copying.md
    """
    if profiles.check(profile) == "smoke":
        base = CopyConfig(model=models.ModelConfig.smoke(arch), min_len=2, max_len=8, steps=150,
                          lr=1e-2, warmup=20, ramp=100, curve_every=50, curve_lengths=(2, 5, 8),
                          curve_strings=20, stop_exact=1.0, eval_strings=20,
                          eval_lengths=evaluation.fine_grid(8, start=6, top=24, coarse=4,
                                                            train_min=2))
    elif profile == "default":  # the copier every build trains: ALiBi, width 32, lengths 5-20
        base = CopyConfig(model=models.ModelConfig(arch=arch, d_model=32), max_len=20,
                          steps=1500, lr=1e-2, warmup=50, ramp=300, curve_every=100,
                          curve_lengths=(5, 10, 15, 20), stop_exact=1.0,
                          eval_lengths=evaluation.fine_grid(20, start=15, top=100))
    else:
        base = CopyConfig(model=FULL_MODELS[arch], steps=FULL_STEPS.get(arch, 20_000),
                          ramp=2000, stop_exact=1.0, stop_repeat=3, length_power=1.0, curve_lengths=FULL_CHECK,
                          curve_strings=100,
                          eval_lengths=evaluation.fine_grid(50))
    return replace(base, **overrides)


def suite(profile: str, *, seed: int = 0) -> list[CopyConfig]:
    """The five from-scratch copiers as stored (``full``) or trained tiny (``smoke``).

    ``default`` reads the ``full`` runs, so it returns their configs.

    Explained in: book/copying.md
    """
    prof = "smoke" if profile == "smoke" else "full"
    return [config(prof, a, seed=seed) for a in ARCH_LABELS]


def run(cfg: CopyConfig, *, sweep: tuple = (), sweep_steps: int = SWEEP_STEPS,
        verbose: bool = False, model=None, stop_zero: int = 0, eval_batch: int = 50) -> dict:
    """Sweep the learning rate (if ``sweep``), train (or resume), evaluate; a JSON-able summary.

    ``stop_zero`` and ``eval_batch`` go to ``evaluation.evaluate`` (``stop_zero``: end the
    evaluation after that many consecutive lengths with no string copied; ``eval_batch``:
    strings per forward pass).

    Explained in: book/copying.md
    """
    t0 = time.perf_counter()
    swept = lr_sweep(cfg, sweep, sweep_steps, verbose=verbose) if sweep else None
    if swept:
        cfg = replace(cfg, lr=swept["best"])
    model, info = train(cfg, model=model, verbose=verbose, save_every=250)
    t1, c1 = time.perf_counter(), time.process_time()
    rows = evaluation.evaluate(model, cfg.eval_lengths, cfg.eval_strings, seed=cfg.seed,
                               batch_size=eval_batch, stop_zero=stop_zero, verbose=verbose)
    embed = getattr(model, "embed", None)  # prompt vectors of the bounds: the input embeddings
    r = float(embed.weight.detach().norm(dim=1).max()) if embed is not None else float("nan")
    return {"arch": cfg.pretrained or cfg.model.arch, "n_params": info["n_params"], "r_embed": r,
            "lr": cfg.lr, "sweep": swept, "steps": info["steps"], "curve": info["curve"],
            "device": info["device"], "train_s": info["train_s"],
            "train_cpu_s": info["train_cpu_s"], "train_call_s": t1 - t0,
            "eval_s": time.perf_counter() - t1, "eval_cpu_s": time.process_time() - c1,
            "rows": rows, "fit": fit(rows),
            **{k: info[k] for k in ("init_steps", "init_curve", "init_train_s") if k in info}}


def fit(rows: list) -> dict:
    """``evaluation.fit_cliff`` on a run's rows, with the bootstrap over its strings.

    Explained in: book/copying.md
    """
    ns = [r["n"] for r in rows]
    strings = [r.get("strings", 100) for r in rows]  # early results stored 100 per length
    return evaluation.fit_cliff(ns, [r["exact"] for r in rows], strings=strings)


def cached_run(cfg: CopyConfig, profile: str, *, name: str = "", verbose: bool = False,
               heavy: bool | None = None):
    """One from-scratch run through the results store: heavy (``data/copying``) unless ``default``
    trains it fresh; the full profile sweeps the learning rate first.

    ``heavy`` (default: the training range is the full 5-50) marks a run of the full profile
    (stored, learning rate swept); ``smoke`` never is.

    Explained in: book/copying.md
    """
    heavy = (cfg.max_len == 50 and not cfg.pretrained) if heavy is None else heavy
    full = heavy and profile != "smoke"
    sweep = (CONTINUE_LRS if cfg.init_from else SWEEP_LRS) if full else ()
    key = {**cfg.fields(), "lr": "sweep" if sweep else cfg.lr, "sweep_lrs": list(sweep),
           "sweep_steps": SWEEP_STEPS if sweep else 0}
    return results.cached(name or f"copy-{cfg.model.arch}",
                          lambda: run(cfg, sweep=sweep, verbose=verbose), key, chapter="copying",
                          profile=profile, heavy=full, seed=cfg.seed,
                          device=resolve_device(cfg.device), dtype="float32")


def width_suite(profile: str, *, seed: int = 0) -> list[CopyConfig]:
    """Width-vs-cliff runs: each architecture of ``WIDTHS`` at each of its widths (``full``),
    with the threads of ``WIDE_THREADS`` where a run needs more than one.

    Explained in: book/copying.md
    """
    prof = "smoke" if profile == "smoke" else "full"
    out = []
    for arch, widths in WIDTHS.items():
        for w in (widths[:1] if prof == "smoke" else widths):
            base = config(prof, arch, seed=seed)
            threads = WIDE_THREADS.get((arch, w), base.threads) if prof == "full" else 1
            out.append(replace(base, threads=threads,
                               model=replace(base.model, d_model=w if prof == "full"
                                             else 16 * (1 + widths.index(w)))))
    return out


def depth_suite(profile: str, *, seed: int = 0) -> list[CopyConfig]:
    """The copiers of ``DEPTHS`` stacked to each depth there, otherwise as in :func:`suite`
    (``smoke``: tiny, at the same depths).

    Explained in: book/copying.md
    """
    prof = "smoke" if profile == "smoke" else "full"
    return [replace(base, model=replace(base.model, n_layers=n))
            for arch, depths in DEPTHS.items() for n in depths
            for base in [config(prof, arch, seed=seed)]]


def short_suite(profile: str, *, seed: int = 0) -> list[CopyConfig]:
    """The copiers of ``SHORT_RANGE`` trained on each shorter range ``5..n``, ``n`` in
    ``SHORT_RANGE[arch]``, under the full protocol (check lengths every 5 letters, evaluation on
    the fine grid up to 300); ``smoke``: tiny, on 2-5 letters.

    Explained in: book/copying.md
    """
    if profiles.check(profile) == "smoke":
        return [config("smoke", a, seed=seed, max_len=5, curve_lengths=(2, 5),
                       eval_lengths=evaluation.fine_grid(5, start=4, top=12, coarse=4,
                                                         train_min=2))
                for a in SHORT_RANGE]
    return [config("full", a, seed=seed, max_len=n, curve_lengths=tuple(range(5, n + 1, 5)),
                   eval_lengths=evaluation.fine_grid(n, start=n - 5))
            for a, ns in SHORT_RANGE.items() for n in ns]


def reached_range(run: dict, *, min_len: int = 5, max_len: int = 50, target: float = 0.99) -> bool:
    """Whether a run copies at least ``target`` of the strings at every training length.

    Explained in: book/copying.md
    """
    return range_check.at_least([r for r in run["rows"] if min_len <= r["n"] <= max_len], target)


def run_name(cfg: CopyConfig, kind: str = "suite") -> str:
    """The results-store name of a run of :func:`suite` (``""``: the default ``copy-<arch>``),
    :func:`width_suite` (``copy-<arch>-w<width>``), :func:`short_suite` (``copy-<arch>-r<max>``)
    or :func:`depth_suite` (``copy-<arch>-l<layers>``).

    Explained in: book/copying.md
    """
    arch = cfg.model.arch
    return {"suite": "", "widths": f"copy-{arch}-w{cfg.model.d_model}",
            "short": f"copy-{arch}-r{cfg.max_len}", "depths": f"copy-{arch}-l{cfg.model.n_layers}"}[kind]


def suite_kind(*, widths: bool = False, short: bool = False, depths: bool = False) -> str:
    """``"suite"``, ``"widths"``, ``"short"`` or ``"depths"``: which set of from-scratch runs the
    flags name.

    Explained in: book/copying.md
    """
    if widths + short + depths > 1:
        raise ValueError("choose one of widths, short and depths")
    return "widths" if widths else "short" if short else "depths" if depths else "suite"


def suite_runs(profile: str, kind: str = "suite", *, seed: int = 0) -> list:
    """``(cfg, call)`` for every run of one kind: ``call(verbose=False)`` is its
    :func:`cached_run` under the kind's store name (shorter-range runs are heavy too).

    Explained in: book/copying.md
    """
    from functools import partial

    cfgs = {"suite": suite, "widths": width_suite, "short": short_suite,
            "depths": depth_suite}[kind](profile, seed=seed)
    return [(cfg, partial(cached_run, cfg, profile, name=run_name(cfg, kind),
                          heavy=True if kind == "short" else None)) for cfg in cfgs]


def load_suite(profile: str, *, seed: int = 0, widths: bool = False, short: bool = False,
               depths: bool = False) -> tuple[list, list]:
    """The stored (``default``) or freshly trained (``smoke``/``full``) runs of :func:`suite`
    (or of :func:`width_suite`, :func:`short_suite` or :func:`depth_suite`), each labelled, and
    the configs whose result is missing.

    Returns:
        ``(runs, missing)``: result dicts with ``label``, ``cfg`` added; missing configs.

    Explained in: book/copying.md
    """
    kind = suite_kind(widths=widths, short=short, depths=depths)
    runs, missing = [], []
    for cfg, call in suite_runs(profile, kind, seed=seed):
        try:
            run = call().result
        except results.MissingResultError:
            missing.append(cfg)
            continue
        label = ARCH_LABELS[cfg.model.arch] + {
            "suite": "", "widths": f", width {cfg.model.d_model}",
            "short": f", {cfg.min_len}–{cfg.max_len} letters",
            "depths": f", {cfg.model.n_layers} layers of width {cfg.model.d_model}"}[kind]
        runs.append({**run, "label": label, "cfg": cfg})
    return runs, missing


def stored_variants(arch: str, *, steps: int | None = None, **model_fields) -> list[dict]:
    """Stored from-scratch runs of ``arch`` whose model config has ``model_fields``
    (e.g. ``n_layers=2``) and, if given, the step cap ``steps``, read from ``data/copying/``
    whatever protocol made them.

    The chapter uses them as evidence for a choice of the full profile (a shallower model that
    did not learn the range). Each is ``run``'s dict with its ``config`` and ``provenance``.

    Explained in: book/copying.md
    """
    from ..paths import data_dir

    out = []
    for path in sorted((data_dir() / "copying").glob(f"copy-{arch}-????????.json")):
        blob = results.read_record(path)
        model = blob["config"].get("model", {})
        if steps is not None and blob["config"].get("steps") != steps:
            continue
        if model.get("arch") == arch and all(model.get(k) == v for k, v in model_fields.items()):
            out.append({**blob["result"], "config": blob["config"],
                        "provenance": blob["provenance"]})
    return out
