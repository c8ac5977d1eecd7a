"""Cram your own text: the lab's run, its live view, the coloured decode and the bound beside it.

One soft prompt of ``m`` vectors is optimised with the book's cramming recipe
(``cramming.recipes.book``: warm growing curriculum, verified success, cold restarts where growth
stalls; Meyer et al. 2026 §5.1, protocol of Kuratov et al. 2025), within a total step budget,
until a frozen model greedily reproduces as much of a reader's text as it can. The longest verified
prefix is the text's *threshold*; Corollary 4.6 bounds it by about ``C m`` tokens, with the slope
bound ``C`` from the geometry chapter's measured radius (THEORY.md §6–7).

The lab returns values only; its live view, a ``cram`` callback that draws while it runs, is
``plotting.LiveView``.

Explained in: book/lab.md
"""

from __future__ import annotations

import html
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from . import bounds, cramming, profiles
from .cramming import recipes
from .devices import resolve_device

SHORT_TEXT = ("A soft prompt is a handful of vectors that a frozen language model reads as if they "
              "were words. How many words can a single vector hold?")
LONG_TEXT = SHORT_TEXT + (" The paper behind this book counts the outputs a transformer can "
                          "reach: the number of distinct prompts it can tell apart limits how "
                          "many different texts it can be steered to write, and a prompt of m "
                          "vectors can carry at most a number of tokens that grows linearly in m.")
EPS_REL = 2.0**-11  # fp16 unit roundoff: the relative precision eps = r u of the authors' code


