"""Cramming: how many tokens a frozen LM can be made to reproduce from m soft-prompt vectors.

The paper's first experiment (Meyer et al. 2026, §5.1, Fig. 3, Table 1), one concept a module:

* ``engine``: ``CramConfig`` and ``cram``, the batched optimiser;
* ``decoding``: verified success, greedy decoding from the rounded prompt;
* ``starts``: fresh prompts (the init) and cold restarts of a stalled row;
* ``resume``: snapshots of runs in flight, and runs that go on from a stored one;
* ``thresholds``: threshold searches (warm growth with cold restarts, bisection, a fixed grid);
* ``recipes``: named presets (the paper's, Kuratov et al.'s, Progressive Cramming's, the book's);
* ``targets``: the strings to cram (random tokens, random words, natural text);
* ``accessibility``: A(n), n50 with bootstrap CIs and the slope of n50 against m;
* ``sweep``: resumable sweeps over m into the results store;
* ``units``: a sweep on disk, its folder and one file per unit of work;
* ``widen``: a wider prefix cap keeps the strings a narrower one finished below it;
* ``store``: the stored sweeps the book reads (load, summarise, find, merge, bounds);
* ``progress``: where a stored sweep stands (finished, in flight, not started);
* ``commands``: the ``python -m howmany cram`` command line;
* ``budget``: budget curves, the threshold against the steps spent, per recipe;
* ``replication``: A(n) under the paper's own protocol with both layouts, beside the book's recipe;
* ``scaling``: the slope against d and |V| on tiny random transformers;
* ``plans``: the sweeps the book asks for at scale (re-measurement, budget curves, the paper's),
  with their command lines and costs;
* ``cluster``: the same sweeps on a Ray cluster (optional extra ``distributed``).

``from howmany import cramming`` gives the engine's names directly (``cramming.cram``,
``cramming.CramConfig``) and every part as ``cramming.<module>``.

Explained in: book/cramming.md
"""

from . import accessibility, decoding, starts, engine, resume, targets, thresholds  # noqa: I001
from . import recipes, units, widen, sweep, store, progress, commands, scaling, budget, plans
from . import replication, cluster
from .engine import (LAYOUTS, CramConfig, cram, embedding_std, greedy_generate, init_prompts,
                     round_prompt, verify)
from .thresholds import (THRESHOLD_METHODS, threshold_at, thresholds_bisect, thresholds_grid,
                         thresholds_grow)

__all__ = ["accessibility", "decoding", "starts", "engine", "resume", "targets", "thresholds",
           "recipes", "units", "widen", "sweep", "store", "progress", "commands", "scaling", "budget",
           "plans", "replication", "cluster", "LAYOUTS", "CramConfig", "cram", "embedding_std", "greedy_generate",
           "init_prompts", "round_prompt", "verify", "THRESHOLD_METHODS", "threshold_at",
           "thresholds_bisect", "thresholds_grid", "thresholds_grow"]
