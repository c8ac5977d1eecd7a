"""The plans of sweeps run at scale (``cramming.plans``): each is what its command line asks
for, costs what ``sweep_flops`` adds up, and measures the strings the chapter reads."""

import json

import pytest

from howmany import cli, cramming
from howmany.cramming import budget, commands, plans, recipes, sweep

parse = cli.build_parser().parse_args


def test_paper_command_asks_for_the_paper_sweeps_and_their_cost_adds_up():
    args = cli.build_parser().parse_args(plans.paper_command().split()[3:])
    assert commands.configs_from_args(args) == plans.paper_sweeps()
    assert args.backend == "ray" and args.address == "auto"
    cfg = sweep.SweepConfig(model="x", ms=(1,), n_strings=2, n_max_base=4, n_max_per_m=6,
                            methods=("grid",), grid_step=5,
                            cram=cramming.CramConfig(max_steps=10, patience=5))
    # grid lengths 5 and 10 at m = 1: (2 + 5) + (2 + 10) positions, 10 steps, 2 strings, 4 N
    assert plans.sweep_flops(cfg, 1e6) == 4 * 1e6 * (7 + 12) * 10 * 2


def test_remeasure_commands_ask_for_the_remeasure_sweeps():
    sweeps = plans.remeasure_sweeps()
    for line, cfg in zip(plans.remeasure_commands(), sweeps, strict=True):
        args = cli.build_parser().parse_args(line.split()[3:])
        assert commands.configs_from_args(args) == [cfg]
    book = [c for c in sweeps if c.recipe == "book"]
    assert {(c.model, c.kind, c.ms, c.n_max_per_m) for c in book} == set(plans.REMEASURE)
    assert [("--n-max" in line) for line in plans.remeasure_commands()] == [
        c.recipe == "paper" or (c.n_max_base, c.n_max_per_m) != plans.CAP_DEFAULT for c in sweeps]
    assert [c.n_max(1) for c in book if c.model == "gemma3-270m"] == [112]
    paper = [c for c in sweeps if c.recipe == "paper"]
    assert sorted(c.cram.layout for c in paper) == ["bos-mem", "mem-bos"]
    assert all(c.grid(1) == [5, 10, 15, 20, 25] and c.model == "gemma3-270m" for c in paper)
    # the same strings and prompt seeds as the stored sweeps: only the recipe differs
    stored = cramming.store.book_config("smollm2-135m", "full")
    assert (book[0].seed, book[0].kind, book[0].n_max(5)) == (stored.seed, stored.kind, 256)


def test_a_remeasure_rehearsal_runs_every_sweep_at_its_first_m_with_a_hundredth_of_the_steps():
    full, rehearsal = plans.remeasure_sweeps(2), plans.remeasure_sweeps(2, rehearsal=True)
    key = lambda c: (c.model, c.kind, c.cram.layout, c.ms[0], c.seed, c.n_max(c.ms[0]))  # noqa: E731
    assert [key(c) for c in rehearsal] == [key(c) for c in full]
    assert all(len(c.ms) == 1 for c in rehearsal) and max(len(c.ms) for c in full) == 5
    for f, r in zip(full, rehearsal):
        assert r.recipe == f"{f.recipe}@x0.01" and r.methods == f.methods
        assert (r.cram.max_steps, r.cram.string_steps) == (
            max(1, round(f.cram.max_steps / 100)), round(f.cram.string_steps / 100))
    parse = cli.build_parser().parse_args
    assert commands.configs_from_args(parse(["cram", "--remeasure", "--strings", "2",
                                             "--profile", "smoke"])) == rehearsal


def test_remeasure_flag_asks_for_every_remeasure_sweep_and_refuses_a_model():
    parse = cli.build_parser().parse_args
    assert commands.configs_from_args(parse(["cram", "--remeasure"])) == plans.remeasure_sweeps()
    cfgs = commands.configs_from_args(parse(["cram", "--remeasure", "--strings", "4",
                                             "--dtype", "bfloat16"]))
    assert [c.n_strings for c in cfgs] == [4] * len(plans.remeasure_sweeps())
    assert {c.dtype for c in cfgs} == {"bfloat16"} and {c.recipe for c in cfgs} == {"book", "paper"}
    for extra in (["smollm2-135m"], ["--recipe", "book"], ["--only-m", "1"]):
        with pytest.raises(ValueError, match="--remeasure names its own"):
            commands.configs_from_args(parse(["cram", "--remeasure", *extra]))


def test_budget_curve_sweeps_run_every_recipe_as_the_chapter_reads_it():
    sweeps = plans.budget_sweeps()
    assert [c.recipe for c in sweeps] == list(recipes.PRESETS)
    stored = cramming.store.book_config("smollm2-135m", "full")
    for cfg in sweeps:  # the book sweeps' strings and prompt seeds, m = 1 and 2, one batch of 8
        assert (cfg.model, cfg.kind, cfg.ms, cfg.n_strings, cfg.batch_size) == (
            "smollm2-135m", "random-words", (1, 2), 8, 8)
        assert (cfg.seed, cfg.n_max(1), cfg.n_max(2)) == (stored.seed, stored.n_max(1),
                                                          stored.n_max(2))
        # what budget.recipe_sweeps accepts as a run of that recipe as it is defined now
        assert budget.ran_recipe(json.loads(json.dumps(cfg.to_dict())), cfg.recipe)
        assert commands.configs_from_args(parse(plans.command_line(cfg).split()[3:])) == [cfg]
    rehearsal = plans.budget_sweeps(2, rehearsal=True)
    assert [(r.recipe, r.ms, r.n_strings) for r in rehearsal] == [
        (f"{c.recipe}@x0.01", (1,), 2) for c in sweeps]


def test_budget_curves_flag_asks_for_the_budget_sweeps_alone_or_after_the_remeasurement():
    assert commands.configs_from_args(parse(["cram", "--budget-curves"])) == plans.budget_sweeps()
    both = commands.configs_from_args(parse(["cram", "--remeasure", "--budget-curves"]))
    assert both == plans.remeasure_sweeps() + plans.budget_sweeps()
    smoke = commands.configs_from_args(parse(["cram", "--budget-curves", "--strings", "2",
                                              "--profile", "smoke"]))
    assert smoke == plans.budget_sweeps(2, rehearsal=True)
    with pytest.raises(ValueError, match="--budget-curves names its own"):
        commands.configs_from_args(parse(["cram", "--budget-curves", "smollm2-135m"]))
    with pytest.raises(ValueError, match="--strings must be positive"):
        commands.configs_from_args(parse(["cram", "--budget-curves", "--strings", "0"]))


def test_a_plain_sweep_still_crams_16_strings_unless_told():
    cfgs = commands.configs_from_args(parse(["cram", "smollm2-135m"]))
    assert [c.n_strings for c in cfgs] == [16]
