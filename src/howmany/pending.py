"""Planning a computation without running it: which stored results a call would compute, and how.

Inside :func:`plan`, ``results.cached`` computes nothing. A result already in the store comes
back as its ``Record``, as usual; a result it would compute stops the call with ``Deferred``,
which carries a :class:`Pending`: the file the result goes to, its config, the zero-argument
function that computes it and what its provenance records. A backend that computes elsewhere
(``howmany.distributed`` sends the function to a Ray worker) hands the result back to
``results.save``, which writes exactly the file ``cached`` would have written. The experiment
code that calls ``cached`` is the same for every backend.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_PLANNING = contextvars.ContextVar("howmany_planning", default=False)


@dataclass(frozen=True)
class Pending:
    """A result ``results.cached`` would compute: where it goes and how it is computed."""

    name: str  # result name inside its chapter folder
    path: Path  # the JSON file ``results.save`` writes
    config: dict  # canonical config (JSON types); it fully determines the result
    fn: Callable[[], Any]  # computes the result (picklable: Ray ships it to a worker)
    meta: dict  # seed, device, dtype and profile, for the provenance


class Deferred(Exception):
    """Raised by ``results.cached`` while planning, in place of computing."""

    def __init__(self, pending: Pending):
        super().__init__(f"{pending.path} is to be computed")
        self.pending = pending


def planning() -> bool:
    """Whether this call runs inside :func:`plan` (read by ``results.cached``)."""
    return _PLANNING.get()


def plan(call: Callable[[], Any]) -> Any:
    """What ``call()``, which ends in one ``results.cached``, would do, without computing.

    Args:
        call: a zero-argument function such as ``functools.partial(cached_run, cfg, profile)``.

    Returns:
        ``call()``'s value (a ``Record``) when its result is already stored, else the
        :class:`Pending` computation.

    Explained in: book/reproducibility.md
    """
    token = _PLANNING.set(True)
    try:
        return call()
    except Deferred as deferred:
        return deferred.pending
    finally:
        _PLANNING.reset(token)
