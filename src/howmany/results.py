"""Run-or-load results with provenance: the store behind every number in the book.

A result is a JSON file ``<store>/<chapter>/<name>-<hash8>.json`` holding ``config``,
``result`` and ``provenance``; ``hash8`` is the first 8 hex digits of the SHA-256 of the
canonical JSON of the config, so a changed config never reads a stale result.
Writes are atomic (temporary file, fsync, rename): a killed run never leaves a torn file.

Where results go depends on the profile (see ``howmany.profiles``):

* ``smoke``   → a temporary store (``$HOWMANY_STORE`` or a per-process temp dir).
* ``default`` → heavy results are *read* from ``data/`` (missing → error naming
  ``make results``); cheap results are recomputed into the build store ``_build/results``.
* ``full``    → heavy results are computed into ``data/`` (cheap ones into the build store);
  an existing matching file is reused
  (so ``make results`` resumes) unless ``refresh=True`` or ``$HOWMANY_REFRESH=1``.

Each record's ``provenance`` (commit, versions, machine, device, dtype, seed, times, command) is
made by ``howmany.provenance``.

Inside ``pending.plan`` nothing is computed: ``cached`` hands back what it would compute, and a
backend that computes elsewhere (``howmany.distributed``) writes the result with ``save``.

Explained in: book/reproducibility.md
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable

import numpy as np

from . import profiles, safepaths
from .pending import Deferred, Pending, planning
from .paths import data_dir, repo_root
from .provenance import _versions, provenance  # noqa: F401 - re-exported


class ResultError(RuntimeError):
    """Base class: a stored result cannot be used as it is."""


class CorruptResultError(ResultError):
    """The file exists but is not a valid result file."""


class ConfigMismatchError(ResultError):
    """The file's stored config differs from the requested one."""


class MissingResultError(ResultError):
    """A heavy result is not in ``data/`` and the profile does not compute heavy results."""


@dataclass
class Record:
    """One stored result: what was asked, what came out, and how it was made."""

    name: str  # result name inside its chapter folder
    path: Path  # JSON file on disk
    config: dict  # canonical config (JSON types)
    result: Any  # JSON-typed result (dicts, lists, numbers, strings)
    provenance: dict  # commit, versions, device, dtype, seed, times
    loaded: bool  # True when read from disk, False when computed in this call


