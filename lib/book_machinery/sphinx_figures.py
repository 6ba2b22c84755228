"""Sphinx glue for the book's figures and scripts, through documented hooks only.

1. Figures carry their alt text in the notebook output's metadata (see
   ``book_machinery.figures.show``). myst-nb reads only width and height from there, so
   the library registers a myst-nb mime renderer plugin (entry point group
   ``myst_nb.mime_renderers``, name ``book-alt-text``) that puts the alt text on the
   image. This extension stops the build at once if that plugin is not installed.
2. Jupyter Book 1.x adds sphinx-thebe's inline settings script twice and the second copy
   throws a console error; the ``html-page-context`` event drops repeated scripts.
3. A figure is at least as wide on a narrow screen as its smallest letters need
   (``myst_plugin.phone_width``): after the build, one CSS rule for each width the pages
   use is written to ``_static/book-figures.css``, and the figure's caption says it
   scrolls sideways where the screen is narrower than that.

A figure's code cell is tagged ``remove-output``, so the picture appears once on the
page, where ``{glue:figure}`` places it with its caption.
"""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

from sphinx.errors import ExtensionError

PLUGIN = ("myst_nb.mime_renderers", "book-alt-text")
FIGURE_CSS = "book-figures.css"
SCROLL_HINT = "Scroll the figure sideways, or tap it to open it full size."


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {})
        key = (
            getattr(script, "filename", str(script))
            or None,  # inline scripts: None or ""
            tuple(
                sorted(
                    (k, str(v))
                    for k, v in attributes.items()
                    if k not in ("defer", "async")
                )
            ),
        )
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def figure_rules(widths: set[int]) -> str:
    """The CSS for the narrow-screen classes ``book-phone-<N>`` used on the pages:
    at least ``N`` pixels wide on screen, and a hint above the caption wherever the
    figure's box is narrower than that (it then scrolls)."""
    lines = ["/* Written by book_machinery.sphinx_figures: a rule per figure width. */",
             "@media screen {"]
    for n in sorted(widths):
        lines.append(f"  img.book-phone-{n} {{ min-width: {n}px; }}")
        lines.append(
            f"  @container book-figure (max-width: {n - 0.02}px) {{ "
            f"figure:has(img.book-phone-{n}) > figcaption::before {{ "
            f"content: {SCROLL_HINT!r}; }} }}"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write_figure_rules(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    widths = {
        int(n)
        for page in out.rglob("*.html")
        for n in re.findall(r"book-phone-(\d+)", page.read_text(encoding="utf-8"))
    }
    (out / "_static").mkdir(exist_ok=True)
    (out / "_static" / FIGURE_CSS).write_text(figure_rules(widths), encoding="utf-8")


def setup(app):
    group, name = PLUGIN
    if name not in entry_points(group=group).names:
        raise ExtensionError(
            f"the {group} plugin {name!r} is not installed, so figures would lose "
            "their "
            "alt text: run `pip install -e .` in the repository (make does this)"
        )
    app.connect(
        "html-page-context", _drop_duplicate_scripts, priority=999
    )  # after the themes
    app.add_css_file(FIGURE_CSS)
    app.connect("build-finished", _write_figure_rules)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
