"""A damaged store is named, never read as numbers; names stay inside their store; claims split work.

Every case here was reproduced on the code before the validated readers: each test fails there
(silently wrong numbers, a bare JSONDecodeError/KeyError, or a file written outside the store).
"""

import json
import os
import socket
import time

import pytest
import torch

from howmany import checks, cramming, results, safepaths
from howmany.cramming import claims

CFG = cramming.sweep.SweepConfig(model="smollm2-135m", kind="random-tokens", ms=(1, 2),
                                 n_strings=2, n_max_base=2, n_max_per_m=1, methods=("grow",),
                                 batch_size=2, cram=cramming.CramConfig(max_steps=20, patience=10))


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return cramming.scaling.tiny_lm(d_model=32, d_vocab=64)


@pytest.fixture(scope="module")
def done_sweep(lm, tmp_path_factory):
    """A finished tiny sweep (4 units), copied afresh for each test by ``sweep``."""
    folder = cramming.sweep.sweep_dir(CFG, tmp_path_factory.mktemp("done"))
    cramming.sweep.run_sweep(lm, CFG, folder)
    return folder


@pytest.fixture
def sweep(done_sweep, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))
    folder = tmp_path / "cramming" / done_sweep.name
    shutil.copytree(done_sweep, folder)
    return folder


def _edit(path, fn):
    blob = json.loads(path.read_text())
    fn(blob)
    path.write_text(json.dumps(blob))


def test_sound_sweep_reads_back(sweep):
    s = cramming.store.load_sweep(sweep)
    assert {m: len(r) for m, r in s["units"]["grow"].items()} == {1: 2, 2: 2}
    assert "smollm2-135m" in cramming.store.book_sweeps("default")


def test_sweep_without_header_is_an_error_not_a_dropped_model(sweep):
    (sweep / "sweep.json").unlink()
    with pytest.raises(results.CorruptResultError, match=r"sweep\.json is missing \(4 unit files"):
        cramming.store.book_sweeps("default")


@pytest.mark.parametrize("field,value", [("m", 2), ("string", 1), ("n_max", 99)])
def test_unit_whose_config_disagrees_with_its_file_is_refused(sweep, field, value):
    _edit(sweep / "m1-grow-s000.json", lambda u: u["config"].__setitem__(field, value))
    with pytest.raises(results.ConfigMismatchError, match=f"m1-grow-s000.json records {field}="):
        cramming.store.load_sweep(sweep)


def test_unit_outside_the_sweep_and_edited_header_are_refused(sweep):
    (sweep / "m1-grow-s000.json").rename(sweep / "m7-grow-s000.json")
    with pytest.raises(results.ConfigMismatchError, match="m=7.*not part of the sweep"):
        cramming.store.load_sweep(sweep)
    (sweep / "m7-grow-s000.json").rename(sweep / "m1-grow-s000.json")
    _edit(sweep / "sweep.json", lambda h: h["config"].__setitem__("n_strings", 1))
    with pytest.raises(results.ConfigMismatchError, match="another configuration than its folder"):
        cramming.store.load_sweep(sweep)


