"""Sphinx glue for the book's figures (see ``transformer_arithmetic.figures.show``).

A figure cell glues its figure *and* displays it, so that a reader in JupyterLab
sees the picture under the code. On the published page the picture belongs in the
captioned ``{glue:figure}`` instead, so this extension

1. drops a glued figure from its code cell's outputs (it stays in the glue store), and
2. gives every rendered notebook image the alt text that travelled in the output's
   metadata (myst-nb reads only width and height from there), and
3. drops scripts that appear twice on a page: sphinx-thebe's inline settings are added
   twice by Jupyter Book 1.x and the second copy throws a console error.
"""
from __future__ import annotations

from myst_nb import sphinx_
from myst_nb.core import render

_IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")


def _is_glued_figure(output) -> bool:
    meta = output.get("metadata", {})
    return (
        output.get("output_type") == "display_data"
        and "scrapbook" in meta
        and any(m in output.get("data", {}) for m in _IMAGE_TYPES)
    )


_render_outputs = sphinx_.SphinxNbRenderer._render_nb_cell_code_outputs


def _render_outputs_without_glued_figures(self, token, outputs):
    return _render_outputs(self, token, [o for o in outputs if not _is_glued_figure(o)])


_render_image = render.NbElementRenderer.render_image


def _render_image_with_alt(self, data):
    nodes = _render_image(self, data)
    alt = data.output_metadata.get(data.mime_type, {}).get("alt")
    if alt:
        for node in nodes:
            node["alt"] = str(alt)
    return nodes


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {})
        key = (getattr(script, "filename", str(script)) or None,  # inline scripts: None or ""
               tuple(sorted((k, str(v)) for k, v in attributes.items() if k not in ("defer", "async"))))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _drop_duplicate_scripts, priority=999)  # after the themes
    sphinx_.SphinxNbRenderer._render_nb_cell_code_outputs = _render_outputs_without_glued_figures
    render.NbElementRenderer.render_image = _render_image_with_alt
    return {"parallel_read_safe": True, "parallel_write_safe": True}
