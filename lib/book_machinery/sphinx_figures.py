"""Sphinx glue for the book's pages, through documented hooks only.

1. Figures carry their alt text in the notebook output's metadata (see
   ``book_machinery.figures.show``). myst-nb reads only width and height from there, so
   the library registers a myst-nb mime renderer plugin (entry point group
   ``myst_nb.mime_renderers``, name ``book-alt-text``) that puts the alt text on the
   image. This extension stops the build at once if that plugin is not installed.
2. Jupyter Book 1.x adds sphinx-thebe's inline settings script twice and the second copy
   throws a console error; the ``html-page-context`` event drops repeated scripts.
3. sphinxcontrib-bibtex asks pybtex for its plain-text backend once per citation, and
   pybtex looks it up among the installed packages' entry points every time (a second or
   more per hundred citations). Registering the same class once with pybtex's
   ``register_plugin`` (its documented way to add a plugin at run time) turns every
   later lookup into a dictionary hit.

A figure's code cell is tagged ``remove-output``, so the picture appears once on the
page, where ``{glue:figure}`` places it with its caption.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from sphinx.errors import ExtensionError

PLUGIN = ("myst_nb.mime_renderers", "book-alt-text")


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


def _register_bibtex_backend() -> None:
    from pybtex.plugin import find_plugin, register_plugin

    register_plugin(
        "pybtex.backends",
        "plaintext",
        find_plugin("pybtex.backends", "plaintext"),
        force=True,
    )


def setup(app):
    _register_bibtex_backend()
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
    return {"parallel_read_safe": True, "parallel_write_safe": True}
