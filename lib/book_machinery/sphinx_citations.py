"""Citations that match: the same label in the text and in the bibliography, a link on
every entry, and back-links from each entry to the sections that cite it.

1. **Labels.** The text cites in sphinxcontrib-bibtex's ``author_year`` style ("[Kwon
   et al., 2023]"), while the bibliography takes its labels from the pybtex formatting
   style, whose ``plain`` style numbers them. This module registers, through pybtex's
   documented ``register_plugin``, a label style (``book_author_year``) that renders
   each entry's label with the very template the ``author_year`` reference style cites
   it with, and a formatting style (``book``: pybtex's ``plain`` with that label style,
   sorted by label so that a reader finds "[Kwon et al., 2023]" where it would be). Two
   entries that would get the same label stop the build with a warning naming both.
2. **Links.** ``book`` prints an ``eprint`` as an arXiv link, a ``doi`` as a doi.org
   link and a ``url`` as itself, and warns about an entry that has none of the three.
3. **Back-links.** sphinxcontrib-bibtex links an entry back only to citations in the
   bibliography's own document. A post-transform run just after it appends to each
   entry "Cited in" with a link to each section that cites it, named by the section's
   number and title (and "second", "third" links where a section cites it again).
4. **Speed.** sphinxcontrib-bibtex asks pybtex for its plain-text backend once per
   citation, and pybtex looks it up among the installed packages' entry points every
   time (a second or more per hundred citations). Registering the same class once turns
   every later lookup into a dictionary hit.
"""

from __future__ import annotations

import functools

from docutils import nodes
from pybtex.backends.plaintext import Backend as PlainTextBackend
from pybtex.plugin import find_plugin, register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle
from pybtex.style.template import field, href, optional, sentence
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

__all__ = ["AuthorYearLabels", "ByLabel", "BookStyle", "CitedIn", "label_of", "setup"]

logger = logging.getLogger(__name__)

LABEL_STYLE = "book_author_year"
SORTING_STYLE = "book_label"
FORMAT_STYLE = "book"
ORDINALS = ("second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")


_PLAIN_TEXT = PlainTextBackend()
"""One plain-text backend for every label (``render_as("text")`` would look the backend
up among the installed packages' entry points at every call: a quarter of a build)."""

REFERENCE_STYLE = {"name": "author_year"}
"""The reference style the text cites with (``bibtex_reference_style``, read when the
configuration is)."""


@functools.cache
def _label_template(style_name: str):
    """The template and data style the text's parenthetical citations use."""
    from sphinxcontrib.bibtex.plugin import find_plugin as find_bibtex_plugin
    from sphinxcontrib.bibtex.style.template import join as bib_join, year

    style = find_bibtex_plugin("sphinxcontrib.bibtex.style.referencing", style_name)()
    parenthetical = next(
        s for s in getattr(style, "styles", [style]) if "p" in s.role_names()
    )
    template = bib_join(sep=parenthetical.author_year_sep)[
        parenthetical.person.author_or_editor_or_title(full=False), year
    ]
    return template, parenthetical


def label_of(entry) -> str:
    """The label the text's parenthetical citations give ``entry`` ("Kwon et al.,
    2023"), as plain text."""
    template, style = _label_template(REFERENCE_STYLE["name"])
    return template.format_data({"entry": entry, "style": style}).render(_PLAIN_TEXT)


class AuthorYearLabels(BaseLabelStyle):
    """pybtex labels in the text's own author-year form; a label two entries share is
    reported (the text could not tell them apart)."""

    def format_labels(self, sorted_entries):
        seen: dict[str, str] = {}
        for entry in sorted_entries:
            label = label_of(entry)
            if label in seen:
                logger.warning(
                    f"the references {seen[label]!r} and {entry.key!r} are both cited "
                    f"as [{label}]: the text cannot tell them apart"
                )
            seen.setdefault(label, entry.key)
            yield label


class ByLabel(BaseSortingStyle):
    """Entries in the order of their labels, as a reader looks one up ("Bengio et al.,
    1994" before "Bengio et al., 2003"), then by title."""

    def sorting_key(self, entry):
        return (label_of(entry).lower(), entry.fields.get("title", "").lower())


_WARNED: set[str] = set()


