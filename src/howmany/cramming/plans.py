"""The sweeps the book asks for at scale, as configurations, command lines and costs.

Three plans, each a list of ``sweep.SweepConfig`` that any backend runs (in process, ``--jobs``
processes, or ``cluster.run_sweeps`` on Ray) and that resumes from what the store holds:

* ``remeasure_sweeps``: the chapter's real-model sweeps with the book's recipe, and the
  replication point under the paper's protocol (``make remeasure``);
* ``budget_sweeps``: every recipe of ``recipes.PRESETS`` on the strings of the budget curves
  (``make budget-curves``);
* ``paper_sweeps``: the paper's full cramming experiment on its hub models.

``sweep_flops`` estimates what a plan costs, so that a reader knows before starting it.

Explained in: book/cramming.md
"""

from __future__ import annotations

from dataclasses import replace

from . import recipes, sweep
from .engine import CramConfig

__all__ = ["BUDGET_CURVES", "REMEASURE", "budget_sweeps", "command_line", "paper_command",
           "paper_sweeps", "remeasure_commands", "remeasure_sweeps", "sweep_flops"]


# Sustained FLOP/s assumed for one data-centre GPU on these small batches: an assumption, not a
# measurement (a few tenths of the bf16 matmul peak of current GPUs).
ASSUMED_GPU_FLOPS = 2e14
# Hub models of the paper's Table 1, with the parameter count their names give (an estimate).
PAPER_MODELS = {"EleutherAI/pythia-160m": 160e6, "EleutherAI/pythia-410m": 410e6,
                "EleutherAI/pythia-1b": 1e9, "Qwen/Qwen2.5-0.5B": 0.5e9, "Qwen/Qwen2.5-1.5B": 1.5e9,
                "meta-llama/Llama-3.2-1B": 1e9, "google/gemma-3-270m": 270e6}


def sweep_flops(cfg: sweep.SweepConfig, n_params: float) -> float:
    """An upper estimate of a sweep's FLOPs: every attempt runs to its step cap.

    One optimiser step on a string of ``P`` positions costs about ``4 · n_params · P`` FLOPs: a
    forward pass (2 per parameter and position) and a backward pass to the prompt only (about 2
    more; the training rule of thumb, 6, also counts weight gradients, which a frozen model does
    not need). Positions: the prompt, the BOS token of the layout and the target prefix. Steps
    per string: ``grid`` runs every grid length, ``bisect`` about log2(n_max) lengths near
    n_max / 2, ``grow`` every length from 1 to n_max, each at most ``cram.max_steps`` steps.
    Verification (greedy decoding) is left out. Real runs stop earlier (success or patience).

    Explained in: book/reproducibility.md
    """
    c = cfg.cram
    total = 0.0
    for m in cfg.ms:
        p, n_max = m + (c.layout != "mem"), cfg.n_max(m)
        if "grid" in cfg.methods:
            total += sum(p + n for n in cfg.grid(m)) * c.max_steps
        if "bisect" in cfg.methods:
            total += (n_max + 1).bit_length() * (p + n_max / 2) * c.max_steps
        if "grow" in cfg.methods:  # every length, then each cold restart once at n_max
            grow = sum(p + n + c.lookahead for n in range(1, n_max + 1)) * c.max_steps
            if c.string_steps:
                grow = min(grow, c.string_steps * (p + n_max + c.lookahead))
            total += grow + c.restarts * (c.cold_steps or c.max_steps) * (p + n_max)
    return 4.0 * n_params * total * cfg.n_strings


def paper_sweeps(kinds=("random-words", "pg19")) -> list:
    """The paper's full cramming experiment as sweeps: every model of ``PAPER_MODELS``, m = 1..5,
    20 strings per m and kind, the paper's recipe (a cold start on each grid length).

    Explained in: book/reproducibility.md
    """
    return [sweep.SweepConfig.for_recipe(name, recipes.get("paper"), kind=kind, ms=(1, 2, 3, 4, 5),
                                         n_strings=20, batch_size=20, dtype="bfloat16")
            for name in PAPER_MODELS for kind in kinds]


def paper_command(address: str = "auto") -> str:
    """The one command that runs ``paper_sweeps()`` on the Ray cluster at ``address``.

    Explained in: book/reproducibility.md
    """
    return ("python -m howmany cram --models " + " ".join(PAPER_MODELS) + " --recipe paper "
            "--m 1 2 3 4 5 --strings 20 --batch 20 --kind random-words pg19 --dtype bfloat16 "
            f"--profile full --backend ray --address {address}")


# The book's real models with their parameter counts (from their names, as in PAPER_MODELS).
BOOK_MODEL_PARAMS = {"smollm2-135m": 135e6, "gemma3-270m": 270e6}
# What the book's recipe re-measures: (model, target kind, m values, prefix cap n_max_per_m),
# 16 strings per m, n_max(m) = 16 + n_max_per_m·m. Gemma-3-270M gets twice the default cap:
# with the book's recipe, its strings reached 16 + 48m at m = 1 and 2 (cramming.widen keeps
# what a sweep at the default cap finished below it).
REMEASURE = (("smollm2-135m", "random-words", (1, 2, 3, 4, 5), 48),
             ("smollm2-135m", "natural", (1, 2, 3), 48),
             ("gemma3-270m", "random-words", (1, 2, 3, 4), 96))
