"""Names that become paths: sanitised to one harmless component and kept inside their store.

Model names (hub ids such as ``org/model``), result names and chapter names are turned into
folder and file names. A name carrying ``/``, ``..`` or other special characters must never write
outside the store it belongs to; :func:`component` maps any name to one safe path component and
:func:`inside` refuses a path that would resolve outside its root.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

_SAFE = re.compile(r"[^A-Za-z0-9._+=-]")


class UnsafePathError(ValueError):
    """A name would resolve to a path outside the store it belongs to."""


def component(name: str) -> str:
    """One safe path component for ``name``: unchanged when already safe, else sanitised + tagged.

    Characters outside ``[A-Za-z0-9._+=-]`` and runs of dots become ``_``, outer dots and
    underscores are dropped, and a short
    hash of the original name is appended so that two different names never share a folder.

    >>> component("smollm2-135m")
    'smollm2-135m'
    >>> component("../../etc")
    'etc~74ccf3c5'

    Explained in: book/reproducibility.md
    """
    name = str(name)
    clean = re.sub(r"\.{2,}", "_", _SAFE.sub("_", name)).strip("._")
    if clean == name and name not in ("", ".", ".."):
        return name
    tag = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{clean or 'x'}~{tag}"


def inside(root: Path, *parts: str) -> Path:
    """``root / parts...``, refused when it resolves outside ``root`` (``..``, absolute parts, links).

    Raises:
        UnsafePathError: the joined path leaves ``root``.

    Explained in: book/reproducibility.md
    """
    root = Path(root)
    path = root.joinpath(*parts)
    base = root.resolve()
    if not path.resolve().is_relative_to(base) or path.resolve() == base and parts:
        raise UnsafePathError(f"{'/'.join(map(str, parts))!r} would be written outside {root}")
    return path