class BookStyle(PlainStyle):
    """pybtex's plain style with author-year labels and a link on every entry."""

    default_label_style = LABEL_STYLE
    default_sorting_style = SORTING_STYLE

    def format_url(self, e):
        """The address as a link, without a 'URL:' before it."""
        url = field("url", raw=True)
        return href(url)[url]

    def format_web_refs(self, e):
        """arXiv, then the DOI, then an address; warn when an entry has none."""
        if not any(k in e.fields for k in ("eprint", "doi", "url")) and (
            e.key not in _WARNED
        ):
            _WARNED.add(e.key)
            logger.warning(
                f"the reference {e.key!r} has no eprint (arXiv), doi or url: add one "
                "so a reader can find it"
            )
        return sentence(sep=". ")[
            optional[self.format_eprint(e)],
            optional[self.format_doi(e)],
            optional[self.format_url(e)],
        ]


class CitedIn(SphinxPostTransform):
    """Append to every bibliography entry a link to each place that cites it."""

    default_priority = 6  # after sphinxcontrib-bibtex's BibliographyTransform (5)

    def run(self, **kwargs):
        domain = self.env.get_domain("cite")
        entries = [
            (citation, bib)
            for bib_key, bib in domain.bibliographies.items()
            if bib_key.docname == self.env.docname
            for citation in domain.citations
            if citation.bibliography_key == bib_key
        ]
        if not entries:
            return
        places: dict[str, list] = {}
        for ref in domain.citation_refs:
            for target in ref.targets:
                places.setdefault(target.key, []).append(ref)
        contents = _walk(self.env, self.env.config.root_doc)
        order = {doc: i for i, doc in enumerate(contents)}
        for citation, bib in entries:
            node = bib.citation_nodes[citation.key]
            refs = sorted(places.get(citation.key, []),  # stable: the text's own order
                          key=lambda r: order.get(r.docname, len(order)))
            if refs:
                node += self._cited_in(refs)

    def _cited_in(self, refs) -> nodes.paragraph:
        by_doc: dict[str, list] = {}
        for ref in refs:
            by_doc.setdefault(ref.docname, []).append(ref)
        para = nodes.paragraph(classes=["book-cited-in"])
        para += nodes.Text("Cited in ")
        for i, (docname, here) in enumerate(by_doc.items()):
            if i:
                para += nodes.Text("; ")
            number = self.env.toc_secnumbers.get(docname, {}).get("")
            title = self.env.titles[docname].astext()
            name = ".".join(map(str, number)) + " " + title if number else title
            uri = self.app.builder.get_relative_uri(self.env.docname, docname)
            para += nodes.reference(
                "", name, internal=True, refuri=f"{uri}#{here[0].citation_ref_id}"
            )
            again = [
                nodes.reference(
                    "", ORDINALS[min(k, len(ORDINALS)) - 1], internal=True,
                    refuri=f"{uri}#{ref.citation_ref_id}",
                    reftitle=f"the {ORDINALS[min(k, len(ORDINALS)) - 1]} place "
                    f"{name} cites it",
                )
                for k, ref in enumerate(here[1:], start=1)
            ]
            if again:
                para += nodes.Text(" (")
                for k, link in enumerate(again):
                    if k:
                        para += nodes.Text(", ")
                    para += link
                para += nodes.Text(")")
        para += nodes.Text(".")
        return para


def _walk(env, doc, seen=None):
    """The documents from ``doc`` down, in the order of the book's contents."""
    seen = set() if seen is None else seen
    if doc in seen:
        return
    seen.add(doc)
    yield doc
    for child in env.toctree_includes.get(doc, []):
        yield from _walk(env, child, seen)


def _reference_style(app, config):
    REFERENCE_STYLE["name"] = config.bibtex_reference_style


def setup(app):
    register_plugin(
        "pybtex.backends",
        "plaintext",
        find_plugin("pybtex.backends", "plaintext"),
        force=True,
    )
    register_plugin("pybtex.style.labels", LABEL_STYLE, AuthorYearLabels, force=True)
    register_plugin("pybtex.style.sorting", SORTING_STYLE, ByLabel, force=True)
    register_plugin("pybtex.style.formatting", FORMAT_STYLE, BookStyle, force=True)
    app.add_post_transform(CitedIn)
    app.connect("config-inited", _reference_style)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
