"""The Jupyter server half of a section's prose in JupyterLab (``lab_prose`` renders).

The project's configuration layer (``jupyter/jupyter_server_config.d``) enables this
extension in ``make lab``'s server. It answers ``POST /book-prose/render`` {path, cells:
[markdown], glue: {name: bundle}} with {html: [fragment]} for a notebook of the book
(404 for any other file), with the references of the site's last build.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .execute import ROOT
from .lab_prose import Context, render

__all__ = ["book", "references_path", "joined", "section_doc"]


def book() -> Path:
    """The book's folder (``BOOK_LAB_BOOK`` names another: a copy, in the tests)."""
    return Path(os.environ.get("BOOK_LAB_BOOK") or ROOT / "book")


def references_path() -> Path:
    """Where the site build wrote the book's references (``BOOK_LAB_REFERENCES`` names
    another file)."""
    return Path(os.environ.get("BOOK_LAB_REFERENCES")
                or book() / "_build" / "book-references.json")


def joined(glue: dict) -> dict:
    """``glue`` with each MIME type's value as one string (a notebook may store a text
    as a list of its lines)."""
    return {name: {mime: "".join(v) if isinstance(v, list) else v
                   for mime, v in bundle.items()} for name, bundle in glue.items()}


def section_doc(path: Path) -> str | None:
    """The document name of a section's source (``book/chapters/x/y.md`` ->
    ``chapters/x/y``), or None outside the book."""
    try:
        return path.resolve().relative_to(book().resolve()).with_suffix("").as_posix()
    except ValueError:
        return None


def _references() -> dict:
    path = references_path()
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return {}
    if _READ.get("stamp") != stamp:
        _READ.update(stamp=stamp, data=json.loads(path.read_text(encoding="utf-8")))
    return _READ["data"]


_READ: dict = {}


def _handler_class():
    from jupyter_server.base.handlers import APIHandler
    from tornado import web

    class RenderHandler(APIHandler):
        """``POST /book-prose/render`` {path, cells: [markdown], glue: {name: bundle}}:
        {html: [fragment]}, or 404 for a file outside the book."""

        @web.authenticated
        def post(self):
            body = json.loads(self.request.body or b"{}")
            root = Path(self.settings["server_root_dir"]).expanduser()
            doc = section_doc(root / body.get("path", ""))
            if doc is None:
                raise web.HTTPError(404, "not a section of the book")
            ctx = Context(glue=joined(body.get("glue", {})), references=_references(),
                          doc=doc)
            self.finish(json.dumps({"html": [render(s, ctx) for s in body["cells"]],
                                    "numbered": bool(ctx.references)}))

    return RenderHandler


def _jupyter_server_extension_points():
    return [{"module": "book_machinery.lab_server"}]


def _load_jupyter_server_extension(serverapp):
    from jupyter_server.utils import url_path_join

    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$", [(url_path_join(base, "book-prose", "render"), _handler_class())])
    serverapp.log.info("book_machinery.lab_server: prose as the site shows it")
