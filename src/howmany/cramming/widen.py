"""A wider prefix cap keeps what a narrower one found: only the strings that reached the cap run again.

A sweep tries prefixes of each string up to a cap, ``n_max(m) = n_max_base + n_max_per_m·m``
tokens. A string that reaches it is *censored*: its threshold is only known to be at least the
cap. Widening the cap makes a new sweep (the cap is part of its configuration), but with the
growing curriculum (method ``grow``) most of its work is already done:

- The loss at target length n averages over the first n tokens only, so the gradients, and the
  whole trajectory of the prompt, do not depend on how many target tokens lie beyond the cap.
- The cap enters in one place: a success may jump ahead to the longest teacher-forced prefix
  the model already gets right, and that prefix is counted up to the cap. Under a wider cap it
  may count further, but the jump only happens if greedy decoding reproduces that longer
  prefix, whose first ``n_max`` tokens are the capped one: had it succeeded, the narrower run
  would have verified its cap and stopped there, censored.

So a string that the narrower sweep finished *below* its cap (by the recipe's stopping rule,
its step budget, or a non-finite loss) ends with exactly the same result under any wider cap,
up to floating-point rounding of differently shaped products; and a run still in flight has
not reached the cap either, so its state is a state of the wider run too. :func:`inherit`
copies both into the wider sweep's folder, the finished strings and the kept snapshots of runs
in flight (``units.kept_path``), so the wider sweep goes on where the narrower one stands and
spends new work only on the censored strings and strings never run. Each copy says where it
came from: a finished string with ``inherited_from`` in its provenance; a string whose run
went on from a copied snapshot with ``resumed_from`` in its result (``origin``).

A reader of the wider sweep (:func:`completed`) also sees the strings it has not run again yet,
with the narrower sweep's lower bound: a string that crammed the whole narrower prefix holds at
least that many tokens under any cap. All this applies when the two configurations differ in nothing but the cap and in what only splits
the work (``ms``, ``n_strings``, ``batch_size``), and only to target kinds whose strings at one
length are prefixes of the strings at a longer length (``targets.PREFIX_STABLE``).

Explained in: book/cramming.md
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import results
from .targets import PREFIX_STABLE
from .units import BATCH_KEY, INFLIGHT_DIR, SPLIT_KEYS, kept_path, unit_path

# Config keys that only split the work or set the cap; every other key must agree.
FREE = (*SPLIT_KEYS, "n_max_base", "n_max_per_m")


def _same_protocol(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k not in FREE} == \
        {k: v for k, v in b.items() if k not in FREE}


def narrower_sweeps(cfg, folder: Path) -> list[tuple[object, Path]]:
    """``(config, folder)`` of the sweeps beside ``folder`` that ``cfg`` can inherit from: same
    protocol, a cap no wider at any shared m, and not ``folder`` itself; widest caps first.

    Explained in: book/cramming.md
    """
    from .sweep import SweepConfig

    folder = Path(folder)
    if cfg.kind not in PREFIX_STABLE or "grow" not in cfg.methods or not folder.parent.is_dir():
        return []
    mine, found = cfg.to_dict(), []
    for other in folder.parent.glob(f"{folder.name.rsplit('-', 1)[0]}-*"):
        head = other / "sweep.json"
        if other == folder or not head.is_file():
            continue
        try:
            ocfg = SweepConfig.from_dict(json.loads(head.read_text(encoding="utf-8"))["config"])
        except (ValueError, KeyError, TypeError):
            continue  # not a sweep header this code can read: load_sweep names it elsewhere
        shared = set(ocfg.ms) & set(cfg.ms)
        if shared and _same_protocol(ocfg.to_dict(), mine) and \
                all(ocfg.n_max(m) <= cfg.n_max(m) for m in shared):
            found.append((ocfg, other))
    return sorted(found, key=lambda f: -f[0].n_max(max(f[0].ms)))


def inherit(cfg, folder: Path, tg=None) -> int:
    """Copy into ``folder`` every ``grow`` string that a narrower sweep (``narrower_sweeps``)
    finished below its cap, and every kept snapshot of its runs in flight, that ``folder``
    lacks; returns how many strings were copied (finished or in flight).

    ``tg`` (the sweep's targets, when known) is checked against each finished string's tokens.
    Explained in: book/cramming.md
    """
    folder, copied = Path(folder), 0
    for ocfg, other in narrower_sweeps(cfg, folder):
        copied += _in_flight(cfg, folder, ocfg, other)
        for m in sorted(set(ocfg.ms) & set(cfg.ms)):
            for i in range(min(cfg.n_strings, ocfg.n_strings)):
                src, dst = unit_path(other, m, "grow", i), unit_path(folder, m, "grow", i)
                if dst.exists() or not src.is_file():
                    continue
                try:
                    u = json.loads(src.read_text(encoding="utf-8"))
                    r, target = u["result"], u["result"].get("target", [])
                except (ValueError, KeyError, TypeError):
                    continue  # unreadable: load_sweep reports it for that sweep
                if r.get("censored") or r.get("threshold", 0) >= ocfg.n_max(m):
                    continue  # reached the narrower cap: its threshold may lie beyond it
                if tg is not None and list(tg[i, :len(target)]) != list(target):
                    continue  # not the same string (another tokenizer or word list)
                results.atomic_write_json(dst, {
                    "config": {**u["config"], "n_max": cfg.n_max(m)}, "result": r,
                    "provenance": {**u["provenance"], "inherited_from": {
                        "folder": other.name, "file": src.name, "n_max": ocfg.n_max(m)}}})
                copied += 1
    return copied


def _in_flight(cfg, folder: Path, ocfg, other: Path) -> int:
    """Copy the kept snapshots of ``other``'s ``grow`` runs in flight whose strings ``folder``
    has neither finished nor begun; returns how many strings they hold."""
    copied = 0
    for src in sorted((other / INFLIGHT_DIR).glob("*.json")):
        key = BATCH_KEY.fullmatch(src.stem)
        dst = kept_path(folder, src.stem)
        if key is None or key["method"] != "grow" or int(key["m"]) not in cfg.ms or dst.exists():
            continue
        try:
            rec = json.loads(src.read_text(encoding="utf-8"))
            strings, meta = rec["meta"]["strings"], rec["meta"]
        except (ValueError, KeyError, TypeError):
            continue  # torn while it was written: the narrower sweep resumes it itself
        if meta.get("sweep") != results.config_key(ocfg) or any(
                unit_path(folder, int(key["m"]), "grow", i).exists() for i in strings):
            continue
        results.atomic_write_json(dst, {
            **rec, "meta": {**meta, "sweep": results.config_key(cfg)},
            "provenance": {**rec.get("provenance", {}), "inherited_from": {
                "folder": other.name, "file": f"{INFLIGHT_DIR}/{src.name}",
                "n_max": ocfg.n_max(int(key["m"]))}}})
        copied += len(strings)
    return copied


def origin(kept: Path) -> dict | None:
    """The ``inherited_from`` of the kept snapshot at ``kept`` (a copy made by :func:`inherit`,
    or a later snapshot of the run that went on from it), or None.

    Explained in: book/cramming.md
    """
    try:
        rec = json.loads(Path(kept).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = rec.get("provenance", {}).get("inherited_from") if isinstance(rec, dict) else None
    return found if isinstance(found, dict) else None


def completed(sweep: dict, others: list[dict]) -> dict:
    """A loaded sweep (``store.load_sweep``) with the ``grow`` strings it lacks taken from
    ``others`` of the same protocol and a cap no wider at that m, each such row marked with its
    ``folder``: the strings the wider sweep has not run again yet, at the narrower sweep's lower
    bound (a censored row), or finished since the wider sweep last inherited.

    Explained in: book/cramming.md
    """
    from .sweep import SweepConfig

    cfg = SweepConfig.from_dict(sweep["config"])
    units = {meth: {m: list(rows) for m, rows in by_m.items()} for meth, by_m in sweep["units"].items()}
    for other in others:
        ocfg = SweepConfig.from_dict(other["config"])
        if other.get("folder") == sweep.get("folder") or cfg.kind not in PREFIX_STABLE or \
                ocfg.kind != cfg.kind or not _same_protocol(ocfg.to_dict(), cfg.to_dict()):
            continue
        for m, rows in other["units"].get("grow", {}).items():
            if m not in cfg.ms or ocfg.n_max(m) > cfg.n_max(m):
                continue
            have = units.setdefault("grow", {}).setdefault(m, [])
            seen = {r["string"] for r in have}
            have += [{**r, "folder": Path(other["folder"]).name} for r in rows
                     if r["string"] not in seen and r["string"] < cfg.n_strings]
            have.sort(key=lambda r: r["string"])
    return {**sweep, "units": units}
