"""Every glossary entry links back to the section that explains its term. A Sphinx
extension, through documented events only.

The glossary's promise is that "the first use of a term in a section links here; the
section then explains it". So while each document is read, the ``{term}`` references it
holds are noted with the section each sits in (and every section's title and its own
text, outside code); when the glossary is written, each entry gets "Explained in
Section N, Title", a link to

1. the section of the book's first ``{term}`` reference to it, in the order of the
   contents (a chapter's opening, which only names what its sections explain, comes
   after every section), or, for a term no section links yet,
2. the first section whose title names the term, or else
3. the first section whose own text (outside code) names it.

Nothing is typed by hand, so the links follow the chapters as they change: the glossary
is read again whenever another document is.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from .sphinx_citations import _walk

__all__ = ["ExplainedIn", "setup"]


def _own_text(section: nodes.section) -> str:
    """The words of ``section`` outside its subsections and outside code."""
    words: list[str] = []

    def visit(node) -> None:
        if isinstance(node, (nodes.section, nodes.literal_block, nodes.literal)) or (
            isinstance(node, nodes.container) and "cell" in node.get("classes", [])
        ):
            return
        if isinstance(node, nodes.Text):
            words.append(node.astext())
        for child in node.children:
            visit(child)

    for child in section.children[1:]:
        visit(child)
    return " ".join(" ".join(words).split())


def _record(app, doctree) -> None:
    """Note this document's term references and sections (``doctree-read``)."""
    env, doc = app.env, app.env.docname
    sections = []
    first = next(doctree.findall(nodes.section), None)
    for sec in doctree.findall(nodes.section):
        if sec["ids"] and sec.children and isinstance(sec[0], nodes.title):
            sections.append({"id": sec["ids"][0], "top": sec is first,
                             "title": sec[0].astext(), "text": _own_text(sec)})
    uses = []
    for ref in doctree.findall(addnodes.pending_xref):
        if ref.get("refdomain") == "std" and ref.get("reftype") == "term":
            sec = next((p for p in _parents(ref) if isinstance(p, nodes.section)), None)
            if sec is not None and sec["ids"]:
                uses.append((ref["reftarget"].lower(), sec["ids"][0]))
    glossary = any(True for _ in doctree.findall(addnodes.glossary))
    _store(env)[doc] = {"sections": sections, "uses": uses, "glossary": glossary}


def _parents(node):
    while node is not None:
        yield node
        node = node.parent


def _store(env) -> dict:
    if not hasattr(env, "book_glossary_uses"):
        env.book_glossary_uses = {}
    return env.book_glossary_uses


def _purge(app, env, docname) -> None:
    _store(env).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    for doc in docnames:
        if doc in _store(other):
            _store(env)[doc] = _store(other)[doc]


def _glossary_again(app, env, added, changed, removed) -> list[str]:
    """Read the glossary again whenever another document changes: its links follow."""
    if not (added or changed or removed):
        return []
    return [doc for doc, seen in _store(env).items()
            if seen["glossary"] and doc not in changed]


def _mentions(term: str, text: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(term), text, re.IGNORECASE) is not None


class ExplainedIn(SphinxPostTransform):
    """Append to each glossary entry a link to the section that explains its term."""

    default_priority = 20

    def run(self, **kwargs):
        glossaries = list(self.document.findall(addnodes.glossary))
        if not glossaries:
            return
        seen = _store(self.env)
        order = [doc for doc in _walk(self.env, self.env.config.root_doc)
                 if doc in seen and not seen[doc]["glossary"]]
        # a section explains; a chapter's opening only names what its sections will
        order.sort(key=lambda doc: doc.rsplit("/", 1)[-1] == "index")
        for glossary in glossaries:
            for item in glossary.findall(nodes.definition_list_item):
                terms = [t.astext().strip() for t in item.findall(nodes.term)]
                place = next(filter(None, (self._place(t, order) for t in terms)), None)
                if place is not None:
                    item[-1] += self._link(*place)

    def _place(self, term: str, order: list[str]):
        """(document, section) that explains ``term``, or None."""
        seen = _store(self.env)
        sections = {doc: {s["id"]: s for s in seen[doc]["sections"]} for doc in order}
        for doc in order:
            for target, sid in seen[doc]["uses"]:
                if target == term.lower() and sid in sections[doc]:
                    return doc, sections[doc][sid]
        for key in ("title", "text"):
            for doc in order:
                for sec in seen[doc]["sections"]:
                    if _mentions(term, sec[key]):
                        return doc, sec
        return None

    def _link(self, doc: str, sec: dict) -> nodes.paragraph:
        numbers = self.env.toc_secnumbers.get(doc, {})
        number = numbers.get("" if sec["top"] else f"#{sec['id']}")
        where = f"Section {'.'.join(map(str, number))}, " if number else ""
        uri = self.app.builder.get_relative_uri(self.env.docname, doc)
        para = nodes.paragraph(classes=["book-explained-in"])
        para += nodes.Text("Explained in ")
        para += nodes.reference("", f"{where}{sec['title']}", internal=True,
                                refuri=f"{uri}#{sec['id']}")
        para += nodes.Text(".")
        return para


def setup(app):
    app.connect("doctree-read", _record)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-get-outdated", _glossary_again)
    app.add_post_transform(ExplainedIn)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
