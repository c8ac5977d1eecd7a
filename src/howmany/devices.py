"""Which device a computation runs on: a visible GPU when asked for ``"auto"``, else the CPU.

Results record the device they were computed on (``results`` provenance), so the name this
returns is also what a reader sees next to every stored number.

Explained in: book/reproducibility.md
"""

from __future__ import annotations


def resolve_device(device: str | None = "auto") -> str:
    """``"auto"``/``None`` → ``"cuda"`` when a GPU is visible, else ``"cpu"``; others pass through.

    Explained in: book/reproducibility.md
    """
    if device not in (None, "auto"):
        return str(device)
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # the theory chapters run without torch
        return "cpu"
