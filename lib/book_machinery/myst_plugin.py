"""The myst-nb plugin that puts a figure on the page as the book wants it (entry point
group ``myst_nb.mime_renderers``, name ``book-alt-text``; ``sphinx_figures`` stops the
build if it is missing).

A figure's output (``figures.show``) carries its alt text, its width in points and the
size of its smallest letters in the output's metadata. myst-nb itself reads only width
and height from there, so this plugin
- puts the alt text on the image;
- gives the image its own width in CSS pixels, which also makes Sphinx wrap it in a link
  to the full-size file (a tap opens the figure alone, where it can be zoomed);
- gives it the class ``book-phone-<N>``: on a narrow screen the figure is shown at least
  ``N`` pixels wide, the width at which its smallest letters are ``READABLE_PX`` tall,
  and scrolls sideways if the screen is narrower (``sphinx_figures`` writes the rules).
"""

from __future__ import annotations

import math

__all__ = ["AltText", "READABLE_PX", "PHONE_STEP", "css_px", "phone_width"]

READABLE_PX = 9.0
"""The smallest letters of a figure are at least this many CSS pixels on any screen."""

PHONE_STEP = 20
"""Narrow-screen widths are rounded up to a multiple of this many pixels (one CSS rule
each)."""

IMAGE_TYPES = ("image/svg+xml", "image/png")


def css_px(points: float) -> float:
    """A length in points as CSS pixels (96 a inch, 72 points an inch)."""
    return points * 96 / 72


def phone_width(width_pt: float, smallest_pt: float) -> int:
    """The width in CSS pixels at which a figure ``width_pt`` wide shows its smallest
    letters (``smallest_pt``) at ``READABLE_PX``, rounded up to ``PHONE_STEP``."""
    if width_pt <= 0 or smallest_pt <= 0:
        raise ValueError(f"a figure needs a positive width and font, got "
                         f"{width_pt} and {smallest_pt}")
    needed = css_px(width_pt) * READABLE_PX / css_px(smallest_pt)
    return int(math.ceil(needed / PHONE_STEP) * PHONE_STEP)


class AltText:
    """A myst-nb mime renderer plugin (entry point ``myst_nb.mime_renderers``): a
    notebook image whose output metadata carries ``alt`` is rendered with that alt
    text, its own width and its narrow-screen class (see the module's docstring)."""

    mime_priority_overrides = ()

    @staticmethod
    def handle_mime(renderer, data, inline):
        """The image with its alt text, or None to leave the output to myst-nb."""
        meta = (
            data.output_metadata.get(data.mime_type, {})
            if data.mime_type in IMAGE_TYPES
            else {}
        )
        if not meta.get("alt"):
            return None
        nodes = (
            renderer.render_image_inline(data)
            if inline
            else renderer.render_image(data)
        )
        for node in nodes:
            node["alt"] = str(meta["alt"])
            if meta.get("width_pt") and meta.get("smallest_font_pt"):
                node["width"] = f"{css_px(float(meta['width_pt'])):.0f}px"
                width = phone_width(meta["width_pt"], meta["smallest_font_pt"])
                node["classes"] = [*node.get("classes", []), f"book-phone-{width}"]
        return nodes
