"""The package's layers: dependencies point one way, from the face down to the theory.

Theory (closed forms, packings, volumes, the toy) imports no torch and no other layer; the model
loader knows nothing of measuring or experiments; measuring knows nothing of experiments; and
only ``plotting`` draws. Read from the source with ``ast``, so nothing is imported to check it.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "howmany"
THEORY = {"bounds", "refinements", "packing", "volumes", "precision", "table1", "toy"}
MODELS = {"models", "modelcache", "checks", "devices"}
MEASURING = {"geometry", "cells", "radius"}
EXPERIMENTS = {"cramming", "copying", "lab"}
FACE = {"cli", "bookbuild", "bookstage", "colab", "fullrun", "__main__"}


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(howmany parts, outside top-level packages) that one source file imports."""
    rel = path.relative_to(ROOT.parent).with_suffix("").parts  # ("howmany", ..., name)
    here = rel[:-1]  # the package a relative import starts from (for __init__ too)
    inner, outer = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(here[:len(here) - node.level + 1]) if node.level else []
            if node.module:
                names = [".".join(base + node.module.split("."))]
                if node.module == "howmany":  # from howmany import bounds, ...
                    names += [f"howmany.{a.name}" for a in node.names]
            else:
                names = [".".join([*base, a.name]) for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "howmany":
                if len(parts) > 1:
                    inner.add(parts[1])
            else:
                outer.add(parts[0])
    return inner, outer


def _part(name: str) -> tuple[set[str], set[str]]:
    """Imports of a top-level module or of every module of a subpackage, its own name left out."""
    files = [ROOT / f"{name}.py"] if (ROOT / f"{name}.py").exists() else sorted((ROOT / name).rglob("*.py"))
    inner, outer = set(), set()
    for f in files:
        i, o = _imports(f)
        inner |= i
        outer |= o
    return inner - {name, "__version__"}, outer


PARTS = sorted({p.stem for p in ROOT.glob("*.py")} | {p.name for p in ROOT.iterdir()
                                                       if (p / "__init__.py").exists()})


def test_the_reader_finds_every_part():
    assert THEORY | MODELS | MEASURING | EXPERIMENTS <= set(PARTS)
    assert not {"utils", "helpers", "misc", "common"} & set(PARTS)


@pytest.mark.parametrize("name", sorted(THEORY))
def test_theory_needs_neither_torch_nor_any_other_layer(name):
    inner, outer = _part(name)
    assert inner <= THEORY, f"{name} imports {sorted(inner - THEORY)}"
    assert not outer & {"torch", "transformers", "matplotlib", "IPython"}, f"{name} imports {sorted(outer)}"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_model_loader_knows_nothing_of_measuring_or_experiments(name):
    inner, _ = _part(name)
    assert not inner & (MEASURING | EXPERIMENTS | {"plotting"} | FACE), f"{name} imports {sorted(inner)}"


@pytest.mark.parametrize("name", sorted(MEASURING))
def test_measuring_knows_nothing_of_experiments(name):
    inner, _ = _part(name)
    assert not inner & (EXPERIMENTS | {"plotting"} | FACE), f"{name} imports {sorted(inner)}"


@pytest.mark.parametrize("name", [p for p in PARTS if p != "plotting"])
def test_only_plotting_draws(name):
    inner, outer = _part(name)
    assert "matplotlib" not in outer, f"{name} imports matplotlib"
    if name not in FACE:
        assert "plotting" not in inner, f"{name} imports plotting"


def test_the_reader_of_these_rules_can_trust_them():
    """The import reader sees relative, absolute and package-level imports alike."""
    inner, outer = _part("table1")
    assert {"bounds", "precision"} <= inner and "numpy" in outer
    inner, outer = _part("lab")
    assert {"cramming", "bounds"} <= inner
    assert "torch" in _part("models")[1] and "matplotlib" in _part("plotting")[1]


def _docstrings():
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        yield path, "<module>", ast.get_docstring(tree) or ""
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                yield path, node.name, ast.get_docstring(node) or ""


def test_every_module_says_where_the_book_explains_it():
    missing = [p.relative_to(ROOT).as_posix() for p, name, doc in _docstrings()
               if name == "<module>" and p.name != "__main__.py" and "Explained in: book/" not in doc]
    assert not missing, f"modules without 'Explained in: book/...': {missing}"


def test_every_explained_in_names_a_chapter_that_exists():
    book = ROOT.parents[1] / "book"
    named = {(p.relative_to(ROOT).as_posix(), name, ref) for p, name, doc in _docstrings()
             for line in doc.splitlines() if line.strip().startswith("Explained in:")
             for ref in re.findall(r"book/([\w-]+\.md)", line)}
    assert len(named) > 100  # the reader really found them
    gone = sorted(f"{where}:{name} -> book/{ref}" for where, name, ref in named
                  if not (book / ref).exists())
    assert not gone, gone
