"""MyST → plain Markdown: each construct the chapters use, as the built HTML shows it."""

import pytest

from howmany import myst_inline, myst_md
from howmany.myst_inline import Context, Target

TARGETS = {
    "fig-a": Target("book/a", "figure", 3, ""),
    "fig-b": Target("book/b", "figure", 7, ""),
    "eq-a": Target("book/a", "equation", 2, ""),
    "thm-a": Target("book/a", "theorem", 1, "Finitely many"),
    "sec-b": Target("book/b", "section", None, "The chapter B"),
}


def _ctx(**kw) -> Context:
    glue = {"slope": {"text/plain": "11.7642"}, "n": {"text/plain": "1234567"},
            "name": {"text/plain": "'SmolLM2'"}, "eq": {"text/latex": "$$C = dL$$"},
            "fig": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}}
    base = dict(docname="book/a", glue=glue, targets=TARGETS,
                titles={"book/a": "Chapter A", "book/b": "The chapter B"},
                base_url="https://example.org/book/", macros={"eps": r"\varepsilon"},
                formats={"figure": "Figure %s"}, cite=lambda keys, role: f"<{role}:{keys}>")
    return Context(**{**base, **kw})


@pytest.mark.parametrize("role, expected", [
    ("{glue:text}`slope:.1f`", "11.8"),
    ("{glue:text}`n:d`", "1234567"),
    ("{glue:text}`n:,`", "1,234,567"),
    ("{glue:text}`name`", "SmolLM2"),
    ("{glue}`slope`", "11.7642"),
    ("{numref}`fig-a`", "Figure 3"),
    ("{numref}`Fig. {number} <fig-b>`", "[Fig. 7](https://example.org/book/book/b.html#fig-b)"),
    ("{eq}`eq-a`", "(2)"),
    ("{prf:ref}`thm-a`", "Theorem 1"),
    ("{ref}`sec-b`", "[The chapter B](https://example.org/book/book/b.html#sec-b)"),
    ("{ref}`see B <sec-b>`", "[see B](https://example.org/book/book/b.html#sec-b)"),
    ("{doc}`b`", "[The chapter B](https://example.org/book/book/b.html)"),
    ("{cite:t}`k1,k2`", "<cite:t:['k1', 'k2']>"),
    ("{math}`x^2`", "$x^2$"),
    (r"$\eps$ and `\eps`", r"$\varepsilon$ and `\eps`"),
    ("`{glue:text}` in code", "`{glue:text}` in code"),
])
def test_roles(role, expected):
    assert myst_md.convert(_ctx(), role) == expected


def test_theorem_and_admonition_become_block_quotes():
    text = ("```{prf:theorem} Finitely many\n:label: thm-a\n\nAt most {glue:text}`n:,`.\n```\n"
            "\n```{tip}\nOpen it on Colab.\n```")
    out = myst_md.convert(_ctx(), text)
    assert "> **Theorem 1** (Finitely many).\n>\n> At most 1,234,567." in out
    assert "> **Tip**\n>\n> Open it on Colab." in out


def test_math_glue_math_and_figure():
    text = ("```{math}\n:label: eq-a\n\\eps x\n```\n\n```{glue:math} eq\n:label: eq-a\n```\n\n"
            "```{glue:figure} fig\n:name: fig-a\n\nThe caption.\n```\n\n$$ y $$ (eq-a)")
    out = myst_md.convert(_ctx(), text)
    assert "$$\n\\varepsilon x \\tag{2}\n$$" in out and "$$\nC = dL \\tag{2}\n$$" in out
    assert "![](data:image/png;base64,iVBORw0KGgo=)\n\n**Figure 3.** The caption." in out
    assert "$$ y \\tag{2} $$" in out


def test_targets_and_comments_disappear_and_code_fences_stay():
    text = "(sec-a)=\n# Title\n% a comment\n```python\n{glue:text}`x`\n```"
    assert myst_md.convert(_ctx(), text) == "# Title\n```python\n{glue:text}`x`\n```"


@pytest.mark.parametrize("text, message", [
    ("{unknownrole}`x`", "role {unknownrole}"),
    ("```{unknowndirective}\nx\n```", "directive {unknowndirective}"),
    ("{glue:text}`missing:.1f`", "glue key 'missing'"),
    ("{numref}`fig-missing`", "unknown label 'fig-missing'"),
    ("{doc}`nowhere`", "unknown page"),
])
def test_what_cannot_be_converted_is_an_error(text, message):
    with pytest.raises(myst_inline.MystError, match=message):
        myst_md.convert(_ctx(), text)


def test_glue_text_formats_like_myst_nb():
    from myst_nb.core.variables import format_plain_text

    ctx = _ctx()
    for key, fmt in [("slope", ".1f"), ("n", "d"), ("n", ","), ("slope", ".3g"), ("name", "s")]:
        assert myst_inline.glue_text(ctx, key, fmt) == format_plain_text(
            ctx.glue[key]["text/plain"], fmt)
