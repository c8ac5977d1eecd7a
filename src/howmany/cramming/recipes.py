"""Named cramming recipes: an optimiser, a schedule, an init, step caps and a threshold search.

A measured threshold is a lower bound set by the model *and* by the optimiser (Meyer et al. 2026,
§5.1: success certifies accessibility, failure does not). To see which of the two sets it, the
book runs several published recipes on the same strings and compares what each reaches per
optimisation step (its budget curve). Each preset says where its settings come from.

Explained in: book/cramming.md
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from .engine import CramConfig
from .thresholds import THRESHOLD_METHODS


@dataclass(frozen=True)
class Recipe:
    """A named way to measure thresholds: the threshold search and the ``CramConfig`` it runs."""

    name: str  # preset name (a key of PRESETS for the published ones)
    method: str = "grow"  # threshold search: "grow", "bisect" or "grid"
    cram: CramConfig = field(default_factory=CramConfig)  # optimiser, schedule, caps, restarts
    grid_step: int = 5  # "grid": lengths grid_step, 2·grid_step, ... up to the sweep's n_max
    grid_stop: int = 0  # "grid": end a string after this many consecutive failed lengths (0: never)
    base: str = ""  # a preset this one equals up to its first cold restart (``resume.continues``)

    def __post_init__(self):
        if self.method not in THRESHOLD_METHODS:
            raise ValueError(f"unknown threshold method {self.method!r}: choose one of "
                             f"{', '.join(THRESHOLD_METHODS)}")
        if self.grid_step < 1:
            raise ValueError(f"grid_step must be >= 1, got {self.grid_step}")
        if self.grid_stop < 0:
            raise ValueError(f"grid_stop must be >= 0, got {self.grid_stop}")

    def grid(self, n_max: int) -> list[int]:
        """The lengths a "grid" recipe tries for targets of up to ``n_max`` tokens."""
        return list(range(self.grid_step, int(n_max) + 1, self.grid_step)) or [int(n_max)]

    def to_dict(self) -> dict:
        return asdict(self)

    def scaled(self, factor: float) -> Recipe:
        """The same recipe with every step cap multiplied by ``factor`` (for budget curves)."""
        c = self.cram
        k = lambda v: max(1, int(round(v * factor))) if v else v  # noqa: E731
        return replace(self, cram=replace(c, max_steps=k(c.max_steps), patience=k(c.patience),
                                          string_steps=k(c.string_steps),
                                          cold_steps=k(c.cold_steps), warmup=c.warmup))


def paper() -> Recipe:
    """The paper's protocol: a cold start at each length of a grid, AdamW lr 1e-2, betas
    (0.9, 0.9), at most 3,000 steps with patience 500 (Meyer et al. 2026, §5.1, following
    Kuratov et al. 2025; settings as read in `mario-michelessa/transformers_accessibility`).

    A string's grid ends after two consecutive failed lengths: every failure runs the whole
    3,000 steps, and a cold start that fails at n and n + 5 tokens is taken to fail beyond (the
    lengths not run count as failures in A(n)). Without this, a sweep to the book's prefix cap
    of 64 tokens spends most of its steps proving failures."""
    return Recipe("paper", method="grid", grid_stop=2,
                  cram=CramConfig(lr=1e-2, betas=(0.9, 0.9), max_steps=3000, patience=500))


def kuratov() -> Recipe:
    """Kuratov et al. 2025 (`yurakuratov/hidden_capacity`): AdamW lr 1e-2, betas (0.9, 0.9), up
    to 5,000 steps with patience 2,000 on a cold start; here each cold start is one trial of a
    bisection on the target length."""
    return Recipe("kuratov", method="bisect", cram=CramConfig(lr=1e-2, betas=(0.9, 0.9),
                                                              max_steps=5000, patience=2000))


def progressive() -> Recipe:
    """Progressive Cramming (Tarasov et al., ICML 2026, `FusionBrainLab/progressive_cramming`):
    the target grows with warm starts; lr 0.1 with 100 warm-up steps and a cosine decay over the
    string's whole budget of 10,000 steps; init N(0, 0.02²); at most 1,000 steps per stage (their
    README's paper settings; their stages add tokens in steps, ours by the verified prefix)."""
    return Recipe("progressive", method="grow", cram=CramConfig(
        lr=0.1, init="fixed", init_scale=0.02, schedule="cosine", warmup=100, max_steps=1000,
        patience=1000, string_steps=10_000))


def book() -> Recipe:
    """The book's recipe: Progressive Cramming's optimiser and growth (``progressive``: lr 0.1,
    100 warm-up steps, cosine decay over 10,000 steps per string, init N(0, 0.02²), at most
    1,000 steps per length), plus one cold restart (a fresh prompt, capped at 1,000 steps) at
    the length where growth stalls, so that no threshold rests on one trajectory alone.

    Chosen from the budget curves of the cramming chapter: on SmolLM2-135M's random-word
    strings at m = 1, Progressive Cramming's settings reach by far the highest median threshold
    of the presets run there (``paper``, ``progressive``, ``budget-limited``; ``kuratov`` ran on
    the tiny model only, where it matches or beats ``book``), and the restart
    adds the guarantee that a threshold is never below what a cold start of the same recipe
    reaches at the stall. Up to that stall the run is exactly
    ``progressive``'s, so a sweep continues stored ``progressive`` runs (``resume``)."""
    return replace(progressive(), name="book", base="progressive",
                   cram=replace(progressive().cram, restarts=1, cold_steps=1000))


def budget_limited() -> Recipe:
    """The earlier budget-limited protocol of the stored 300-step sweeps: warm growth, at most
    300 steps per length, patience 100, no restart."""
    return Recipe("budget-limited", method="grow", cram=CramConfig(max_steps=300, patience=100))


PRESETS = {"paper": paper, "kuratov": kuratov, "progressive": progressive, "book": book,
           "budget-limited": budget_limited}


def get(name: str) -> Recipe:
    """The preset ``name`` (one of ``PRESETS``), or ``"<preset>@x<k>"`` for that preset with
    every step cap multiplied by ``k`` (``"book@x2"``: twice the budget; ``"paper@x0.25"``).
    A bad name raises ``ValueError`` naming the valid ones.

    Explained in: book/cramming.md
    """
    base, _, scale = name.partition("@x")
    if base not in PRESETS:
        raise ValueError(f"unknown recipe {name!r}: choose one of {', '.join(PRESETS)}, "
                         "optionally with a budget scale such as 'book@x2'")
    if not scale:
        return PRESETS[base]()
    try:
        k = float(scale)
    except ValueError:
        k = -1.0
    if not (k > 0 and k == k):
        raise ValueError(f"budget scale in {name!r} must be a positive number, e.g. 'book@x2'")
    return replace(PRESETS[base]().scaled(k), name=name)


def run(recipe: Recipe, model, bos_id, targets, m: int, *, seeds, n_max: int,
        verbose: bool = False) -> list[dict]:
    """Thresholds of ``targets`` (rows) at prompt length ``m`` measured with ``recipe``.

    Explained in: book/cramming.md
    """
    fn = THRESHOLD_METHODS[recipe.method]
    kw = (dict(grid=recipe.grid(n_max), stop=recipe.grid_stop) if recipe.method == "grid"
          else dict(n_max=n_max))
    return fn(model, bos_id, targets, m, recipe.cram, seeds=seeds, verbose=verbose, **kw)
