# Two commands do everything on a fresh clone:  make book  (build the site)  and  make test.
# make pdf  prints the whole book as one PDF (and rebuilds the site, whose header offers it).
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MATHJAX := book/_mathjax/mathjax/tex-mml-chtml.js
PYODIDE_VERSION := 314.0.8
PYODIDE_SHA256 := 9a52704e0ae5b07aaacb8e4fed9f1658e8024694a078695ea45ac79dee4cefcb
PYODIDE := book/_pyodide/.pyodide-$(PYODIDE_VERSION)
JB    := $(VENV)/bin/jupyter-book
LAB_EXTENSION := .cache/lab/labextensions/book-machinery-lab/package.json
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# Python keeps its compiled modules (and pytest its rewritten test modules) in the gitignored
# __pycache__ folders, so a second run does not compile the library, the tests and every
# subprocess's imports again: an environment that forbids writing them (PYTHONDONTWRITEBYTECODE)
# costs make check about 4 s of CPU in collection alone.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: book pdf tools test check execute measure bench lab preview setup clean

setup: $(STAMP) $(MATHJAX) $(PYODIDE) $(LAB_EXTENSION)

# A virtual environment with the pinned set (torch==2.13.0 is the CPU build on this disk).
# rfc3987-syntax is an optional IRI checker that jsonschema imports eagerly: over two seconds
# of CPU in every process that reads a notebook (builds, tests, servers). Nothing here uses it.
$(STAMP): requirements.txt requirements-built.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
	  -r requirements-built.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(PY) -m pip uninstall --quiet --disable-pip-version-check -y rfc3987-syntax
	touch $@

# MathJax 3 served from the site itself, so math renders without a network.
$(MATHJAX):
	mkdir -p .cache/mathjax book/_mathjax/mathjax/output/chtml
	npm install --silent --no-audit --no-fund --prefix .cache/mathjax mathjax@3.2.2
	cp .cache/mathjax/node_modules/mathjax/es5/tex-mml-chtml.js $@
	cp -r .cache/mathjax/node_modules/mathjax/es5/output/chtml/fonts book/_mathjax/mathjax/output/chtml/

# Pyodide (CPython compiled to WebAssembly) served from the site itself, so the calculator
# runs in the reader's browser without a network: the npm package, pinned and checked,
# of which the five files it starts from (calculator_page/sphinx_page.py serves them),
# its standard library compiled to bytecode by that same Pyodide under Node.js, once here
# rather than in every reader's browser (compile_stdlib.mjs says why).
$(PYODIDE):
	rm -rf .cache/pyodide book/_pyodide && mkdir -p .cache/pyodide book/_pyodide
	npm pack --silent --pack-destination .cache/pyodide pyodide@$(PYODIDE_VERSION) >/dev/null
	echo "$(PYODIDE_SHA256)  .cache/pyodide/pyodide-$(PYODIDE_VERSION).tgz" | sha256sum --check --quiet
	tar -xzf .cache/pyodide/pyodide-$(PYODIDE_VERSION).tgz -C book/_pyodide --strip-components=1 \
	  package/pyodide.mjs package/pyodide.asm.mjs package/pyodide.asm.wasm \
	  package/python_stdlib.zip package/pyodide-lock.json
	node lib/calculator_page/assets/compile_stdlib.mjs book/_pyodide
	touch $@

# The book's JupyterLab extension (a section's prose as the site shows it: book_machinery/
# lab_prose.py), built from lib/book_machinery/lab_extension with @jupyter/builder, pinned
# by its package-lock.json, against the installed JupyterLab's own package list; Lab loads
# it from .cache/lab/labextensions (book_machinery/lab.py), nothing installed elsewhere.
$(LAB_EXTENSION): $(STAMP) $(wildcard lib/book_machinery/lab_extension/*)
	rm -rf .cache/lab/extension-build $(dir $@) && mkdir -p .cache/lab/extension-build
	cp lib/book_machinery/lab_extension/* .cache/lab/extension-build/
	cd .cache/lab/extension-build && npm ci --silent --no-audit --no-fund
	$(VENV)/bin/jupyter-builder build --core-package-file="$$($(PY) -c 'import jupyterlab, pathlib; \
	  print(pathlib.Path(jupyterlab.__file__).parent / "staging" / "package.json")')" \
	  .cache/lab/extension-build >/dev/null
	test -f $@

## book: build the HTML site into book/_build/html
book: setup
	$(JB) build -W -n --keep-going book

## pdf: the whole book as one PDF in book/_build/pdf/ (single-page build printed by headless
## Chromium), then the site, whose header offers it
pdf: setup tools
	$(PY) -m book_machinery.pdf

# What the browser checks and printing need from Debian: Chromium, poppler-utils (pdfinfo),
# qpdf, the Liberation fonts. Installed when missing and run as root; otherwise one line says
# what to install.
tools:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v pdfinfo >/dev/null 2>&1 || missing="$$missing poppler-utils"; \
	command -v qpdf >/dev/null 2>&1 || missing="$$missing qpdf"; \
	fc-list 2>/dev/null | grep -q "Liberation Serif" || missing="$$missing fonts-liberation"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$missing"; (apt-get update -qq && apt-get install -y -qq$$missing >/dev/null) || exit 1; \
	  else echo "this needs Debian's$$missing (browser checks and printing): run  sudo apt-get install -y$$missing" >&2; exit 1; fi; \
	fi

## test: library tests, every notebook under nbval, pairs in sync, a clean warnings-as-errors build
test: setup tools
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --nbval book/chapters tests

## check: the library's tests alone, for the author's inner loop (well under 20 s: most of it
## is importing torch, hypothesis and matplotlib): every test without one of the group
## markers (notebooks, site, pdf, transformers, slow; pyproject.toml lists them). A new test
## file joins check unless it says it belongs to a group.
check: setup
	$(PY) -m pytest -q -p no:xdist -p no:nbval -m "$(CHECK_GROUPS)" tests
CHECK_GROUPS := not (notebooks or site or pdf or transformers or slow)

## execute: re-run every notebook from its .md and store the outputs in its .ipynb
execute: $(STAMP)
	$(PY) -m book_machinery.execute

## measure: re-run the appendix page that times this computer (alone, on a quiet machine)
measure: $(STAMP)
	$(PY) -m book_machinery.execute --measured

## bench: the loops' speed on this machine, as multiples of its floor (takes a few minutes)
bench: setup tools
	$(PY) -m book_machinery.bench

## lab: JupyterLab with jupytext, so a paired .md opens as a notebook with its outputs (the
## project's own Jupyter configuration layer, lib/book_machinery/jupyter; no user setting touched),
## its prose rendered as the site renders it; the site is built first, for its numbers (a
## warning does not stop Lab: it shows in .cache/lab/book-build.log)
lab: setup
	@mkdir -p .cache/lab
	@$(JB) build --keep-going book > .cache/lab/book-build.log 2>&1 \
	  || echo "the book did not build (.cache/lab/book-build.log): Lab shows the last build's numbers"
	$(PY) -m book_machinery.lab

## preview: the site served at http://127.0.0.1:8000/ and rebuilt as you edit: a saved section
## .md is executed again into its .ipynb, the changed pages rebuilt and the browser reloaded
preview: setup
	$(PY) -m book_machinery.preview $(if $(PORT),--port $(PORT))

clean:
	rm -rf book/_build .cache book/_mathjax book/_pyodide
