"""Sphinx glue for the calculator in the page: the ``calculator`` directive.

A page says

    ```{calculator}
    :example: llama-3-8b
    ```

and gets a form that runs the library's command-line calculator in the reader's
browser, offline, under Pyodide (CPython compiled to WebAssembly). The page loads the
calculator's own code, never a copy of its arithmetic:

1. When the book is built, ``bundle.trace()`` runs the command line on every
   shipped config in a Python that has only the standard library and the library's
   packages, and ``bundle.bundle()`` zips exactly the modules it loaded.
   The zip goes to ``_static/calculator/`` with the form's script, worker and style
   (``assets/``), and the Pyodide runtime (fetched from npm by ``make setup``
   into ``book/_pyodide/``, pinned and checked in the Makefile, its standard library
   compiled to bytecode there by ``assets/compile_stdlib.mjs``) to
   ``_static/pyodide/``.
2. The form is HTML written at build time (``assets/form.html``): the shipped
   configs, the example accelerator, and the report of the ``example`` config computed
   by that same build, which the page shows at once and which the print edition keeps
   in place of the form. The script and style are added to the pages that hold the
   form and to no other; the runtime itself is fetched by the page's script only when
   the form comes into view.
3. The single-page build (the PDF) gets the form's example report and no runtime.
"""

from __future__ import annotations

import functools
import html
import json
import shutil
from pathlib import Path
from string import Template

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from . import bundle as calculator_bundle

logger = logging.getLogger(__name__)

ASSETS = Path(__file__).with_name("assets")
SCRIPTS = ("calculator.js", "calculator-worker.js", "calculator.css")
RUNTIME_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
"""What Pyodide fetches to start CPython with its standard library (no packages)."""
BUNDLE = "calculator.zip"


class calculator_form(nodes.General, nodes.Element):
    """Where the calculator's form goes; ``example`` names the shipped config shown."""


class CalculatorDirective(SphinxDirective):
    """``{calculator}``: the command-line calculator as a form running in the page."""

    has_content = False
    option_spec = {"example": directives.unchanged_required}

    def run(self):
        example = self.options.get("example", "llama-3-8b").strip()
        configs = _trace().configs
        if example not in configs:
            raise self.error(
                f"calculator: no shipped config called {example!r}; the shipped ones "
                f"are {', '.join(configs)}"
            )
        return [calculator_form(example=example)]


@functools.cache
def _trace() -> calculator_bundle.Trace:
    try:
        return calculator_bundle.trace()
    except RuntimeError as err:
        raise ExtensionError(str(err)) from None


@functools.cache
def _bundle() -> tuple[bytes, list[str]]:
    return calculator_bundle.bundle(_trace().modules)


def _script_json(value: object) -> str:
    """JSON safe inside a ``<script>`` element."""
    return json.dumps(value).replace("</", "<\\/")


DEFAULT_CHIP = "h100-sxm"
"""The chip the form's list of chips shows first (the book's example chip stays the
form's default)."""


TRAIN_DEFAULTS = {"--optimizer": "adamw", "--recompute": "selective",
                  "--gradients": "model"}
"""What ``train`` takes when the option is not given (tests/test_calculator_bundle.py
checks them against the command line), named in the form's first choice."""


CP_KIND_DEFAULT = "all-gather"
"""What ``--cp-kind`` takes when the option is not given."""


def _choice_options(flag: str, default: str | None = None) -> str:
    """The ``<option>`` elements for one of the command line's fixed lists of values;
    the default, if named, comes first with an empty value (so nothing is passed)."""
    values = _trace().choices[flag]
    first = (
        [f'<option value="">{html.escape(default)} (the default)</option>']
        if default is not None
        else []
    )
    if default is not None and default not in values:
        raise ExtensionError(f"calculator: {flag} takes no {default!r}: {values}")
    return "\n".join(
        first
        + [
            f'<option value="{html.escape(v)}">{html.escape(v)}</option>'
            for v in values
            if v != default
        ]
    )


def shipped_chips(found: calculator_bundle.Trace) -> list[dict]:
    """The shipped chips as ``chips --json`` lists them in the trace, each with
    ``summary``: its figures in the words of the ``chips`` command's text."""
    runs = found.extra_runs
    rows = json.loads(runs["chips --json"]["out"])
    summaries = {}
    for line in runs["chips"]["out"].splitlines():
        key, _, rest = line.partition(" ")
        if key:  # a chip's first line; the next two (its note, its source) are indented
            summaries[key] = rest.strip()
    return [{**row, "summary": summaries[row["key"]]} for row in rows]


def _figures(row: dict) -> str:
    """A chip's figures as the ``chips`` command words them, without its name."""
    return row["summary"].split(": ", 1)[-1]


def chip_options(chips: list[dict]) -> str:
    """The ``<option>`` elements of the form's list of chips: each chip's name, short
    enough for a phone's list (its key, the command line's, is the value; its figures go
    under the list, from ``data-``)."""
    return "\n".join(
        f'<option value="{html.escape(c["key"])}"'
        f' data-source="{html.escape(c["source"])}"'
        f' data-note="{html.escape(c["note"])}"'
        f' data-figures="{html.escape(_figures(c))}"'
        + (" selected" if c["key"] == DEFAULT_CHIP else "")
        + f'>{html.escape(c["name"])}</option>'
        for c in chips
    )


