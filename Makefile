# howmany — `make book` builds the executable book, `make test` runs the tests.
# Both create .venv and install everything on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PROFILE ?= default
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
PYTHON ?= python3
BACKEND ?= inprocess
DTYPE ?= float32
ADDRESS ?=
JOBS ?= 1
TIME_LIMIT ?=
PY := .venv/bin/python
$(if $(filter $(PROFILE),smoke default full),,$(error PROFILE=$(PROFILE) is not a profile; valid profiles are smoke, default, full))
QUIET := 2>&1 | { grep -v "is ignored: it is neither" || true; }

.PHONY: install book test test-all smoke results remeasure remeasure-check budget-curves notebooks readme-times check-html chapter lint clean

install: .venv/.installed  ## create .venv and install the package with the book toolchain
.venv/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv .venv
	$(PY) -m pip install -q "$(TORCH_SPEC)" $(TORCH_PIP_ARGS) $(QUIET) && $(PY) -m pip install -q -e ".[book,dev,distributed]" $(QUIET) && touch $@

book: install  ## execute every chapter (PROFILE=default) and build the HTML strictly
	$(PY) -m howmany book build --profile $(PROFILE)

test: install  ## unit tests + every chapter in the smoke profile (temporary store)
	$(PY) -m pytest -m "not slow"

test-all: install  ## also the slow tests (real offline models)
	$(PY) -m pytest

smoke: install  ## every chapter in the smoke profile, then a strict build
	HOWMANY_NO_SAVE_FIGS=1 $(PY) -m howmany book build --profile smoke

results: install  ## recompute heavy results into data/ (profile full; resumes); BACKEND=ray [ADDRESS=auto]: on a Ray cluster
	$(PY) -m howmany book execute --profile full --out _build/full --backend $(BACKEND) $(if $(ADDRESS),--address $(ADDRESS))

remeasure: install  ## the real-model sweeps again with the book's recipe, and the paper-protocol point (hours on a GPU; resumes); DTYPE=bfloat16 [JOBS=N processes] [TIME_LIMIT=seconds] [BACKEND=ray]
	$(PY) -m howmany cram --remeasure --dtype $(DTYPE) --profile full --backend $(BACKEND) $(if $(ADDRESS),--address $(ADDRESS)) $(if $(filter-out 1,$(JOBS)),--jobs $(JOBS)) $(if $(TIME_LIMIT),--time-limit $(TIME_LIMIT))

remeasure-check: install  ## rehearse make remeasure in minutes (first m, 1/100 of the steps, 2 strings, temporary store): checks models, layouts and storage; DTYPE=bfloat16 [JOBS=N]
	$(PY) -m howmany cram --remeasure --strings 2 --dtype $(DTYPE) --profile smoke $(if $(filter-out 1,$(JOBS)),--jobs $(JOBS))

budget-curves: install  ## every cramming recipe on the budget curves' strings (SmolLM2-135M, m = 1 and 2; resumes the stored runs); DTYPE, JOBS, TIME_LIMIT, BACKEND as for remeasure
	$(PY) -m howmany cram --budget-curves --dtype $(DTYPE) --profile full --backend $(BACKEND) $(if $(ADDRESS),--address $(ADDRESS)) $(if $(filter-out 1,$(JOBS)),--jobs $(JOBS)) $(if $(TIME_LIMIT),--time-limit $(TIME_LIMIT))

chapter: install  ## preview one chapter: make chapter CH=packing [PROFILE=smoke]
	$(PY) -m howmany book build --profile $(PROFILE) --only $(CH) --out _build/preview/_build

notebooks: install  ## executed Colab notebooks into notebooks/ (reuses the last build's outputs)
	$(PY) -m howmany book notebooks --profile $(PROFILE) --out notebooks

readme-times: install  ## regenerate README's table from data/build/times.json
	$(PY) -m howmany book readme-times

check-html: install  ## test the built pages (_build/html): no leftovers, MathJax once
	HOWMANY_HTML=_build/html $(PY) -m pytest -q tests/test_built_html.py

lint: install  ## ruff, and no tracked notebooks
	$(PY) -m ruff check src tests benchmarks
	test -z "$$(git ls-files '*.ipynb')"

clean:  ## remove generated folders (never the model cache)
	rm -rf _build notebooks figures _static/mathjax .pytest_cache  # _static/mathjax: old builds
