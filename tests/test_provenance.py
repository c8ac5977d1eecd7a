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


def test_the_machine_names_its_processor(monkeypatch, tmp_path):
    """Wall times from two machines compare only with their processors named."""
    rec = provenance.provenance(seed=0)["machine"]
    assert rec["cpu"] == provenance.cpu_model() and rec["cpu"].strip()
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Example CPU 9000 @ 2.0GHz\nflags\t: fpu\n")
    real_path = provenance.Path
    monkeypatch.setattr(provenance, "Path",
                        lambda p: info if p == "/proc/cpuinfo" else real_path(p))
    provenance.cpu_model.cache_clear()
    try:
        assert provenance.cpu_model() == "Example CPU 9000 @ 2.0GHz"
        info.unlink()  # no /proc/cpuinfo (macOS, Windows): the architecture instead
        provenance.cpu_model.cache_clear()
        assert provenance.cpu_model() == (provenance.platform.processor()
                                          or provenance.platform.machine())
    finally:
        provenance.cpu_model.cache_clear()