@pytest.mark.parametrize("damage,message", [
    (lambda p: p.write_text(p.read_text()[:40]), "is not valid JSON"),
    (lambda p: _edit(p, lambda u: u.pop("provenance")), "has no 'provenance'"),
    (lambda p: _edit(p, lambda u: u["result"].pop("threshold")), "lacks status/threshold"),
    (lambda p: p.write_text("[1, 2]"), "holds a list"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00"), "is not valid JSON"),
])
def test_each_corrupt_unit_names_its_file_and_the_command(sweep, damage, message):
    damage(sweep / "m2-grow-s001.json")
    with pytest.raises(results.CorruptResultError) as err:
        cramming.store.load_sweep(sweep)
    assert "m2-grow-s001.json" in str(err.value) and message in str(err.value)
    assert "python -m howmany cram" in str(err.value) and "\n" not in str(err.value)


def test_stored_bounds_goes_through_the_validated_reader(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_DATA", str(tmp_path))
    geo = tmp_path / "geometry"
    geo.mkdir()
    bad = geo / "geometry-smollm2-135m-0000abcd.json"
    bad.write_text('{"config": {}, "res')
    with pytest.raises(results.CorruptResultError, match="geometry-smollm2-135m-0000abcd.json"):
        cramming.store.stored_bounds("smollm2-135m")
    results.atomic_write_json(bad, {"config": {}, "result": {"table": [
        {"format": "fp16", "convention": "absolute", "C_ball": 1.0}]}, "provenance": {}})
    assert cramming.store.stored_bounds("smollm2-135m")["absolute"]["C_ball"] == 1.0
    assert "r" not in cramming.store.stored_bounds("smollm2-135m")["absolute"]  # not stored: absent
    results.atomic_write_json(bad, {"config": {}, "result": {"all": {"r_inf": 2.5}, "table": [
        {"format": "fp16", "convention": "absolute", "C_ball": 1.0}]}, "provenance": {}})
    assert cramming.store.stored_bounds("smollm2-135m")["absolute"]["r"] == 2.5


def test_results_load_names_missing_and_damaged_files(tmp_path):
    with pytest.raises(results.MissingResultError, match="x-1.json is missing"):
        results.load(tmp_path / "x-1.json")
    (tmp_path / "y-1.json").write_text('{"config": {}, "result": 1}')
    with pytest.raises(results.CorruptResultError, match="has no 'provenance'"):
        results.load(tmp_path / "y-1.json")


# --- names that become paths ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["../../escape", "/etc/passwd", "..", "a/../../b", ".hidden",
                                  "EleutherAI/pythia-14m", "nul\x00byte"])
def test_names_become_one_component_inside_the_store(tmp_path, name):
    comp = safepaths.component(name)
    assert "/" not in comp and comp not in ("", ".", "..") and not comp.startswith(".")
    assert safepaths.inside(tmp_path, comp).resolve().parent == tmp_path.resolve()
    assert safepaths.component("smollm2-135m") == "smollm2-135m"  # safe names keep their folder
    assert safepaths.component("a/b") != safepaths.component("a_b")  # no two names share one


def test_inside_refuses_escapes(tmp_path):
    with pytest.raises(safepaths.UnsafePathError, match="outside"):
        safepaths.inside(tmp_path, "..", "x")
    with pytest.raises(safepaths.UnsafePathError):
        safepaths.inside(tmp_path, "/tmp/elsewhere")


def test_result_and_sweep_names_with_dots_stay_in_the_store(lm, tmp_path, monkeypatch):
    store = tmp_path / "store"
    monkeypatch.setenv("HOWMANY_STORE", str(store))
    rec = results.cached("../../../escape", lambda: 1, {"a": 1}, chapter="../up", profile="smoke")
    assert rec.path.resolve().is_relative_to(store.resolve())
    bad = cramming.sweep.SweepConfig(model="../../escape", kind="random-tokens", ms=(1,),
                                     n_strings=1, n_max_base=1, n_max_per_m=1, methods=("grow",),
                                     batch_size=1, cram=cramming.CramConfig(max_steps=5, patience=5))
    folder = cramming.sweep.run_sweep(lm, bad, cramming.sweep.sweep_dir(bad, store))
    assert folder.resolve().parent == (store / "cramming").resolve()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


# --- validation before any work --------------------------------------------------------------

@pytest.mark.parametrize("kw,match", [
    (dict(seed=-1), "seed must be a non-negative integer"),
    (dict(dtype="float64"), "unknown dtype"),
    (dict(n_max_base=0, n_max_per_m=0), "n_max"),
    (dict(batch_size=0), "batch_size must be positive, got ms=.*batch_size=0"),
])
def test_sweep_config_refuses_bad_fields(kw, match):
    with pytest.raises(ValueError, match=match):
        cramming.sweep.SweepConfig(model="x", **kw)


