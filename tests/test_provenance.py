"""Provenance records the code a process started with, and calls data changes clean."""

from howmany import provenance


def test_commit_is_read_once_and_dirty_looks_at_the_code_only(monkeypatch):
    calls, head = [], ["aaaa"]

    def fake_git(*args):
        calls.append(args)
        return head[0] if args[0] == "rev-parse" else ""

    monkeypatch.setattr(provenance, "_git", fake_git)
    monkeypatch.setattr(provenance, "_CODE", None)
    first = provenance.provenance(seed=0)
    head[0] = "bbbb"  # a commit made while a long run goes on
    later = provenance.provenance(seed=0)
    assert first["git_commit"] == later["git_commit"] == "aaaa"
    assert first["git_dirty"] is False
    status = [a for a in calls if a[0] == "status"]
    assert len(status) == 1 and status[0][-3:] == ("--", "src", "pyproject.toml")
