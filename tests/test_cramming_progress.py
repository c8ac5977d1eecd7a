"""Where a sweep stands, read from its files: finished strings, batches in flight (from the
folder's kept snapshot or this machine's), whether a live process holds them, and the command
line that prints it."""

import json
import os
import socket
import statistics

import numpy as np
import pytest
import torch

from howmany import cli, cramming
from howmany.cramming import progress, recipes, resume


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return cramming.scaling.tiny_lm(d_model=32, d_vocab=64, seed=0)


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """A two-string tiny sweep of the book's recipe (a hundredth of its steps), m = 1 and 2,
    one string a batch, in the test's store; snapshots after every step."""
    monkeypatch.setenv("HOWMANY_PARTIAL", str(tmp_path / "partial"))
    monkeypatch.setattr(cramming.sweep, "SNAPSHOT_S", 0.0)
    monkeypatch.setattr(cramming.sweep, "sweep_targets",
                        lambda cfg, lm_: np.random.default_rng(4).integers(2, 64, size=(2, 24)))
    cfg = cramming.sweep.SweepConfig.for_recipe(
        "tiny", recipes.get("book@x0.025"), kind="random-tokens", ms=(1, 2), n_strings=2,
        n_max_base=0, n_max_per_m=12, batch_size=1)
    return cfg, cramming.sweep.sweep_dir(cfg, tmp_path / "store")


def _kill_after(monkeypatch, n: int):
    real, seen = resume.keep, []

    def killing(path, snap, meta, **kw):
        real(path, snap, meta, **kw)
        seen.append(kw["wall_s"])
        if len(seen) == n:
            raise KeyboardInterrupt

    monkeypatch.setattr(resume, "keep", killing)
    return real


def test_a_killed_sweep_shows_its_finished_strings_and_its_paused_batch(lm, sweep, monkeypatch):
    cfg, folder = sweep
    cramming.sweep.run_sweep(lm, cfg, folder, only_ms=[1], batch_size=1)  # m = 1 finished
    real = _kill_after(monkeypatch, 40)
    with pytest.raises(KeyboardInterrupt):
        cramming.sweep.run_sweep(lm, cfg, folder, only_ms=[2])
    monkeypatch.setattr(resume, "keep", real)
    p = progress.progress(folder)
    assert (p.model, p.recipe, p.n_strings, p.done) == ("tiny", "book@x0.025", 2, False)
    one, two = p.cells
    stored = [json.loads((folder / f"m1-grow-s00{i}.json").read_text())["result"]
              for i in range(2)]
    assert one.finished == tuple(r["threshold"] for r in stored) and not one.in_flight
    assert one.median == statistics.median(one.finished) and one.not_started == 0
    assert one.censored == sum(r["censored"] for r in stored) and one.n_max == 12
    assert two.finished == () and two.not_started == 1 and two.n_max == 24
    (fl,) = two.in_flight
    kept = json.loads(next((folder / cramming.sweep.INFLIGHT_DIR).glob("*.json")).read_text())
    out = kept["snapshot"][0]["out"]
    assert fl.strings == (0,) and fl.steps == (40,) == (out["steps"],)
    assert fl.verified == (out["n_verified"],) and fl.source == "kept" and not fl.running
    assert fl.wall_s == pytest.approx(kept["wall_s"]) and fl.wall_s > 0
    assert fl.step_cap == cfg.cram.string_steps == 250  # the book's 10,000 steps, scaled

    (folder / cramming.sweep.INFLIGHT_DIR / "grow-m2-c0-b1.json").unlink()
    (fl,) = progress.progress(folder).cells[1].in_flight  # this machine's snapshot instead
    assert fl.source == "local" and fl.steps == (40,)

    claim = folder / ".claims" / "grow-m2-c0-b1.claim"  # another live process holds it
    claim.parent.mkdir(exist_ok=True)
    claim.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getppid()}))
    assert progress.progress(folder).cells[1].in_flight[0].running
    claim.write_text(json.dumps({"host": socket.gethostname(), "pid": 2 ** 22 + 1}))
    assert not progress.progress(folder).cells[1].in_flight[0].running  # its process is gone
    claim.unlink()

    cramming.sweep.run_sweep(lm, cfg, folder)  # resumes and finishes
    p = progress.progress(folder)
    assert p.done and not any(c.in_flight for c in p.cells)
    assert [len(c.finished) for c in p.cells] == [2, 2]


