# Two commands do everything on a fresh clone:  make book  (build the site)  and  make test.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MATHJAX := book/_mathjax/mathjax/tex-mml-chtml.js
JB    := $(VENV)/bin/jupyter-book
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: book test check execute measure bench lab setup browser clean

setup: $(STAMP) $(MATHJAX)

# A virtual environment with the pinned set (torch==2.13.0 is the CPU build on this disk).
# rfc3987-syntax is an optional IRI checker that jsonschema imports eagerly: over two seconds
# of CPU in every process that reads a notebook (builds, tests, servers). Nothing here uses it.
$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(PY) -m pip uninstall --quiet --disable-pip-version-check -y rfc3987-syntax
	touch $@

# Debian's Chromium for the browser checks: installed here when it is missing and we may
# (root with apt-get); otherwise one clear line says what to install.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    echo "installing Debian's chromium for the browser checks" && \
	    apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || \
	  { echo "make test needs Chromium for its browser checks: install it (Debian: apt-get install -y chromium) and run make test again" >&2; exit 1; }

# MathJax 3 served from the site itself, so math renders without a network.
$(MATHJAX):
	mkdir -p .cache/mathjax book/_mathjax/mathjax/output/chtml
	npm install --silent --no-audit --no-fund --prefix .cache/mathjax mathjax@3.2.2
	cp .cache/mathjax/node_modules/mathjax/es5/tex-mml-chtml.js $@
	cp -r .cache/mathjax/node_modules/mathjax/es5/output/chtml/fonts book/_mathjax/mathjax/output/chtml/

## book: build the HTML site into book/_build/html
book: setup
	$(JB) build -W -n --keep-going book

## test: library tests, every notebook under nbval, pairs in sync, a clean warnings-as-errors build
test: setup browser
	$(PY) -m pytest -n 2 --dist loadgroup --nbval book/chapters tests

## check: the library's tests alone, for the author's inner loop (seconds)
check: setup
	$(PY) -m pytest -q -n 2 tests/test_shapes.py tests/test_memory.py tests/test_time.py tests/test_counts_and_reach.py tests/test_summaries_and_open.py tests/test_sampling_and_speed.py tests/test_references.py

## execute: re-run every notebook from its .md and store the outputs in its .ipynb
execute: $(STAMP)
	$(PY) scripts/execute.py

## measure: re-run the appendix page that times this computer (alone, on a quiet machine)
measure: $(STAMP)
	$(PY) scripts/execute.py --measured

## bench: the loops' speed on this machine, as multiples of its floor (takes a few minutes)
bench: setup browser
	$(PY) scripts/bench.py

## lab: JupyterLab with jupytext, so a paired .md opens as a notebook with its outputs
lab: $(STAMP)
	$(VENV)/bin/jupytext-config set-default-viewer >/dev/null 2>&1 || true
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) book/chapters

clean:
	rm -rf book/_build .cache book/_mathjax