# The prefix cap of a sweep that names none (also the default of ``--n-max``).
CAP_DEFAULT = (sweep.SweepConfig.n_max_base, sweep.SweepConfig.n_max_per_m)
REPLICATION_GRID = 25  # the paper-protocol point: A(n) at n = 5, 10, ..., 25 (m = 1)
REHEARSAL_SCALE = 0.01  # a rehearsal's share of every step cap


def _recipe(name: str, rehearsal: bool):
    """The preset ``name``, with every step cap scaled by ``REHEARSAL_SCALE`` for a rehearsal."""
    return recipes.get(f"{name}@x{REHEARSAL_SCALE:g}" if rehearsal else name)


def remeasure_sweeps(strings: int = 16, *, rehearsal: bool = False) -> list:
    """The chapter's real-model sweeps re-measured with the book's recipe, then one replication
    point under the paper's protocol: Gemma-3-270M, m = 1, the grid n = 5..25, once with the
    authors' layout (``mem-bos``) and once with ours (``bos-mem``). Same strings and prompt seeds
    as the stored budget-limited sweeps; one batch holds all ``strings`` of an m.

    ``rehearsal``: the same sweeps cut to their first m, with every step cap scaled by
    ``REHEARSAL_SCALE`` (recipes ``book@x0.01`` and ``paper@x0.01``): every model, target
    kind and layout goes through loading, cramming and storing in minutes, so a setup fault
    shows before the hours of the real run. Its thresholds measure nothing.

    Explained in: book/cramming.md
    """
    book, paper = _recipe("book", rehearsal), _recipe("paper", rehearsal)
    out = [sweep.SweepConfig.for_recipe(model, book, kind=kind, ms=ms[:1] if rehearsal else ms,
                                        n_strings=strings, batch_size=strings, n_max_per_m=per_m)
           for model, kind, ms, per_m in REMEASURE]
    for layout in ("mem-bos", "bos-mem"):
        rec = replace(paper, cram=replace(paper.cram, layout=layout))
        out.append(sweep.SweepConfig.for_recipe("gemma3-270m", rec, ms=(1,), n_strings=strings,
                                                batch_size=strings, n_max_base=REPLICATION_GRID,
                                                n_max_per_m=0))
    return out


def command_line(cfg: sweep.SweepConfig, extra: str = "") -> str:
    """The ``python -m howmany cram`` command line that runs the recipe sweep ``cfg``; ``extra``
    is appended (e.g. ``"--dtype bfloat16"`` or a Ray backend).

    Explained in: book/cramming.md
    """
    ms = " ".join(map(str, cfg.ms))
    line = (f"python -m howmany cram {cfg.model} --recipe {cfg.recipe} --kind {cfg.kind} "
            f"--m {ms} --strings {cfg.n_strings} --batch {cfg.batch_size}")
    grid = cfg.methods == ("grid",)  # a grid's lengths and layout are the point: always named
    if grid or (cfg.n_max_base, cfg.n_max_per_m) != CAP_DEFAULT:
        line += f" --n-max {cfg.n_max_base} {cfg.n_max_per_m}"
    if grid or cfg.cram.layout != CramConfig.layout:
        line += f" --layout {cfg.cram.layout}"
    return f"{line} --profile full {extra}".rstrip()


def remeasure_commands(strings: int = 16, extra: str = "") -> list[str]:
    """The command lines of ``remeasure_sweeps()``, one per line of a script.

    Explained in: book/cramming.md
    """
    return [command_line(cfg, extra) for cfg in remeasure_sweeps(strings)]


# The budget curves' strings: SmolLM2-135M's first 8 random-word strings at m = 1 and 2 (the
# same strings and prompt seeds as its book sweeps), the default prefix cap.
BUDGET_CURVES = ("smollm2-135m", "random-words", (1, 2), 8)


def budget_sweeps(strings: int | None = None, *, rehearsal: bool = False) -> list:
    """Every recipe of ``recipes.PRESETS`` on the budget curves' strings (``BUDGET_CURVES``), one
    sweep per recipe: the folders ``budget.recipe_sweeps`` reads, so a run goes on from what is
    stored (a recipe already finished costs nothing). ``strings`` (default 8) per m, all in one
    batch; ``rehearsal`` as in ``remeasure_sweeps``.

    Explained in: book/cramming.md
    """
    model, kind, ms, n = BUDGET_CURVES
    n = strings or n
    return [sweep.SweepConfig.for_recipe(model, _recipe(name, rehearsal), kind=kind,
                                         ms=ms[:1] if rehearsal else ms, n_strings=n,
                                         batch_size=n)
            for name in recipes.PRESETS]
