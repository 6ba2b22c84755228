"""What JupyterLab needs to show a section's references as the site does, written by
the site's build. A Sphinx extension, through documented events only.

When an HTML build finishes, ``_build/book-references.json`` (beside ``html/``) holds,
from Sphinx's own numbering (the numbers the pages print):

- every label a ``{numref}``, ``{ref}`` or ``{eq}`` can name: its document, its kind
  (figure, table, exercise, equation, section) and its number ("1.16");
- every document's title and number, for ``{doc}``;
- every cited work's label as the text cites it ("Kwon et al., 2023");
- every glossary term, with its definition;
- ``numfig_format``, the words before a number ("Fig. %s").

``lab_prose`` reads it to render a section's prose in JupyterLab. The file is the
build's, like the site: a section whose numbers changed shows the new ones once the
book is built again (``make lab`` builds it first).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from docutils import nodes

from .sphinx_citations import label_of

__all__ = ["REFERENCES", "references", "setup"]

REFERENCES = "book-references.json"
"""The file's name, in the build's folder (``_build/``)."""


def _number(numbers) -> str:
    return ".".join(map(str, numbers))


def _section_number(env, doc: str, node_id: str, cache: dict) -> str:
    """The number Sphinx gives the section ``node_id`` names in ``doc`` (a label's id is
    one of the section's ids; Sphinx numbers it by its first)."""
    if doc not in cache:
        cache[doc] = {i: sec["ids"][0] for sec in env.get_doctree(doc).findall(
            nodes.section) for i in sec["ids"]}
        first = next(iter(cache[doc].values()), None)
        cache[doc] = {i: ("" if f == first else f"#{f}") for i, f in cache[doc].items()}
    key = cache[doc].get(node_id, "")
    return _number(env.toc_secnumbers.get(doc, {}).get(key, ()))


def references(env, config) -> dict:
    """The book's references as ``REFERENCES`` holds them (see the module docstring)."""
    std = env.get_domain("std")
    kinds = {}  # (document, node id) -> (kind, number)
    for doc, types in env.toc_fignumbers.items():
        for kind, ids in types.items():
            for node_id, numbers in ids.items():
                kinds[doc, node_id] = (kind, _number(numbers))
    targets, sections = {}, {}
    for label, (doc, node_id, title) in std.labels.items():
        if not doc or doc not in env.titles:
            continue
        if (doc, node_id) in kinds:
            kind, number = kinds[doc, node_id]
        else:
            kind, number = "section", _section_number(env, doc, node_id, sections)
        targets[label] = {"doc": doc, "id": node_id, "kind": kind, "number": number,
                          "title": str(title)}
    for label, (doc, _eqno) in env.get_domain("math").equations.items():
        node_id = f"equation-{label}"
        kind, number = kinds.get((doc, node_id), ("displaymath", str(_eqno)))
        targets[label] = {"doc": doc, "id": node_id, "kind": "equation",
                          "number": number, "title": ""}
    docs = {doc: {"title": env.titles[doc].astext(),
                  "number": _number(env.toc_secnumbers.get(doc, {}).get("", ()))}
            for doc in env.found_docs if doc in env.titles}
    cite = env.get_domain("cite")
    citations = {c.key: label_of(c.entry) for c in cite.citations}
    terms = {}
    for (kind, name), (doc, node_id) in std.objects.items():
        if kind == "term":
            terms[name.lower()] = {"doc": doc, "id": node_id, "definition": ""}
    for doc in {t["doc"] for t in terms.values()}:
        for item in env.get_doctree(doc).findall(nodes.definition_list_item):
            for term in item.findall(nodes.term):
                key = term.astext().strip().lower()
                if key in terms:
                    terms[key]["definition"] = " ".join(item[-1].astext().split())
    return {"targets": targets, "docs": docs, "citations": citations, "terms": terms,
            "numfig_format": dict(config.numfig_format)}


def _write(app, exception) -> None:
    if exception is not None or app.builder.name != "html":
        return
    target = Path(app.outdir).parent / REFERENCES
    part = target.with_name(f".{target.name}.{os.getpid()}")
    part.write_text(json.dumps(references(app.env, app.config), indent=0,
                               sort_keys=True, ensure_ascii=False), encoding="utf-8")
    os.replace(part, target)


def setup(app):
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