def draft_options(configs: list[str]) -> str:
    """The ``<option>`` elements of the form's list of draft models: every shipped
    config, by the name the command line takes (``--draft NAME``)."""
    return "\n".join(
        f'<option value="{html.escape(name)}">{html.escape(name)}</option>'
        for name in configs
    )


def _chip_about(row: dict) -> str:
    """What the form says under the list of chips about the chosen one: its figures,
    the datasheet's words and their source."""
    return (
        f'{html.escape(_figures(row))}. {html.escape(row["note"])}. '
        f'<a href="{html.escape(row["source"])}" '
        f'class="calc-chip-source" rel="noopener">Source of these figures</a>'
    )


def _form_html(example: str, live: bool) -> str:
    found = _trace()
    chips = shipped_chips(found)
    if DEFAULT_CHIP not in [c["key"] for c in chips]:
        raise ExtensionError(f"calculator: no shipped chip called {DEFAULT_CHIP!r}")
    options = "\n".join(
        f'<option value="{html.escape(name)}"'
        + (" selected" if name == example else "")
        + f">{html.escape(name)}</option>"
        for name in found.configs
    )
    flops, rate, gib = found.example_chip["numbers"]
    runs = found.runs[example]
    shown = {
        "argv": ["report", example, "--accelerator", "example"],
        "source": "build",
        "json": runs["json"],
        "text": runs["text"],
    }
    template = Template((ASSETS / "form.html").read_text())
    return template.substitute(
        live="yes" if live else "no",
        bundle=f"{BUNDLE}?v={calculator_bundle.digest(_bundle()[0])}",
        max_file_bytes=found.max_file_bytes,
        options=options,
        chip_options=chip_options(chips),
        weights_options=_choice_options("--weights"),
        kv_options=_choice_options("--kv-dtype"),
        optimizer_options=_choice_options("--optimizer", TRAIN_DEFAULTS["--optimizer"]),
        recompute_options=_choice_options("--recompute", TRAIN_DEFAULTS["--recompute"]),
        gradients_options=_choice_options("--gradients", TRAIN_DEFAULTS["--gradients"]),
        cp_kind_options=_choice_options("--cp-kind", CP_KIND_DEFAULT),
        formats_list=html.escape(", ".join(found.choices["--formats"])),
        draft_options=draft_options(found.configs),
        chip_about=_chip_about(next(c for c in chips if c["key"] == DEFAULT_CHIP)),
        example_chip=html.escape(found.example_chip["text"].removeprefix("the ")),
        flops=html.escape(flops),
        rate=html.escape(rate),
        gib=html.escape(gib),
        example=_script_json(shown),
    )


def _visit_html(self, node):
    self.body.append(_form_html(node["example"], live=self.builder.name == "html"))
    raise nodes.SkipNode


def _visit_other(self, node):
    raise nodes.SkipNode


def _note_page(app, doctree):
    if any(doctree.findall(calculator_form)):
        app.env.calculator_docs = getattr(app.env, "calculator_docs", set()) | {
            app.env.docname
        }


def _purge(app, env, docname):
    getattr(env, "calculator_docs", set()).discard(docname)


def _merge(app, env, docnames, other):
    env.calculator_docs = getattr(env, "calculator_docs", set()) | (
        getattr(other, "calculator_docs", set()) & set(docnames)
    )


def _page_assets(app, pagename, templatename, context, doctree):
    if doctree is not None and any(doctree.findall(calculator_form)):
        app.add_js_file("calculator/calculator.js", defer="defer")
        app.add_css_file("calculator/calculator.css")


def _runtime(app) -> Path:
    return Path(app.srcdir) / app.config.calculator_runtime


def _check_runtime(app, env):
    """The runtime must be there when a page of the book holds the form (a book without
    one, such as a one-section preview, builds without it)."""
    if app.builder.name != "html" or not getattr(env, "calculator_docs", set()):
        return
    missing = [f for f in RUNTIME_FILES if not (_runtime(app) / f).exists()]
    if missing:
        raise ExtensionError(
            f"the Pyodide runtime is missing from {_runtime(app)} "
            f"({', '.join(missing)}): run `make setup`, which fetches it from npm"
        )


def _copy(source: Path, target: Path) -> None:
    if target.exists() and target.stat().st_size == source.stat().st_size and (
        target.stat().st_mtime >= source.stat().st_mtime
    ):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def _write_assets(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    if not getattr(app.env, "calculator_docs", set()):
        return
    static = Path(app.outdir) / "_static"
    for name in SCRIPTS:
        _copy(ASSETS / name, static / "calculator" / name)
    if app.builder.name != "html":  # the print edition runs nothing
        return
    data, names = _bundle()
    (static / "calculator" / BUNDLE).write_bytes(data)
    for name in RUNTIME_FILES:
        _copy(_runtime(app) / name, static / "pyodide" / name)
    logger.info(
        f"calculator: {len(names)} files of the library ({len(data):,} bytes zipped) "
        f"and the Pyodide runtime in {static}"
    )


def setup(app):
    app.add_config_value("calculator_runtime", "_pyodide", "html")
    app.add_node(
        calculator_form,
        html=(_visit_html, None),
        singlehtml=(_visit_html, None),
        latex=(_visit_other, None),
        text=(_visit_other, None),
    )
    app.add_directive("calculator", CalculatorDirective)
    app.connect("env-updated", _check_runtime)
    app.connect("doctree-read", _note_page)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("html-page-context", _page_assets)
    app.connect("build-finished", _write_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