@dataclass(frozen=True)
class LabConfig:
    """What the lab crams, with which model and budget."""

    model: str = "smollm2-135m"  # offline name, tiny-model name or hub id (online)
    text: str = SHORT_TEXT  # the text to cram
    m: int = 1  # soft-prompt vectors
    steps: int = 300  # budget: optimisation steps for the whole text (the recipe's string_steps)
    max_tokens: int = 64  # the text is cut to this many tokens
    seed: int = 0  # seed of the prompt's initialisation
    device: str = "auto"  # "auto": a GPU when one is visible, else the CPU

    @classmethod
    def for_profile(cls, profile: str, *, gpu: bool | None = None) -> LabConfig:
        """smoke: a tiny random model (seconds); default: SmolLM2-135M on a short text; on a GPU
        (or ``full``) the longer text with a larger budget."""
        gpu = resolve_device("auto") == "cuda" if gpu is None else gpu
        big = cls(text=LONG_TEXT, steps=3000, max_tokens=128)
        return profiles.pick(profile, smoke=cls(model="tiny-llama-d32-v64-l2", text="HELLO, WORLD",
                                                steps=150, max_tokens=12),
                             default=big if gpu else cls(), full=big)

    def with_overrides(self, **changes) -> LabConfig:
        """A copy with every change that is not ``None`` applied (the chapter's parameters)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def cram_config(self) -> cramming.CramConfig:
        """The book's cramming recipe (``recipes.book``) with this lab's total step budget."""
        return replace(recipes.book().cram, string_steps=int(self.steps))

    def to_dict(self) -> dict:
        return asdict(self)


def encode(lm, text: str, max_tokens: int) -> list[int]:
    """Token ids of ``text`` (at most ``max_tokens``). Tiny models have no tokenizer: they read
    upper-case characters, one id per character (``2 + code - 32``, unknown ones as ``?``)."""
    if lm.tokenizer is not None:
        return list(lm.tokenizer(text, add_special_tokens=False).input_ids[:max_tokens])
    n = lm.d_vocab - 2  # ids 0 and 1 are BOS and EOS
    return [2 + (ord(c) - 32 if 0 <= ord(c) - 32 < n else ord("?") - 32) for c in text.upper()][:max_tokens]


def pieces(lm, ids) -> list[str]:
    """The text of each token id (what :func:`encode` maps back to, token by token)."""
    if lm.tokenizer is not None:
        return [lm.tokenizer.decode([int(i)]) for i in ids]
    return [chr(32 + int(i) - 2) if int(i) >= 2 else "<s>" for i in ids]


def cram_text(lm, cfg: LabConfig, *, callback=None) -> dict:
    """Cram ``cfg.text`` into ``cfg.m`` vectors and decode greedily from the verified prompt.

    Args:
        lm: a ``models.LM`` (its device is the compute device).
        cfg: the lab's :class:`LabConfig`.
        callback: passed to ``cramming.cram`` (``callback(step, info)`` after every step).

    Returns:
        Plain values: ``target`` and ``decoded`` ids [n], ``threshold`` (longest verified prefix,
        tokens), ``steps``, ``status``, ``wall_s``, ``cpu_s`` (this process's CPU time),
        ``device`` and the per-step ``history``
        (``loss``, ``n_verified``, ``length``).

    Explained in: book/lab.md
    """
    target = encode(lm, cfg.text, cfg.max_tokens)
    if not target:
        raise ValueError("the text has no tokens: type something to cram")
    ccfg, hist = cfg.cram_config(), {"loss": [], "n_verified": [], "length": []}

    def record(step, info):
        for key in hist:
            hist[key].append(float(info[key][0]) if key in info else float("nan"))
        if callback is not None:
            callback(step, info)

    t0, c0 = time.perf_counter(), time.process_time()
    out = cramming.cram(lm.model, lm.bos_id, np.asarray([target]), cfg.m, ccfg, seeds=[cfg.seed],
                        grow=True, callback=record)[0]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    decoded = []
    if out["prompt"] is not None:  # the verified prompt, rounded as for verification
        dtype = next(lm.model.parameters()).dtype
        prompt = cramming.round_prompt(out["prompt"][None], ccfg.precision, dtype)
        decoded = cramming.greedy_generate(lm.model, lm.bos_id, ccfg.layout, prompt,
                                           len(target))[0].tolist()
    return {"target": target, "decoded": decoded, "threshold": int(out["n_verified"]),
            "steps": int(out["steps"]), "status": out["status"], "wall_s": wall, "cpu_s": cpu,
            "device": str(lm.device), "history": hist}


def unprompted(lm, target: list[int]) -> dict:
    """The baseline of no soft prompt: greedy decoding from the fixed token alone (BOS).

    Returns:
        ``decoded`` ids (as many as ``target``) and ``prefix``, how many leading tokens of
        ``target`` the model writes on its own: what a crammed prompt adds is beyond it.

    Explained in: book/lab.md
    """
    import torch

    if not target:
        raise ValueError("the text has no tokens: type something to cram")
    emb = lm.model.get_input_embeddings()
    with torch.no_grad():
        bos = emb(torch.tensor([[int(lm.bos_id)]], device=emb.weight.device))
    decoded = cramming.greedy_generate(lm.model, lm.bos_id, "mem", bos, len(target))[0].tolist()
    agree = np.cumprod(np.asarray(decoded) == np.asarray(target))
    return {"decoded": decoded, "prefix": int(agree.sum())}


def bound_for(lm, m: int) -> dict:
    """Corollary 4.6 beside a threshold: the slope bound ``C`` and the ``C m`` tokens it allows.

    For a model measured in the geometry chapter, ``C`` is its stored fp16 ball bound with the
    paper's absolute precision; otherwise (tiny or hub models) the relative precision
    ``eps = r 2^-11``, where the radius cancels: ``C = d ln(1 + 2^12) / ln|V|``.

    Explained in: book/lab.md
    """
    geo = cramming.store.stored_bounds(lm.name) if "/" not in lm.name else {}
    if geo:
        c, conv = geo["absolute"]["C_ball"], "absolute, measured radius"
    else:
        c, conv = float(bounds.slope_bound(lm.d_model, 1.0, EPS_REL, lm.d_vocab)), "relative"
    return {"C": float(c), "convention": conv, "n_bound": float(c) * m}


_COLOURS = {"match": "#cfe2ff", "fail": "#ffb366", "after": "#eeeeee"}  # blue / orange / grey


def _show(piece: str) -> str:
    return html.escape(piece.replace("\n", "↵").replace("\t", "→")) or "&nbsp;"


def decode_html(target: list[str], decoded: list[str]) -> str:
    """Token-by-token HTML of a decode against its target.

    Each column shows the target token above the decoded one. Decoded tokens are blue while
    they match, orange at the first mismatch and grey after it (with no decode, the first
    target token is the failure). Inline styles only, so it renders the same in the book and
    on Colab.

    Explained in: book/lab.md
    """
    first = next((i for i, (t, d) in enumerate(zip(target, decoded)) if t != d), len(decoded))
    cols = []
    for i, tgt in enumerate(target):
        state = "match" if i < first else "fail" if i == first else "after"
        got = decoded[i] if i < len(decoded) else ""
        border = "2px solid #b35900" if state == "fail" else "1px solid #ccc"
        cols.append(
            f'<span style="display:inline-flex;flex-direction:column;margin:2px 1px;'
            f'font-family:monospace;white-space:pre" title="token {i + 1}: {state}">'
            f'<span style="color:#666;font-size:0.8em;padding:0 2px">{_show(tgt)}</span>'
            f'<span style="background:{_COLOURS[state]};border:{border};padding:0 2px">'
            f'{_show(got)}</span></span>')
    legend = " ".join(f'<span style="background:{c};padding:0 4px;font-family:monospace">{k}</span>'
                      for k, c in (("matches", _COLOURS["match"]), ("first failure", _COLOURS["fail"]),
                                   ("after it", _COLOURS["after"])))
    return (f'<div style="line-height:1.2"><div style="margin-bottom:4px;font-size:0.85em">'
            f'top: the text, bottom: the greedy decode · {legend}</div>{"".join(cols)}</div>')
