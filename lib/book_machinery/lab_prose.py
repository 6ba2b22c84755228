"""A section's computed prose in JupyterLab, as the site shows it.

A reader who opens a section in ``make lab`` reads its markdown cells rendered by the
same MyST parser the site uses (myst-parser, under docutils), with:

- ``{glue:text}`` taken from the notebook's own outputs as Lab holds them (so a cell
  run again in Lab changes the sentence), formatted by myst-nb's own function;
- ``{glue:figure}``: the glued picture with its caption and its number;
- ``{numref}``, ``{ref}``, ``{eq}``, ``{doc}``, numbered tables, exercises and
  equations numbered as the site numbers them, ``{cite:p}``/``{cite:t}`` with the
  bibliography's labels, ``{term}`` with the glossary's definition as its title: all
  read from the site build's ``_build/book-references.json`` (``sphinx_lab``).

This module renders one cell (``render``); ``lab_server`` is the Jupyter server
extension that answers Lab with it (the project's configuration layer enables it:
``jupyter/jupyter_server_config.d``), and the Lab extension in ``lab_extension/``
(built from npm by ``make setup``) is the markdown renderer that asks, for the notebooks
of the book, and asks again when an output changes. Anything else Lab renders as it
always does.
"""

from __future__ import annotations

import base64
import contextvars
import copy
import functools
import html
import posixpath
import re
from dataclasses import dataclass, field

from docutils import nodes
from docutils.core import publish_doctree, publish_from_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.directives.tables import RSTTable
from myst_parser.parsers.docutils_ import Parser


__all__ = ["Context", "render", "EXTENSIONS"]

EXTENSIONS = ("colon_fence", "dollarmath", "amsmath", "deflist", "substitution")
"""The MyST extensions the book's ``_config.yml`` enables (tests/test_lab.py checks)."""


@dataclass
class Context:
    """What one cell's prose is rendered with: the notebook's glued outputs (name ->
    MIME bundle, with the output's metadata under ``"metadata"``), the book's
    references, and the section's document name (``chapters/training/04_kv_cache``)."""

    glue: dict
    references: dict = field(default_factory=dict)
    doc: str = ""

    def target(self, label: str) -> dict | None:
        return self.references.get("targets", {}).get(label)

    def link(self, doc: str, anchor: str = "") -> str:
        """The address of ``doc``'s source from this section, as Lab opens it."""
        here = posixpath.dirname(self.doc)
        path = posixpath.relpath(doc, here or ".") + ".md" if doc != self.doc else ""
        return path + (f"#{anchor}" if anchor else "")


_CONTEXT: contextvars.ContextVar[Context] = contextvars.ContextVar("book_prose")


def _format(label: str, kind: str) -> str:
    return _CONTEXT.get().references.get("numfig_format", {}).get(kind, label + " %s")


def _text_and_target(text: str) -> tuple[str | None, str]:
    m = re.fullmatch(r"\s*(.*?)\s*<([^<>]+)>\s*", text, re.S)
    return (m[1], m[2]) if m else (None, text.strip())


def _reference(text: str, uri: str) -> nodes.Node:
    return nodes.reference(text, text, refuri=uri) if uri else nodes.inline(text, text)


def _problem(inliner, lineno, rawtext, message):
    msg = inliner.reporter.error(message, line=lineno)
    return [inliner.problematic(rawtext, rawtext, msg)], [msg]


# ---------------------------------------------------------------- the roles