def test_a_cold_start_search_in_flight_counts_the_steps_of_its_rounds(lm, sweep, monkeypatch):
    cfg, folder = sweep
    cfg = cramming.sweep.SweepConfig.for_recipe(
        "tiny", recipes.get("paper@x0.02"), kind="random-tokens", ms=(1,), n_strings=2,
        n_max_base=0, n_max_per_m=12, batch_size=2)
    folder = cramming.sweep.sweep_dir(cfg, folder.parent.parent)
    _kill_after(monkeypatch, 90)  # in its second round
    with pytest.raises(KeyboardInterrupt):
        cramming.sweep.run_sweep(lm, cfg, folder)
    rec = json.loads(next((folder / cramming.sweep.INFLIGHT_DIR).glob("*.json")).read_text())
    journal = rec["snapshot"]
    (fl,) = progress.progress(folder).cells[0].in_flight
    assert fl.rounds == len(journal["rounds"]) > 0
    grid = cfg.grid(1)
    for i in range(2):
        want = sum(r[i]["steps"] for r in journal["rounds"])
        want += journal["inflight"][i]["out"]["steps"] if journal["inflight"] else 0
        assert fl.steps[i] == want
        assert fl.verified[i] == max((grid[k] for k, r in enumerate(journal["rounds"])
                                      if r[i]["status"] == "solved"), default=0)


def test_a_grid_journal_leaves_out_the_strings_whose_grid_has_ended():
    """After two failed lengths in a row a string's grid ends: the later rounds and the round in
    flight hold only the others, and their steps are theirs."""
    ok, no = {"status": "solved", "steps": 10}, {"status": "failed", "steps": 30}
    journal = {"rounds": [[ok, no, ok], [ok, no, no], [no, no], [ok]],
               "inflight": [{"out": {"steps": 7}}]}
    steps, best = progress.journal_rows(journal, 3, grid=[5, 10, 15, 20, 25], stop=2)
    # string 1 ends after round 1, string 2 after round 2, string 0 goes on to round 4
    assert steps == [10 + 10 + 30 + 10 + 7, 30 + 30, 10 + 30 + 30]
    assert best == [20, 0, 5]
    bisect = {"rounds": [[ok, no], [no, no]], "inflight": [{"out": {"steps": 1}}] * 2}
    assert progress.journal_rows(bisect, 2) == ([10 + 30 + 1, 30 + 30 + 1], [0, 0])


def test_the_command_prints_every_sweep_of_the_store(lm, sweep, monkeypatch, capsys):
    cfg, folder = sweep
    monkeypatch.setenv("HOWMANY_STORE", str(folder.parent.parent))
    assert cli.main(["cram", "--progress", "--profile", "full"]) == 0
    assert capsys.readouterr().out.strip() == "no sweep in this store"
    cramming.sweep.run_sweep(lm, cfg, folder, only_ms=[1])
    _kill_after(monkeypatch, 40)
    with pytest.raises(KeyboardInterrupt):
        cramming.sweep.run_sweep(lm, cfg, folder, only_ms=[2])
    assert cli.main(["cram", "--progress", "--profile", "full"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{folder.name}: tiny, random-tokens, recipe book@x0.025, float32"
    assert lines[1].startswith("  grow m=1: 2/2 finished (median ")
    assert lines[2] == "  grow m=2: 0/2 finished, 1 not started"
    assert lines[3].startswith("    in flight, paused: string 0 at ")
    assert " tokens after 40 of at most 250 steps (" in lines[3]
    assert cli.main(["cram", "other-model", "--progress", "--profile", "full"]) == 0
    assert capsys.readouterr().out.strip() == "no sweep in this store for other-model"


def test_a_snapshot_whose_batch_partly_finished_elsewhere_shows_only_the_rest(lm, sweep,
                                                                             monkeypatch):
    cfg, folder = sweep
    whole = cramming.sweep.sweep_dir(cfg, folder.parent.parent.parent / "whole")
    cramming.sweep.run_sweep(lm, cfg, whole, only_ms=[1])
    real = _kill_after(monkeypatch, 30)
    with pytest.raises(KeyboardInterrupt):  # strings 0 and 1 together, killed
        cramming.sweep.run_sweep(lm, cfg, folder, only_ms=[1], batch_size=2)
    monkeypatch.setattr(resume, "keep", real)
    (fl,) = progress.progress(folder).cells[0].in_flight
    assert fl.strings == (0, 1) and fl.steps == (30, 30)
    done = folder / "m1-grow-s000.json"  # string 0 finished by a run in batches of one
    done.write_bytes((whole / done.name).read_bytes())
    kept = json.loads((folder / cramming.sweep.INFLIGHT_DIR / "grow-m1-c0-b2.json").read_text())
    cell = progress.progress(folder).cells[0]
    (fl,) = cell.in_flight
    assert fl.strings == (1,) and fl.verified == (kept["snapshot"][1]["out"]["n_verified"],)
    assert cell.finished == (json.loads(done.read_text())["result"]["threshold"],)
    assert cell.not_started == 0
