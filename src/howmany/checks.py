"""Checks at the edge: dtype, device, seed and the model's context, refused before any work.

Config dataclasses and the command line call these so that both refuse the same inputs, with one
line naming the value and what is allowed, before a model loads or a file is written.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

DTYPES = ("float32", "bfloat16", "float16")


class DeviceError(ValueError):
    """A device that does not exist on this machine."""


class ContextError(ValueError):
    """A prompt plus target longer than the model's context window."""


def dtype(name: str) -> str:
    """``name`` if it is a compute dtype the package supports, else ``ValueError``.

    Explained in: book/reproducibility.md
    """
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}: choose one of {', '.join(DTYPES)}")
    return name


def seed(value) -> int:
    """``value`` if it is a non-negative integer seed, else ``ValueError``.

    Explained in: book/reproducibility.md
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"seed must be a non-negative integer, got {value!r}")
    return value


def device(name: str | None) -> str:
    """Resolve ``"auto"`` and check that the device exists here (``DeviceError`` otherwise).

    Explained in: book/reproducibility.md
    """
    import torch

    if name in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    kind, _, index = str(name).partition(":")
    if kind == "cpu" and not index:
        return "cpu"
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise DeviceError(f"device {name!r} asked for, but no CUDA GPU is visible; use "
                              "--device cpu (or auto)")
        if index and not (index.isdigit() and int(index) < count):
            raise DeviceError(f"device {name!r} does not exist: {count} GPU(s) visible")
        return str(name)
    if kind == "mps" and not index:
        if not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
            raise DeviceError("device 'mps' asked for, but no Apple GPU is available")
        return "mps"
    raise DeviceError(f"unknown device {name!r}: use auto, cpu, cuda, cuda:<i> or mps")


def context_length(model) -> int | None:
    """Positions the model was built for (``max_position_embeddings``), or ``None`` if unknown.

    Explained in: book/reproducibility.md
    """
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        if isinstance(getattr(cfg, key, None), int):
            return int(getattr(cfg, key))
    return None


def fits_context(model, m: int, n: int, *, extra: int = 1, what: str = "") -> None:
    """Refuse ``m`` prompt vectors + ``n`` target tokens (+ ``extra`` fixed tokens) beyond the context.

    Raises:
        ContextError: ``m + n + extra`` exceeds the model's context length.

    Explained in: book/reproducibility.md
    """
    ctx = context_length(model)
    if ctx is not None and m + n + extra > ctx:
        raise ContextError(f"{what}prompt length m={m} plus target length n={n} (+{extra} fixed "
                           f"token) needs {m + n + extra} positions; the model has {ctx}")