@pytest.mark.parametrize("kw", [dict(max_steps=0), dict(patience=-5), dict(lr=-0.01),
                                dict(lr=float("nan")), dict(init_scale=0.0)])
def test_cram_config_refuses_bad_fields(kw):
    with pytest.raises(ValueError):
        cramming.CramConfig(**kw)


def test_context_is_checked_before_anything_is_written(lm, tmp_path):
    ctx = checks.context_length(lm.model)
    assert ctx == 256
    for ms, base in [((300,), 2), ((1,), 400)]:  # prompt beyond the context; target beyond it
        cfg = cramming.sweep.SweepConfig(model="tiny", kind="random-tokens", ms=ms, n_strings=1,
                                         n_max_base=base, n_max_per_m=0, methods=("grow",),
                                         batch_size=1)
        with pytest.raises(checks.ContextError, match="positions; the model has 256"):
            cramming.sweep.run_sweep(lm, cfg, tmp_path / "s")
        assert not (tmp_path / "s").exists()


def test_failed_run_leaves_no_header_only_folder(lm, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("failed in the first batch")

    monkeypatch.setitem(cramming.THRESHOLD_METHODS, "grow", boom)
    folder = cramming.sweep.sweep_dir(CFG, tmp_path)
    with pytest.raises(RuntimeError, match="first batch"):
        cramming.sweep.run_sweep(lm, CFG, folder)
    assert not folder.exists()


def test_device_and_dtype_checks():
    assert checks.device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(checks.DeviceError, match="no CUDA GPU is visible"):
            checks.device("cuda")
    with pytest.raises(checks.DeviceError, match="unknown device"):
        checks.device("tpu")
    with pytest.raises(ValueError, match="unknown dtype"):
        checks.dtype("float64")


# --- non-finite values -------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(init_scale=1e38),  # huge but finite: overflows in the model
                                dict(init="fixed", init_scale=1e6, precision="float16")])
def test_overflow_without_nan_is_reported_as_nan(lm, kw):
    cfg = cramming.CramConfig(max_steps=5, patience=5, **kw)
    r = cramming.cram(lm.model, lm.bos_id, [[3, 4]], 1, cfg, seeds=[0])[0]
    assert r["status"] == "nan" and r["n_verified"] == 0


# --- work claims ---------------------------------------------------------------------------------

def _claim_file(folder, key, **owner):
    path = folder / ".claims" / f"{key}.claim"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getppid(), **owner}))
    return path


def test_a_live_claim_is_respected_and_a_dead_one_taken(tmp_path):
    _claim_file(tmp_path, "a")  # the test runner's parent: alive
    assert claims.acquire(tmp_path, "a", stale_s=60) is None
    _claim_file(tmp_path, "b", pid=2**22 + 12345)  # no such process on this host
    assert claims.acquire(tmp_path, "b", stale_s=60) is not None
    old = _claim_file(tmp_path, "c", host="another-machine")
    assert claims.acquire(tmp_path, "c", stale_s=60) is None  # fresh claim of another machine
    os.utime(old, (time.time() - 120, time.time() - 120))
    assert claims.acquire(tmp_path, "c", stale_s=60) is not None  # stale: taken over


def test_sweep_skips_batches_another_process_holds(lm, tmp_path):
    folder = cramming.sweep.sweep_dir(CFG, tmp_path)
    folder.mkdir(parents=True)
    _claim_file(folder, "grow-m2-c0-b2")  # a live process computes m = 2
    cramming.sweep.run_sweep(lm, CFG, folder)
    assert sorted(p.name for p in folder.glob("m*.json")) == ["m1-grow-s000.json",
                                                              "m1-grow-s001.json"]
    assert [p.name for p in (folder / ".claims").iterdir()] == ["grow-m2-c0-b2.claim"]
