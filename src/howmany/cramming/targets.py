"""Target strings for cramming: uniform random tokens, random words, natural English text.

The paper (Meyer et al. 2026, §5.1 / §7 of THEORY.md) crams PG-19 text and random strings (random
words from a word list in the authors' code). The counting bound of Cor. 4.6 is about *uniformly
random token strings*, so we also offer those. Every string is a pure function of
``(kind, seed, index)``: a sweep can be resumed and a single string recreated anywhere.

* ``random-tokens`` — i.i.d. uniform over the *real* tokens (special, added and unused ids removed).
* ``random-words``  — words drawn uniformly from a word list, joined by spaces, then tokenised.
* ``natural``       — windows of English prose that ships with CPython (stdlib docstrings), so it
  works offline; ``pg19`` loads PG-19 through ``datasets`` and needs the network.

Explained in: book/cramming.md
"""

from __future__ import annotations

import importlib
import re
import warnings
from functools import lru_cache

import numpy as np

KINDS = ("random-tokens", "random-words", "natural", "pg19")
# Kinds whose string at one length is the prefix of the same string at any longer length (their
# random draws come one after another; natural text picks its window by length).
PREFIX_STABLE = ("random-tokens", "random-words")

# Standard-library modules whose docstrings form the offline English corpus (fixed order).
_DOC_MODULES = (
    "argparse", "asyncio", "collections", "contextlib", "csv", "dataclasses", "decimal", "difflib",
    "email", "fractions", "functools", "heapq", "http.client", "inspect", "json", "logging",
    "os", "pathlib", "pickle", "random", "re", "shutil", "statistics", "string", "subprocess",
    "tarfile", "textwrap", "threading", "unittest", "urllib.request", "zipfile",
)


class TargetError(ValueError):
    """Bad arguments for a target set (unknown kind, non-positive length, missing tokenizer)."""


def real_token_ids(tokenizer=None, d_vocab: int | None = None) -> np.ndarray:
    """Ids of ordinary tokens: no special, added or ``<unused..>`` ids, and inside the embedding.

    Args:
        tokenizer: a Hugging Face tokenizer, or ``None`` for a tiny model (all ids are real).
        d_vocab: rows of the model's embedding matrix (ids at or beyond it are dropped).

    Explained in: book/cramming.md
    """
    if tokenizer is None:
        if d_vocab is None:
            raise TargetError("real_token_ids needs a tokenizer or d_vocab")
        return np.arange(d_vocab)
    n = len(tokenizer) if d_vocab is None else min(len(tokenizer), d_vocab)
    bad = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}))
    vocab = tokenizer.convert_ids_to_tokens(list(range(n)))
    unused = re.compile(r"^<(unused|reserved|extra_id|pad|mask|unk)[^>]*>$|^\[.*\]$")
    keep = [i for i, tok in enumerate(vocab) if i not in bad and tok and not unused.match(tok)]
    return np.asarray(keep, dtype=np.int64)


@lru_cache(maxsize=1)
def english_corpus() -> str:
    """English prose from CPython's own docstrings (offline, deterministic for a Python version).

    Explained in: book/cramming.md
    """
    parts = []
    warnings.simplefilter("ignore", DeprecationWarning)  # attribute access on old aliases
    for name in _DOC_MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:  # pragma: no cover - stripped-down Pythons
            continue
        docs = [mod.__doc__] + [getattr(getattr(mod, a, None), "__doc__", None) for a in sorted(dir(mod))
                                if not a.startswith("_")]
        parts += [d for d in docs if isinstance(d, str) and len(d) > 200]
    text = " ".join(dict.fromkeys(parts))  # drop repeated docstrings, keep order
    return re.sub(r"\s+", " ", text)


@lru_cache(maxsize=1)
def word_list() -> tuple[str, ...]:
    """Distinct lower-case alphabetic words (3–12 letters) of the offline English corpus.

    Explained in: book/cramming.md
    """
    words = re.findall(r"\b[a-z]{3,12}\b", english_corpus())
    return tuple(sorted(set(words)))


def make_targets(kind: str, n_strings: int, length: int, *, seed: int, tokenizer=None,
                 d_vocab: int | None = None) -> np.ndarray:
    """``n_strings`` target strings of exactly ``length`` tokens, reproducible from ``seed``.

    String ``i`` depends only on ``(kind, seed, i)``, so asking for more strings keeps the first ones.

    Args:
        kind: one of ``KINDS``.
        n_strings: number of strings (> 0).
        length: tokens per string (> 0); callers crop prefixes for shorter lengths.
        seed: base seed.
        tokenizer: needed for every kind except ``random-tokens`` on a tiny model.
        d_vocab: embedding rows (used to drop ids the model cannot embed).

    Returns:
        int64 array of shape [n_strings, length].

    Explained in: book/cramming.md
    """
    if kind not in KINDS:
        raise TargetError(f"unknown target kind {kind!r}: choose one of {', '.join(KINDS)}")
    if n_strings <= 0 or length <= 0:
        raise TargetError(f"n_strings and length must be positive, got {n_strings}, {length}")
    if kind != "random-tokens" and tokenizer is None:
        raise TargetError(f"target kind {kind!r} needs a tokenizer (tiny models: use random-tokens)")
    rows = [_one(kind, length, np.random.default_rng([seed, i]), tokenizer, d_vocab)
            for i in range(n_strings)]
    return np.stack(rows).astype(np.int64)


def _one(kind, length, rng, tokenizer, d_vocab) -> np.ndarray:
    if kind == "random-tokens":
        ids = _real_ids_cached(tokenizer, d_vocab)
        return rng.choice(ids, size=length)
    if kind == "random-words":
        words = word_list()
        text = " ".join(words[j] for j in rng.integers(0, len(words), size=2 * length + 8))
    elif kind == "natural":
        corpus = english_corpus()
        start = int(rng.integers(0, len(corpus) - 40 * length))
        start = corpus.find(" ", start) + 1  # begin at a word boundary
        text = corpus[start:start + 20 * length]
    else:
        text = _pg19_window(rng, length)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < length:
        raise TargetError(f"text too short for {length} tokens")
    return np.asarray(ids[:length])


_REAL: dict = {}


def _real_ids_cached(tokenizer, d_vocab):
    key = (id(tokenizer), d_vocab)
    if key not in _REAL:
        _REAL[key] = real_token_ids(tokenizer, d_vocab)
    return _REAL[key]


def _pg19_window(rng, length: int) -> str:  # pragma: no cover - needs the network
    try:
        import datasets
    except ImportError as err:
        raise TargetError("kind 'pg19' needs the `datasets` package and network access") from err
    ds = datasets.load_dataset("deepmind/pg19", split="test", streaming=True)
    book = next(iter(ds.skip(int(rng.integers(0, 100)))))["text"]
    start = int(rng.integers(0, max(1, len(book) - 40 * length)))
    return re.sub(r"\s+", " ", book[start:start + 20 * length])
