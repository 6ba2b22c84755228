"""Sphinx glue for the print edition (`make pdf`, ``book_machinery.pdf``), through
documented hooks only.

1. The PDF is printed from Jupyter Book's single-page build (``--builder singlehtml``).
   Sphinx looks up a node's HTML visitors under the builder's name and falls back to the
   ``html`` format only when no extension registered any ``singlehtml`` visitor at all;
   sphinx-exercise registers some, so nodes that other extensions registered for
   ``html`` alone (myst-nb's folded code cells, for one) would stop the single-page
   build. The single-page builder gets every ``html`` visitor it lacks.
2. The site offers the PDF from its header, when there is one: if ``make pdf`` has
   written ``_build/pdf/<title>.pdf`` beside this build's output, the page header gets a
   PDF button (``templates/book-pdf-button.html``) and the file is copied to
   ``_downloads/`` in the site. Without a PDF there is no button, so the site never
   links a file it does not have. The config value ``book_pdf`` changes when a PDF
   appears or goes, and it is an ``html`` value, so Sphinx then rewrites every page.
3. What is folded on the site (myst-nb's hide-input and hide-output cells: the drawing
   code, the printed values) is not printed (book/_static/print.css), so the single-page
   build leaves it out altogether: less to highlight, less for the browser to lay out.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)
BUTTON = "book-pdf-button.html"


def pdf_name(title: str) -> str:
    """The PDF's file name: the book's title in lower case, words joined by hyphens (as
    ``pdf.py``)."""
    return (re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "book") + ".pdf"


def _built_pdf(app) -> Path:
    return (
        Path(app.outdir).parent
        / "pdf"
        / pdf_name(app.config.html_title or app.config.project or "")
    )


def _share_html_visitors(app):
    if app.builder.format != "html" or app.builder.name == "html":
        return
    handlers = app.registry.translation_handlers
    own = handlers.setdefault(app.builder.name, {})
    for node, visitors in handlers.get("html", {}).items():
        own.setdefault(node, visitors)


def _offer_pdf(app, config):
    config.book_pdf = (
        f"_downloads/{_built_pdf(app).name}" if _built_pdf(app).exists() else ""
    )
    config.templates_path = [
        *config.templates_path,
        str(Path(__file__).with_name("templates")),
    ]
    options = config.html_theme_options
    end = options.get("article_header_end", "article-header-buttons.html")
    end = [e.strip() for e in end.split(",")] if isinstance(end, str) else list(end)
    if BUTTON not in end:
        options["article_header_end"] = [BUTTON, *end]


def _page_context(app, pagename, templatename, context, doctree):
    context["book_pdf"] = app.config.book_pdf


def _copy_pdf(app, exception):
    if exception is None and app.builder.name == "html" and app.config.book_pdf:
        target = Path(app.outdir) / app.config.book_pdf
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_built_pdf(app), target)
        logger.info(f"the header offers {_built_pdf(app)} as {app.config.book_pdf}")


class DropFoldedCells(SphinxPostTransform):
    """The single-page build is printed: folded code and outputs are left out of it."""

    default_priority = 250  # after myst-nb's HideInputCells (199) has folded them
    builders = ("singlehtml",)

    def run(self, **kwargs):
        from myst_nb.sphinx_ import HideCodeCellNode

        for node in list(self.document.findall(HideCodeCellNode)):
            node.parent.remove(node)


def setup(app):
    app.add_post_transform(DropFoldedCells)
    app.add_config_value("book_pdf", "", "html")
    app.connect("config-inited", _offer_pdf)
    app.connect("builder-inited", _share_html_visitors)
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
