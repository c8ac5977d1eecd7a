"""Execution profiles: how much work a chapter does and where its results go.

Three profiles, chosen once per run through the papermill parameter ``PROFILE``:

* ``smoke``   — CI and ``make test``: CPU, tiny models, every chapter under 2 minutes;
  results go to a temporary store, never into ``data/``.
* ``default`` — ``make book``: CPU, the whole book under 30 minutes on 2 cores; real
  offline models allowed; heavy sweeps are *read* from ``data/`` (committed results).
* ``full``    — ``make results``: GPU or long CPU runs; computes the heavy results missing
  from ``data/`` (resumable) and writes them there.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

PROFILES = ("smoke", "default", "full")


class ProfileError(ValueError):
    """An unknown profile name."""


@dataclass(frozen=True)
class Profile:
    """What a profile allows; read by ``results.cached`` and experiment configs."""

    name: str  # one of PROFILES
    real_models: bool  # may load pretrained (offline GGUF or hub) models
    compute_heavy: bool  # heavy results are computed (True) or read from data/ (False)
    temporary_store: bool  # results go to a throw-away directory instead of data/
    max_chapter_minutes: float  # budget a chapter should respect on a 2-core CPU


_TABLE = {
    "smoke": Profile("smoke", False, True, True, 2.0),
    "default": Profile("default", True, False, False, 5.0),
    "full": Profile("full", True, True, False, float("inf")),
}


def check(name: str) -> str:
    """Return ``name`` if it is a valid profile, else raise a one-line ``ProfileError``.

    >>> check("smoke")
    'smoke'

    Explained in: book/reproducibility.md
    """
    if name not in _TABLE:
        raise ProfileError(
            f"unknown profile {name!r}: valid profiles are {', '.join(PROFILES)}"
        )
    return name


def get(name: str) -> Profile:
    """The ``Profile`` record for ``name`` (validated).

    Explained in: book/reproducibility.md
    """
    return _TABLE[check(name)]


def pick(profile: str, *, smoke: T, default: T, full: T | None = None) -> T:
    """Choose a value per profile; ``full`` falls back to ``default`` when omitted.

    >>> pick("smoke", smoke=100, default=10_000)
    100

    Explained in: book/reproducibility.md
    """
    check(profile)
    if profile == "smoke":
        return smoke
    if profile == "full" and full is not None:
        return full
    return default
