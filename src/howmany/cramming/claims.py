"""Work claiming for sweeps: an atomic claim file per batch, so several processes split the work.

A process about to compute a batch of a sweep creates ``<folder>/.claims/<key>.claim`` with
``O_CREAT | O_EXCL`` (atomic on POSIX file systems, NFS included since v3). Whoever creates it
owns the batch; the others skip to the next one. While the owner computes, a heartbeat thread
touches the file; a claim whose file has not been touched for ``stale_s`` seconds, or whose owner
is a process of the same host that no longer runs, is dead and is taken over (renamed away
atomically, then claimed afresh). A finished batch
removes its claim; its results are the unit files, which every process checks before claiming.

Explained in: book/cramming.md
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

STALE_S = 600.0  # a claim untouched this long belongs to a dead process (heartbeat: STALE_S / 10)


def _try_create(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        json.dump({"host": socket.gethostname(), "pid": os.getpid(), "utc": time.time()}, fh)
    return True


def _dead(path: Path, stale_s: float) -> bool:
    """A claim whose owner is gone: untouched for ``stale_s``, or a dead process of this host."""
    try:
        age = time.time() - path.stat().st_mtime
        owner = json.loads(path.read_text())
    except FileNotFoundError:
        return False
    except (OSError, ValueError):  # half-written by a process killed while claiming
        return age >= min(stale_s, 5.0)
    if age >= stale_s:
        return True
    if owner.get("host") != socket.gethostname():
        return False
    pid = int(owner.get("pid", 0))
    if pid == os.getpid():
        return True  # left behind by an interrupted run of this very process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def held(folder: Path, key: str, *, stale_s: float = STALE_S) -> bool:
    """Whether a live process (another one than the caller) holds the claim on ``key``.

    Explained in: book/cramming.md
    """
    path = Path(folder) / ".claims" / f"{key}.claim"
    return path.is_file() and not _dead(path, stale_s) and path.exists()  # not released meanwhile


def acquire(folder: Path, key: str, *, stale_s: float = STALE_S) -> Path | None:
    """Claim ``key`` in ``folder``; the claim file's path, or ``None`` if a live process holds it.

    Explained in: book/cramming.md
    """
    path = Path(folder) / ".claims" / f"{key}.claim"
    path.parent.mkdir(parents=True, exist_ok=True)
    if _try_create(path):
        return path
    if not _dead(path, stale_s):
        return None
    grave = path.with_name(f"{path.name}.dead-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, grave)  # one taker wins the rename of a dead claim
    except FileNotFoundError:
        return None
    grave.unlink(missing_ok=True)
    return path if _try_create(path) else None


class Claimer:
    """The claims one run holds in a sweep folder, kept fresh by one heartbeat thread.

    ``take(key)`` claims a batch (False when a live process holds it), ``release(key)`` gives it
    back after its units are written, ``close()`` releases everything left (also after an error)
    and clears dead claims that killed processes left behind.

    Explained in: book/cramming.md
    """

    def __init__(self, folder: Path, *, stale_s: float = STALE_S):
        self.folder, self.stale_s = Path(folder), float(stale_s)
        self.held: dict[str, Path] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(self, key: str) -> bool:
        path = acquire(self.folder, key, stale_s=self.stale_s)
        if path is None:
            return False
        with self._lock:
            self.held[key] = path
        if self._thread is None:
            self._thread = threading.Thread(target=self._beat, daemon=True)
            self._thread.start()
        return True

    def release(self, key: str) -> None:
        with self._lock:
            path = self.held.pop(key, None)
        if path is not None:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for key in list(self.held):
            self.release(key)
        for path in (self.folder / ".claims").glob("*.claim"):  # left by killed processes
            if _dead(path, self.stale_s):
                path.unlink(missing_ok=True)
        try:
            (self.folder / ".claims").rmdir()  # only when empty: no other process holds a batch
        except OSError:
            pass

    def _beat(self) -> None:
        while not self._stop.wait(self.stale_s / 10):
            with self._lock:
                paths = list(self.held.values())
            for path in paths:
                try:
                    os.utime(path)
                except FileNotFoundError:
                    pass
