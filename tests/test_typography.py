"""No-break spaces: a number keeps its unit and a short equation its number, in the HTML and on Colab."""

import nbformat
import pytest
from docutils import nodes
from docutils.utils import new_document

from howmany import bookbuild, colab, typography
from howmany.typography import NBSP


@pytest.mark.parametrize("text, bound", [
    ("18 % of them", f"18{NBSP}% of them"),
    ("a 95 % interval", f"a 95{NBSP}% interval"),
    ("615 s and 38.7 min, 2 h", f"615{NBSP}s and 38.7{NBSP}min, 2{NBSP}h"),
    ("12 GiB", f"12{NBSP}GiB"),
    ("at m = 2, n ≥ 64 and r ≈ 1.5", f"at m{NBSP}={NBSP}2, n{NBSP}≥{NBSP}64 and r{NBSP}≈{NBSP}1.5"),
    ("d = −3", f"d{NBSP}={NBSP}−3"),
    ("up to 16 + 96m tokens, 2 × 3", f"up to 16{NBSP}+{NBSP}96m tokens, 2{NBSP}×{NBSP}3"),
])
def test_a_number_keeps_its_unit_and_its_name(text, bound):
    assert typography.bind(text) == bound


@pytest.mark.parametrize("text", ["3 strings", "2 hours", "5 steps", "x = y", "ab = 2",
                                  "10 %s", "50 minutes", "7 ms2", "a + 2", "2 + b"])
def test_other_spaces_stay_breakable(text):
    assert typography.bind(text) == text


def test_markdown_code_fences_and_math_keep_their_spaces():
    source = "Half, 50 %, `f'{x} %'` and $a = 5 %$.\n```python\nm = 2\n```\nThen m = 2.\n$$\nn = 3\n$$\n"
    assert typography.bind_markdown(source) == source.replace("50 %", f"50{NBSP}%").replace(
        "Then m = 2", f"Then m{NBSP}={NBSP}2")


def test_html_text_is_bound_but_not_its_styles_or_code():
    html = "<style>td {width: 5 %}</style><th>95 % interval</th><td>m = 2</td><code>5 %</code>"
    assert typography.bind_html(html) == html.replace("95 % interval", f"95{NBSP}% interval").replace(
        "<td>m = 2", f"<td>m{NBSP}={NBSP}2")


def test_the_sphinx_pass_binds_text_and_tables_but_not_code_or_math():
    doc = new_document("page")
    para = nodes.paragraph("", "", nodes.Text("About 18 % at m = 2 "), nodes.literal("", "5 %"),
                           nodes.math("", "m = 2"))
    table = nodes.raw("", "<td>95 % interval</td>", format="html")
    code = nodes.literal_block("", "18 % at m = 2")
    doc += [para, table, code]
    typography._bind_doctree(None, doc, "page")
    assert para.astext() == f"About 18{NBSP}% at m{NBSP}={NBSP}2 5 %m = 2"
    assert table.astext() == f"<td>95{NBSP}% interval</td>"
    assert code.astext() == "18 % at m = 2"


def test_a_glued_number_is_bound_to_the_text_around_it():
    """Glue puts the number in a node of its own: "up to " [18.2] " % of", "at m = " [2]."""
    doc = new_document("page")
    para = nodes.paragraph("", "", nodes.Text("up to "), nodes.inline("", "18.2"),
                           nodes.Text(" % of them at m = "), nodes.inline("", "2"),
                           nodes.Text(" and "), nodes.literal("", "5"), nodes.Text(" % apart"))
    other = nodes.paragraph("", "", nodes.Text("% in a new paragraph"))
    doc += [para, other]
    typography._bind_doctree(None, doc, "page")
    assert para.astext() == f"up to 18.2{NBSP}% of them at m{NBSP}={NBSP}2 and 5 % apart"
    assert other.astext() == "% in a new paragraph"


def test_the_book_loads_the_sphinx_pass(repo_root):
    assert "howmany.typography" in (repo_root / "_config.yml").read_text(encoding="utf-8")


def test_colab_notebooks_bind_markdown_and_tables(repo_root):
    info = colab.book_info(repo_root, bookbuild.pages(repo_root))
    table = nbformat.v4.new_output("display_data", data={"text/html": "<td>95 % interval</td>"})
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Half the strings, 50 %, at m = 2; `5 %` stays."),
        nbformat.v4.new_code_cell("x = 5  # 5 %", outputs=[table]),
    ])
    out = colab.convert(nb, docname="book/cramming", info=info, commit="c0ffee", root=repo_root)
    assert out.cells[1].source == f"Half the strings, 50{NBSP}%, at m{NBSP}={NBSP}2; `5 %` stays."
    assert out.cells[2].source == "x = 5  # 5 %"
    assert out.cells[2].outputs[0]["data"]["text/html"] == f"<td>95{NBSP}% interval</td>"