def to_jsonable(obj: Any) -> Any:
    """Turn dataclasses, NumPy arrays/scalars, tuples and paths into JSON types."""
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return to_jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def config_key(cfg: Any) -> str:
    """First 8 hex digits of SHA-256 of the canonical (sorted, compact) JSON of ``cfg``.

    >>> config_key({"b": 1, "a": 2}) == config_key({"a": 2, "b": 1})
    True

    Explained in: book/reproducibility.md
    """
    canon = json.dumps(to_jsonable(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()[:8]


def atomic_write_json(path: Path, obj: Any) -> Path:
    """Write JSON to ``path`` atomically: temp file in the same folder, fsync, ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(to_jsonable(obj), fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


_TEMP_STORE: Path | None = None


def store_root(profile: str, *, heavy: bool) -> Path:
    """The folder results of ``profile`` are written to (see the module docstring)."""
    global _TEMP_STORE
    prof = profiles.get(profile)
    if os.environ.get("HOWMANY_STORE"):
        return Path(os.environ["HOWMANY_STORE"])
    if prof.temporary_store:
        if _TEMP_STORE is None:
            _TEMP_STORE = Path(tempfile.mkdtemp(prefix="howmany-smoke-"))
        return _TEMP_STORE
    if heavy:  # only heavy results are committed; cheap ones are rebuilt every time
        return data_dir()
    root = repo_root()
    return (root if root is not None else Path.cwd()) / "_build" / "results"


HOW = "delete it and regenerate it with `make results` (heavy) or by rerunning its chapter"


def read_record(path: Path, *, keys=("config", "result", "provenance"), expect: dict | None = None,
                how: str = HOW) -> dict:
    """The one validated reader of a stored JSON file (result, sweep header, sweep unit).

    Args:
        path: the file.
        keys: top-level keys the file must hold; ``"provenance"`` must be a dict.
        expect: ``{key: value}`` that the file's ``config`` must agree with (for example the
            ``m``, method and string a sweep unit's file name promises).
        how: what to do about a bad file (which command regenerates it).

    Returns:
        The parsed JSON object.

    Raises:
        MissingResultError: the file does not exist.
        CorruptResultError: unreadable, truncated, not an object, or a key missing or mistyped.
        ConfigMismatchError: the stored config disagrees with ``expect``.

    Explained in: book/reproducibility.md
    """
    path = Path(path)
    if not path.is_file():
        raise MissingResultError(f"{path} is missing; {how}")
    try:
        blob = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as err:
        raise CorruptResultError(f"{path} is not valid JSON (truncated or damaged: "
                                 f"{str(err).splitlines()[0]}); {how}") from err
    if not isinstance(blob, dict):
        raise CorruptResultError(f"{path} holds a {type(blob).__name__}, not a result object; {how}")
    if missing := [k for k in keys if k not in blob]:
        raise CorruptResultError(f"{path} has no {', '.join(map(repr, missing))}; {how}")
    if expect and not isinstance(blob.get("config"), dict):
        raise CorruptResultError(f"{path}: 'config' is not an object; {how}")
    if "provenance" in keys and not isinstance(blob["provenance"], dict):
        raise CorruptResultError(f"{path}: 'provenance' is not a provenance record; {how}")
    for k, v in (expect or {}).items():
        got = blob.get("config", {}).get(k, "<absent>")
        if got != v:
            raise ConfigMismatchError(f"{path} records {k}={got!r} but belongs to {k}={v!r} "
                                      f"(edited or misplaced); {how}")
    return blob


def load(path: Path, cfg: Any = None) -> Record:
    """Read a result file; raise a clear error if it is corrupt or made with another config."""
    path = Path(path)
    blob = read_record(path)
    config, result, prov = blob["config"], blob["result"], blob["provenance"]
    if cfg is not None and config != to_jsonable(cfg):
        raise ConfigMismatchError(f"{path} was made with a different config than requested; {HOW}")
    name = path.stem.rsplit("-", 1)[0]
    return Record(name, path, config, result, prov, loaded=True)


def cached(
    name: str,
    fn: Callable[[], Any],
    cfg: Any,
    *,
    chapter: str,
    profile: str,
    heavy: bool = False,
    seed: int | None = None,
    device: str | None = None,
    dtype: str | None = None,
    refresh: bool | None = None,
) -> Record:
    """Run ``fn()`` or load its stored result, keyed by ``config_key(cfg)``.

    Args:
        name: result name, e.g. ``"sweep-smollm2"``.
        fn: zero-argument callable returning a JSON-able value (dict, dataclass, list).
        cfg: the config that fully determines the result (dataclass or dict).
        chapter: folder under the store, usually the chapter stem.
        profile: ``smoke``/``default``/``full``.
        heavy: hours-long result, committed to ``data/`` and only computed in ``full``.
        seed, device, dtype: recorded in the provenance (taken from ``cfg`` when omitted).
        refresh: recompute even when a matching file exists (default ``$HOWMANY_REFRESH``).

    Returns:
        A ``Record``; ``record.result`` has the same JSON types whether computed or loaded.

    Explained in: book/reproducibility.md
    """
    prof = profiles.get(profile)
    config = to_jsonable(cfg)
    root = store_root(profile, heavy=heavy)
    path = safepaths.inside(root, safepaths.component(chapter), f"{safepaths.component(name)}-"
                            f"{config_key(config)}.json")
    if refresh is None:
        refresh = os.environ.get("HOWMANY_REFRESH", "0") in ("1", "true", "yes")
    may_compute = prof.compute_heavy or not heavy
    reuse = heavy or prof.name == "full"  # cheap results recompute in every smoke/default run
    if path.exists() and reuse and not (refresh and may_compute):
        return load(path, config)
    if not may_compute:
        raise MissingResultError(
            f"missing heavy result {path} (chapter {chapter!r}, result {name!r}, config "
            f"{config_key(config)}); compute it with `make results` (profile 'full'), "
            f"or run this chapter with PROFILE='smoke' for a tiny version"
        )
    get = config.get if isinstance(config, dict) else (lambda k: None)
    job = Pending(name, path, config, fn, {"seed": seed if seed is not None else get("seed"),
                                           "device": device or get("device"),
                                           "dtype": dtype or get("dtype"), "profile": prof.name})
    if planning():  # another backend computes it (howmany.pending)
        raise Deferred(job)
    t0 = time.perf_counter()
    result = fn()
    return save(job, result, wall_s=time.perf_counter() - t0)


def save(job: Pending, result: Any, *, wall_s: float, device: str | None = None,
         extra: dict | None = None) -> Record:
    """Write the file ``cached`` writes for ``job``, atomically; ``device`` (where it ran)
    replaces the planned one, ``extra`` adds provenance fields.

    Explained in: book/reproducibility.md
    """
    m, result = job.meta, to_jsonable(result)
    prov = {**provenance(seed=m["seed"], device=device or m["device"], dtype=m["dtype"],
                         wall_s=wall_s), "profile": m["profile"], **(extra or {})}
    atomic_write_json(job.path, {"config": job.config, "result": result, "provenance": prov})
    return Record(job.name, job.path, job.config, result, prov, loaded=False)
