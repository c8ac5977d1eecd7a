"""The lab: encoding a reader's text, cramming it live, the coloured decode, the bound beside it."""

import math
import re

import pytest
import torch

from howmany import bounds, lab, models

TINY = "tiny-llama-d32-v64-l2"


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return models.load(TINY, device="cpu")


def test_tiny_models_read_upper_case_characters(lm):
    ids = lab.encode(lm, "Hi, you~", 64)
    assert lab.pieces(lm, ids) == list("HI, YOU?")  # lower case folds up, unknown becomes "?"
    assert min(ids) >= 2 and max(ids) < lm.d_vocab  # ids 0 and 1 are BOS and EOS
    assert len(lab.encode(lm, "ABCDEFG", 3)) == 3


def test_overrides_skip_none_and_profiles_differ():
    cfg = lab.LabConfig.for_profile("default", gpu=False)
    assert cfg.with_overrides(text=None, m=2).m == 2 and cfg.with_overrides(text=None).text == cfg.text
    assert lab.LabConfig.for_profile("smoke").model.startswith("tiny-")
    gpu = lab.LabConfig.for_profile("default", gpu=True)
    assert len(gpu.text) > len(cfg.text) and gpu.steps > cfg.steps
    assert cfg.cram_config().string_steps == cfg.steps  # the book's recipe, capped by the budget


def _states(html: str) -> list[str]:
    return re.findall(r'title="token \d+: (\w+)"', html)


def test_decode_html_colours_matches_first_failure_and_the_rest():
    out = lab.decode_html(["a", "b", "<c>", "d"], ["a", "b", "x", "d"])
    assert _states(out) == ["match", "match", "fail", "after"]
    assert "&lt;c&gt;" in out and "<c>" not in out  # tokens are escaped
    assert _states(lab.decode_html(["a", "b"], ["a", "b"])) == ["match", "match"]
    assert _states(lab.decode_html(["a", "b"], [])) == ["fail", "after"]  # nothing verified


def test_cram_text_verifies_a_prefix_and_reports_every_step(lm):
    cfg = lab.LabConfig(model=TINY, text="ABAB", steps=120, device="cpu")
    seen = []
    run = lab.cram_text(lm, cfg, callback=lambda step, info: seen.append(step))
    assert seen == list(range(1, run["steps"] + 1)) and run["steps"] <= cfg.steps
    assert len(run["history"]["loss"]) == run["steps"]
    assert 1 <= run["threshold"] <= len(run["target"]) == 4
    # the decode from the verified prompt reproduces at least the verified prefix
    assert run["decoded"][: run["threshold"]] == run["target"][: run["threshold"]]
    assert max(run["history"]["n_verified"]) == run["threshold"]


def test_cram_text_rejects_an_empty_text(lm):
    with pytest.raises(ValueError, match="no tokens"):
        lab.cram_text(lm, lab.LabConfig(model=TINY, text=""), callback=None)


def test_bound_uses_the_relative_precision_without_a_stored_geometry(lm):
    b = lab.bound_for(lm, 2)
    c = lm.d_model * math.log(1 + 2**12) / math.log(lm.d_vocab)
    assert b["convention"] == "relative" and b["C"] == pytest.approx(c)
    assert b["C"] == pytest.approx(float(bounds.slope_bound(lm.d_model, 7.0, 7.0 * 2**-11, lm.d_vocab)))
    assert b["n_bound"] == pytest.approx(2 * c)


def test_bound_reads_the_geometry_chapter_for_stored_models():
    from howmany.cramming.store import stored_bounds

    fake = models.LM(None, None, "smollm2-135m", 576, 49152, 0, "float32", "cpu", "gguf")
    stored = stored_bounds("smollm2-135m")
    if not stored:
        pytest.skip("no stored geometry result for smollm2-135m")
    b = lab.bound_for(fake, 1)
    assert b["C"] == pytest.approx(stored["absolute"]["C_ball"]) and "absolute" in b["convention"]


def test_unprompted_baseline_counts_what_the_model_writes_from_bos_alone(lm):
    first = lab.unprompted(lm, [2, 3, 4, 5, 6])["decoded"]  # whatever it writes on its own
    own = lab.unprompted(lm, first)
    assert own["decoded"] == first and own["prefix"] == len(first)
    other = [(first[0] + 1) % lm.d_vocab] + first[1:]  # differs at the first token
    assert lab.unprompted(lm, other)["prefix"] == 0
    with pytest.raises(ValueError, match="no tokens"):
        lab.unprompted(lm, [])