def glue_text(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{glue:text}`key:format```: the glued value, as myst-nb formats it."""
    from myst_nb.core.variables import format_plain_text

    key, _, spec = text.partition(":")
    data = _CONTEXT.get().glue.get(key.strip())
    if data is None or "text/plain" not in data:
        return _problem(inliner, lineno, rawtext, f"no glued value called {key!r}")
    value = format_plain_text(data["text/plain"], spec)
    marks = ["pasted-text", f"book-glue-{key.strip()}"]  # the key, for a reader's tools
    return [nodes.inline(value, value, classes=marks)], []


def numref(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{numref}`` and ``{ref}``: the target's number in the words the site uses."""
    title, label = _text_and_target(text)
    ctx, target = _CONTEXT.get(), _CONTEXT.get().target(label)
    if target is None:
        return _problem(inliner, lineno, rawtext, f"no target called {label!r}")
    number = target["number"]
    if name == "ref" or (title and "%s" not in title and "{number}" not in title):
        shown = title or target["title"]
    else:
        words = title or _format(target["kind"].title(), target["kind"])
        shown = words.replace("{number}", number).replace("{name}", target["title"])
        shown = shown.replace("%s", number)
    return [_reference(shown, ctx.link(target["doc"], target["id"]))], []


def eq(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{eq}`label```: the equation's number in brackets, as the site writes it."""
    ctx, target = _CONTEXT.get(), _CONTEXT.get().target(text.strip())
    if target is None:
        return _problem(inliner, lineno, rawtext, f"no equation called {text!r}")
    shown = f"({target['number']})"
    return [_reference(shown, ctx.link(target["doc"], target["id"]))], []


def doc(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{doc}`words <path>```: the words, linked to that section's source in Lab."""
    title, path = _text_and_target(text)
    ctx = _CONTEXT.get()
    target = posixpath.normpath(posixpath.join(posixpath.dirname(ctx.doc), path)
                                if not path.startswith("/") else path.lstrip("/"))
    found = ctx.references.get("docs", {}).get(target)
    shown = title or (found or {}).get("title") or path
    return [_reference(shown, ctx.link(target))], []


def term(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{term}``: the words, with the glossary's definition as their title."""
    shown, key = _text_and_target(text)
    shown = shown or key
    entry = _CONTEXT.get().references.get("terms", {}).get(key.lower())
    title = f' title="{html.escape(entry["definition"])}"' if entry else ""
    raw = f'<abbr class="book-term"{title}>{html.escape(shown)}</abbr>'
    return [nodes.raw(rawtext, raw, format="html")], []


def cite(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{cite:p}`` "[Kwon et al., 2023]" and ``{cite:t}`` "Kwon et al. [2023]", with
    the bibliography's labels."""
    labels = _CONTEXT.get().references.get("citations", {})
    keys = [k.strip() for k in text.split(",") if k.strip()]
    found = [labels.get(k, k) for k in keys]
    if name.endswith(":t"):
        parts = (f.rpartition(", ") for f in found)
        shown = ", ".join(f"{author} [{year}]" for author, _, year in parts)
    else:
        shown = f"[{', '.join(found)}]"
    return [nodes.inline(shown, shown, classes=["book-cite"])], []


def abbr(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{abbr}`RoPE (rotary position embedding)```, as Sphinx reads it."""
    m = re.fullmatch(r"\s*(.*?)\s*\((.*)\)\s*", text, re.S)
    shown, title = (m[1], m[2]) if m else (text, "")
    raw = f'<abbr title="{html.escape(title)}">{html.escape(shown)}</abbr>'
    return [nodes.raw(rawtext, raw, format="html")], []


# ---------------------------------------------------------------- the directives


def _caption_number(kind: str, label: str | None) -> nodes.Node | None:
    target = _CONTEXT.get().target(label) if label else None
    if target is None:
        return None
    words = _format(kind.title(), kind).replace("%s", target["number"]) + " "
    return nodes.inline(words, words, classes=["caption-number"])


class GlueFigure(Directive):
    """``{glue:figure} key``: the glued picture, its number and its caption."""

    required_arguments = 1
    has_content = True
    option_spec = {"name": directives.unchanged, "alt": directives.unchanged,
                   "figwidth": directives.unchanged, "width": directives.unchanged,
                   "align": directives.unchanged, "figclass": directives.unchanged,
                   "class": directives.unchanged}

    def run(self):
        key = self.arguments[0]
        data = _CONTEXT.get().glue.get(key)
        picture = next((m for m in ("image/svg+xml", "image/png")
                        if m in (data or {})), None)
        if picture is None:
            return [self.state_machine.reporter.error(
                f"no glued picture called {key!r}", line=self.lineno)]
        raw = data[picture]
        body = raw.encode() if picture == "image/svg+xml" else base64.b64decode(raw)
        alt = data.get("metadata", {}).get(picture, {}).get("alt", "")
        uri = f"data:{picture};base64,{base64.b64encode(body).decode()}"
        figure = nodes.figure(classes=["book-figure"])
        if "name" in self.options:
            figure["ids"].append(self.options["name"])
        figure += nodes.image(uri=uri, alt=alt)
        caption = nodes.caption()
        number = _caption_number("figure", self.options.get("name"))
        if number is not None:
            caption += number
        if self.content:
            holder = nodes.Element()
            self.state.nested_parse(self.content, self.content_offset, holder)
            for child in holder.children:
                paragraph = isinstance(child, nodes.paragraph)
                caption += child.children if paragraph else child
        figure += caption
        return [figure]


class Table(RSTTable):
    """``{table} caption`` with ``:name:``: the table, its caption numbered."""

    def run(self):
        label = self.options.get("name")  # add_name takes it out of the options
        found = super().run()
        for table in found:
            if isinstance(table, nodes.table) and table.children and isinstance(
                    table[0], nodes.title):
                number = _caption_number("table", label)
                if number is not None:
                    table[0].insert(0, number)
        return found


class Exercise(Directive):
    """``{exercise}`` with ``:label:``: a box titled with its number, as on the site."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = {"label": directives.unchanged, "class": directives.unchanged,
                   "nonumber": directives.flag, "hidden": directives.flag}

    def run(self):
        label = self.options.get("label")
        target = _CONTEXT.get().target(label) if label else None
        title = _format("Exercise", "exercise").replace(
            "%s", target["number"] if target else "").strip()
        if self.arguments:
            title += f" ({self.arguments[0]})"
        box = nodes.admonition(classes=["book-exercise"])
        if label:
            box["ids"].append(label)
        box += nodes.title(title, title)
        self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


class SolutionStart(Directive):
    """``{solution-start} label``: the heading of the solution the next cells hold."""

    required_arguments = 1
    has_content = True
    option_spec = {"class": directives.unchanged, "label": directives.unchanged}

    def run(self):
        target = _CONTEXT.get().target(self.arguments[0])
        what = _format("Exercise", "exercise").replace(
            "%s", target["number"] if target else "").strip()
        return [nodes.rubric(f"Solution to {what}", f"Solution to {what}",
                             classes=["book-solution"])]


class SolutionEnd(Directive):
    """``{solution-end}``: nothing to show."""

    has_content = True

    def run(self):
        return []


class Calculator(Directive):
    """``{calculator}``: the form runs on the book's site, not in a notebook."""

    has_content = True
    option_spec = {"example": directives.unchanged}

    def run(self):
        text = ("The calculator's form runs here on the book's site (make book); in "
                "a notebook, run python -m transformer_calculator in a cell or a "
                "terminal.")
        return [nodes.note("", nodes.paragraph(text, text))]


def _register() -> None:
    for name in ("glue:text", "glue:", "glue"):
        roles.register_local_role(name, glue_text)
    for name, role in (("numref", numref), ("ref", numref), ("eq", eq), ("doc", doc),
                       ("term", term), ("cite:p", cite), ("cite:t", cite),
                       ("cite", cite), ("abbr", abbr)):
        roles.register_local_role(name, role)
    for name, directive in (("glue:figure", GlueFigure), ("table", Table),
                            ("exercise", Exercise), ("solution-start", SolutionStart),
                            ("solution-end", SolutionEnd), ("calculator", Calculator)):
        directives.register_directive(name, directive)


_register()


def _tag_equations(document: nodes.document) -> None:
    """A labelled display equation carries its number, as the site shows it."""
    ctx = _CONTEXT.get()
    for block in list(document.findall(nodes.math_block)):
        label = block.get("label") or next(iter(block.get("names", [])), None)
        target = ctx.target(label) if label else None
        if target is not None:
            block[:] = [nodes.Text(block.astext() + f"\\tag{{{target['number']}}}")]


SETTINGS = {
    "myst_enable_extensions": list(EXTENSIONS), "myst_dmath_allow_labels": True,
    "myst_heading_anchors": 0, "report_level": 3, "halt_level": 5,
    "warning_stream": False, "doctitle_xform": False, "sectsubtitle_xform": False,
    "math_output": "MathJax", "syntax_highlight": "none", "embed_stylesheet": False,
    "file_insertion_enabled": False, "raw_enabled": True,
    "smart_quotes": True, "language_code": "en",  # Sphinx's curly quotes and dashes
}


@functools.cache
def _settings():
    """The parser's and the writer's settings, made once (docutils builds its option
    parser afresh at every call otherwise: most of a small cell's time)."""
    from docutils.frontend import get_default_settings
    from docutils.writers.html5_polyglot import Writer

    settings = get_default_settings(Parser, Writer)
    for key, value in {**SETTINGS, "output_encoding": "unicode"}.items():
        setattr(settings, key, value)
    return settings


def render(source: str, ctx: Context) -> str:
    """One markdown cell's ``source`` as an HTML fragment, as the site renders it."""
    token = _CONTEXT.set(ctx)
    try:
        document = publish_doctree(source, parser=Parser(),
                                   settings=copy.copy(_settings()))
        _tag_equations(document)
        page = publish_from_doctree(document, writer_name="html5",
                                    settings=copy.copy(_settings()))
    finally:
        _CONTEXT.reset(token)
    body = re.search(r'<main>\n?(.*)</main>', page, re.S) or re.search(
        r"<body>\n?(.*)</body>", page, re.S)
    return body[1].strip() if body else page
