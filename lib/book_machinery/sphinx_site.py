"""The site's chrome, through documented Sphinx hooks only.

1. **Which text the book reads.** Wherever a section's ``.md`` has its ``.ipynb``
   beside it (a paired notebook), the book reads the notebook (its stored outputs) and
   leaves the ``.md`` out; a page of plain MyST with no notebook is read as it is,
   whatever its name. (A glob in ``_config.yml`` could only leave out every ``.md``
   whose name starts with a digit, so a reading list could not carry its section's
   number.)
2. **One search box.** The theme's top bar holds nothing but a second search box at wide
   screens (the sidebar has the first); it is emptied here and hidden by the book's CSS.
3. **One id each.** sphinx-exercise gives every exercise's and solution's body the same
   id (``exercise-content``, ``solution-content``); each gets its own
   (``<exercise or solution id>-content``) and keeps the old name as a class.
4. **Search that shows prose.** Sphinx's search fetches every result's page to quote
   it, which a browser refuses over ``file://``, and over http it quotes the page's
   first text, often a contents list. After the build, the prose of every page (its
   paragraphs, list items and captions, by section; no code, no contents lists) is
   written to ``_static/book-search-text.js``, loaded by the search page only, where
   ``book-search.js`` quotes it around the words searched for, the same over file://
   and http. Sphinx's own fetch is turned off (``html_show_search_summary``).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform

__all__ = ["paired_texts", "UniqueSolutionIds", "ProseText", "page_prose", "setup"]

STATIC = Path(__file__).with_name("static")
SEARCH_TEXT = "book-search-text.js"


def paired_texts(srcdir: Path) -> list[str]:
    """The ``.md`` files under ``srcdir`` that have an ``.ipynb`` beside them, as
    exclude patterns (paths relative to ``srcdir``)."""
    return sorted(
        p.relative_to(srcdir).as_posix()
        for p in srcdir.rglob("*.md")
        if p.with_suffix(".ipynb").exists() and "_build" not in p.parts
    )


def _configure(app, config):
    config.exclude_patterns = [*config.exclude_patterns,
                               *paired_texts(Path(app.srcdir))]
    options = config.html_theme_options
    options["navbar_persistent"] = []
    config.html_show_search_summary = False
    config.html_static_path = [*config.html_static_path, str(STATIC)]


class UniqueSolutionIds(SphinxTransform):
    """Give each exercise's and solution's body its own id (item 3 of the module's
    docstring)."""

    default_priority = 11  # after sphinx-exercise's MergeGatedSolutions (10)
    SHARED = ("exercise-content", "solution-content")

    def apply(self, **kwargs):
        seen: set[str] = set()
        for i, section in enumerate(self.document.findall(nodes.section)):
            shared = [x for x in section["ids"] if x in self.SHARED]
            if not shared:
                continue
            owner = section.parent
            base = nodes.make_id((owner.get("ids") or [f"{shared[0]}-{i}"])[0])
            new, n = f"{base}-content", 1
            while new in seen:
                n += 1
                new = f"{base}-content-{n}"
            seen.add(new)
            section["ids"] = [new if x in self.SHARED else x for x in section["ids"]]
            section["classes"] = [*section.get("classes", []), *shared]


class ProseText(HTMLParser):
    """The prose of a built page, by section: the text of its paragraphs, list items,
    definitions and captions inside the article, leaving out code cells, contents
    lists, the header's buttons and the page's navigation."""

    BLOCKS = {"p", "li", "dd", "dt", "figcaption", "td", "th"}
    SKIPPED_CLASSES = {"cell_input", "cell_output", "toctree-wrapper", "headerlink",
                       "highlight", "prev-next-area", "header-article-items",
                       "bd-sidebar-secondary", "caption-number", "book-downloads"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
            "source", "track", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[list] = [["", []]]  # [anchor, [text, ...]]
        self._stack: list[tuple[str, bool, bool]] = []  # tag, skipped, block
        self._article = 0
        self._text: list[str] = []

    def _skipping(self) -> bool:
        return any(skip for _, skip, _ in self._stack)

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        if tag == "article":
            self._article += 1
        if tag == "section" and a.get("id") and self._article:
            self.sections.append([a["id"], []])
        skip = bool(classes & self.SKIPPED_CLASSES) or tag in ("script", "style", "pre")
        block = tag in self.BLOCKS and not self._in_block()
        self._stack.append((tag, skip, block))

    def _in_block(self) -> bool:
        return any(block for _, _, block in self._stack)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        while self._stack:
            open_tag, _, block = self._stack.pop()
            if block:
                text = re.sub(r"\s+", " ", "".join(self._text)).strip()
                if text:
                    self.sections[-1][1].append(text)
                self._text = []
            if open_tag == "article":
                self._article -= 1
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self._article and self._in_block() and not self._skipping():
            self._text.append(data)


def page_prose(html: str) -> list[list[str]]:
    """[anchor, text] for each section of a built page that holds prose."""
    parser = ProseText()
    parser.feed(html)
    return [[anchor, " ".join(texts)] for anchor, texts in parser.sections if texts]


def _write_search_text(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    out = Path(app.outdir)
    suffix = app.builder.out_suffix
    prose = {}
    for docname in sorted(app.env.found_docs):
        page = out / f"{docname}{suffix}"
        if page.exists():
            prose[docname] = page_prose(page.read_text(encoding="utf-8"))
    (out / "_static").mkdir(exist_ok=True)
    (out / "_static" / SEARCH_TEXT).write_text(
        "// Written by book_machinery.sphinx_site: each page's prose, by section.\n"
        f"window.BOOK_SEARCH_TEXT = {json.dumps(prose, ensure_ascii=False)};\n",
        encoding="utf-8",
    )


def _search_scripts(app, pagename, templatename, context, doctree):
    if pagename == "search":
        app.add_js_file(SEARCH_TEXT)
        app.add_js_file("book-search.js")


def setup(app):
    app.connect("config-inited", _configure)
    app.add_transform(UniqueSolutionIds)
    app.connect("html-page-context", _search_scripts)
    app.connect("build-finished", _write_search_text)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
