"""Build times are measured and stored, and the README's table is generated from them."""

import json

import pytest

from howmany import buildtimes


def test_readme_table_matches_the_stored_build(repo_root, monkeypatch):
    """Fails when README.md was not regenerated after data/build/times.json changed."""
    monkeypatch.delenv("HOWMANY_DATA", raising=False)
    stored = buildtimes.load(repo_root / "data" / "build" / "times.json")
    assert buildtimes.readme_table(repo_root / "README.md") == buildtimes.table_markdown(stored), (
        "README's table is stale: run `python -m howmany book readme-times`")


def test_write_load_and_regenerate(tmp_path):
    path = buildtimes.write({"packing": 14.96, "cramming": 711.0}, profile="default",
                            jupyter_book_s=40.0, total_s=770.5, path=tmp_path / "t.json")
    rec = json.loads(path.read_text())
    assert rec["result"]["chapters_s"] == {"packing": 15.0, "cramming": 711.0}
    assert rec["result"]["total_s"] == 770.5 and rec["provenance"]["utc_time"]
    assert {"cpu", "cores", "memory_gb", "gpu"} <= set(rec["result"]["machine"])
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{buildtimes.START}\nold\n{buildtimes.END}\nrest\n")
    assert buildtimes.update_readme(readme, rec) and not buildtimes.update_readme(readme, rec)
    table = buildtimes.readme_table(readme)
    assert "| chapter `cramming` | 11 min 51 s |" in table and "12 min 50 s" in table
    assert readme.read_text().endswith("rest\n")


@pytest.mark.parametrize("secs, text", [(0.4, "0 s"), (59.6, "1 min 0 s"), (1781, "29 min 41 s")])
def test_durations_read_like_the_readme(secs, text):
    assert buildtimes.fmt_duration(secs) == text


def test_chapter_seconds_is_none_without_a_stored_build(tmp_path):
    assert buildtimes.chapter_seconds("cramming", tmp_path / "none.json") is None


def test_the_chapter_gets_an_html_table_with_every_step(tmp_path):
    path = buildtimes.write({"packing": 14.96, "cramming": 711.0}, profile="default",
                            jupyter_book_s=40.0, total_s=770.5, path=tmp_path / "t.json")
    html = buildtimes.report(json.loads(path.read_text())).data
    assert html.count("<tr>") == 1 + 2 + 2  # header, two chapters, HTML step and total
    assert "<td>chapter packing</td><td>15 s</td>" in html and "<b>12 min 50 s</b>" in html
    assert "|" not in html and "**" not in html
    assert "No full build" in buildtimes.report(None).data
