"""The myst-nb plugin that puts a figure's alt text on the page (entry point group
``myst_nb.mime_renderers``, name ``book-alt-text``; ``sphinx_figures`` stops the build
if it is missing)."""

from __future__ import annotations

__all__ = ["AltText"]


class AltText:
    """A myst-nb mime renderer plugin (entry point ``myst_nb.mime_renderers``): a
    notebook image whose output metadata carries ``alt`` is rendered with that alt text
    (myst-nb itself reads only width and height from the metadata)."""

    mime_priority_overrides = ()

    @staticmethod
    def handle_mime(renderer, data, inline):
        """The image with its alt text, or None to leave the output to myst-nb."""
        alt = (
            data.output_metadata.get(data.mime_type, {}).get("alt")
            if data.mime_type == "image/png"
            else None
        )
        if not alt:
            return None
        nodes = (
            renderer.render_image_inline(data)
            if inline
            else renderer.render_image(data)
        )
        for node in nodes:
            node["alt"] = str(alt)
        return nodes
