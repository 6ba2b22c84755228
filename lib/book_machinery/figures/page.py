"""How a figure reaches a page: its layout checked, drawn as SVG with deterministic
bytes (dense grids of cells embedded as a sharp raster inside it), and glued with its
alt text for ``{glue:figure}``.

The output also carries a small PNG of the same drawing (the canvas the layout check
drew on, cropped alike). The site and the PDF use the SVG; Jupyter shows SVG only in a
notebook it trusts, so a notebook opened in JupyterLab or downloaded from the site shows
the PNG until its cells run again, rather than the figure's text."""

from __future__ import annotations

import io
import math
import re

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.collections import Collection

__all__ = ["check_layout", "svg_text", "png_preview", "smallest_font", "BookFigure",
           "svg_width", "show", "SVG_SETTINGS", "DENSE_CELLS", "RASTER_DPI",
           "PAD_INCHES", "VECTOR"]

SVG_SETTINGS = {
    "svg.hashsalt": "the-arithmetic-of-transformers",  # ids fixed, not random
    "svg.fonttype": "path",  # glyphs as outlines: the same letters in every browser
    "svg.image_inline": True,
}
"""matplotlib settings for the book's SVG: with these and no ``Date`` or ``Creator`` in
the metadata, the same figure gives the same bytes on every run."""

DENSE_CELLS = 600
"""A collection of more shapes than this (a grid of many cells) is embedded in the SVG
as a raster at ``RASTER_DPI``: thousands of vector rectangles would make a page heavy
and slow to draw, while its labels, axes and text stay vector."""

RASTER_DPI = 300
"""Dots per inch of the raster parts inside an SVG: twice what a screen needs at full
width, enough for print."""

PAD_INCHES = 0.04
"""The margin left around what is drawn when a figure is cropped."""


def check_layout(fig, tolerance: float = 1.0, draw: bool = True) -> None:
    """Raise ValueError if a label drawn on an axes (``ax.text`` / ``ax.annotate``)
    sticks out of that axes by more than ``tolerance`` points, or if two such labels
    overlap: a changed example model must not push a label off the plot or onto another.
    ``draw=False`` checks the canvas as it was last drawn."""
    if draw:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    tolerance = tolerance * fig.dpi / 72  # points to pixels
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        texts = [t for t in ax.texts if t.get_visible() and t.get_text().strip()]
        extents = [t.get_window_extent(renderer) for t in texts]
        for t, e in zip(texts, extents):
            if (
                e.x0 < box.x0 - tolerance
                or e.x1 > box.x1 + tolerance
                or e.y0 < box.y0 - tolerance
                or e.y1 > box.y1 + tolerance
            ):
                raise ValueError(
                    f"the label {t.get_text()!r} lies outside its axes "
                    f"({ax.get_title() or 'untitled'}): move it or widen "
                    "the limits"
                )
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                a, b = extents[i], extents[j]
                w = min(a.x1, b.x1) - max(a.x0, b.x0)
                h = min(a.y1, b.y1) - max(a.y0, b.y0)
                if w > tolerance and h > tolerance:
                    raise ValueError(
                        f"the labels {texts[i].get_text()!r} and "
                        f"{texts[j].get_text()!r} "
                        f"overlap ({ax.get_title() or 'untitled'})"
                    )


def _rasterize_dense(fig) -> None:
    """Mark every collection of more than ``DENSE_CELLS`` shapes to be embedded as a
    raster (see ``DENSE_CELLS``)."""
    for ax in fig.axes:
        for artist in ax.get_children():
            if isinstance(artist, Collection) and len(artist.get_paths()) > DENSE_CELLS:
                artist.set_rasterized(True)


def svg_text(fig) -> str:
    """The figure as SVG text, cropped to what is drawn (blank margins cost a phone
    reader a sideways scroll): lines and letters as vector outlines, dense collections
    as a ``RASTER_DPI`` raster inside, byte-identical on every run (``SVG_SETTINGS``, no
    date, no software stamp).

    The figure must have been drawn (``show`` draws it once, for the layout check): the
    layout and the crop are taken from that drawing, and the SVG renderer draws it once
    more, with no layout computed again (``savefig`` would draw twice and lay it out
    twice: three times the cost)."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    _rasterize_dense(fig)
    crop = _drawn_box(fig)
    engine, dpi, canvas = fig.get_layout_engine(), fig.dpi, fig.canvas
    fig.set_layout_engine("none")  # keep the positions the drawing settled on
    buf = io.StringIO()
    try:
        fig.dpi = RASTER_DPI  # the SVG renderer draws its raster parts at this
        with matplotlib.rc_context(SVG_SETTINGS):
            FigureCanvasSVG(fig).print_svg(
                buf, metadata={"Date": None, "Creator": None}
            )
    finally:
        fig.dpi = dpi
        fig.set_canvas(canvas)
        fig.set_layout_engine(engine)
    return _cropped(buf.getvalue(), crop, fig.get_figheight())


def _cropped(svg: str, box, height_in: float) -> str:
    """``svg`` showing only ``box`` (inches, from the figure's bottom left)."""
    def pt(inches: float) -> str:
        return f"{inches * 72:.6f}".rstrip("0").rstrip(".")

    width, height = box.x1 - box.x0, box.y1 - box.y0
    view = f"{pt(box.x0)} {pt(height_in - box.y1)} {pt(width)} {pt(height)}"
    head = re.compile(r'width="[0-9.]+pt" height="[0-9.]+pt" viewBox="[^"]*"')
    if not head.search(svg):
        raise ValueError("the SVG has no width, height and viewBox to crop")
    return head.sub(
        f'width="{pt(width)}pt" height="{pt(height)}pt" viewBox="{view}"', svg, count=1
    )


def _drawn_box(fig):
    """What the last drawing covers, with ``PAD_INCHES`` around it, in inches."""
    return fig.get_tightbbox(fig.canvas.get_renderer()).padded(PAD_INCHES)


def svg_width(svg: str) -> float:
    """The width in points an SVG written by ``svg_text`` declares."""
    found = re.search(r'<svg[^>]*\swidth="([0-9.]+)pt"', svg)
    if found is None:
        raise ValueError("the SVG declares no width in points")
    return float(found.group(1))


def png_preview(fig) -> bytes:
    """The canvas as last drawn (by the layout check, at the style's dots per inch),
    cropped to what is drawn like the SVG, as PNG bytes with no software stamp."""
    from PIL import Image

    width, height = fig.canvas.get_width_height(physical=True)
    image = Image.frombuffer(
        "RGBA", (width, height), bytes(fig.canvas.buffer_rgba()), "raw", "RGBA", 0, 1
    )
    box = _drawn_box(fig)  # inches, from the bottom
    dpi = fig.dpi
    left, right = max(0, int(box.x0 * dpi)), min(width, math.ceil(box.x1 * dpi))
    top = max(0, int(height - box.y1 * dpi))
    bottom = min(height, math.ceil(height - box.y0 * dpi))
    crop = (left, top, right, bottom)
    buf = io.BytesIO()
    image.crop(crop).convert("RGB").save(
        buf, format="png", dpi=(dpi, dpi), optimize=True
    )
    return buf.getvalue()


def smallest_font(fig) -> float:
    """The size in points of the smallest visible text in the figure (titles, labels,
    ticks, legends, annotations): what decides whether it can be read on a phone."""
    renderer = fig.canvas.get_renderer()
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(matplotlib.text.Text)
        if t.get_visible()
        and t.get_text().strip()
        and t.get_window_extent(renderer).width > 0
    ]
    return float(min(sizes)) if sizes else float(matplotlib.rcParams["font.size"])


class BookFigure:
    """A rendered figure and its alt text, displayed as SVG with a PNG beside it (the
    alt text, the width in points and the smallest font travel in the output's
    metadata)."""

    def __init__(self, svg: str, png: bytes, alt: str, width_pt: float,
                 smallest_pt: float) -> None:
        if not alt or not alt.strip():
            raise ValueError("every figure needs alt text that says what it shows")
        if not svg.lstrip().startswith("<?xml") or "<svg" not in svg:
            raise ValueError("BookFigure needs the SVG text of a figure")
        if not png.startswith(b"\x89PNG"):
            raise ValueError("BookFigure needs the PNG bytes of the same figure")
        self.svg, self.png, self.alt = svg, png, " ".join(alt.split())
        self.width_pt, self.smallest_pt = round(width_pt, 2), round(smallest_pt, 2)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The SVG, the PNG and the text below, with the figure's facts as metadata."""
        import base64

        data = {"image/svg+xml": self.svg,
                "image/png": base64.b64encode(self.png).decode("ascii"),
                "text/plain": repr(self)}
        meta = {"alt": self.alt, "width_pt": self.width_pt,
                "smallest_font_pt": self.smallest_pt}
        return data, {"image/svg+xml": meta, "image/png": {"alt": self.alt}}

    def __repr__(self) -> str:
        return f"Figure: {self.alt}"


VECTOR = True
"""Whether ``show`` draws the SVG. The example-swap runs, which keep no figure, set it
to False in their kernels: the layout is still checked and a figure still glued (its
PNG wrapped in an SVG), at a third of the cost."""


def _png_as_svg(png: bytes, width_pt: float, height_pt: float) -> str:
    """A minimal SVG showing ``png`` at the given size (for runs with ``VECTOR``
    off)."""
    import base64

    data = base64.b64encode(png).decode("ascii")
    return (
        '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width_pt:.2f}pt" '
        f'height="{height_pt:.2f}pt" viewBox="0 0 {width_pt:.2f} {height_pt:.2f}">'
        f'<image width="100%" height="100%" href="data:image/png;base64,{data}"/>'
        "</svg>\n"
    )


def show(fig, key: str, alt: str) -> None:
    """Check the layout of ``fig``, render it as SVG, close it, and glue it under
    ``key`` (shown in the notebook, placed on the page by ``{glue:figure}``; tag the
    cell ``remove-output``)."""
    from ..prose import glue

    fig.canvas.draw()
    check_layout(fig, draw=False)
    smallest, png = smallest_font(fig), png_preview(fig)
    if VECTOR:
        svg = svg_text(fig)
    else:
        box = _drawn_box(fig)
        svg = _png_as_svg(png, box.width * 72, box.height * 72)
    figure = BookFigure(svg, png, alt, svg_width(svg), smallest)
    plt.close(fig)
    glue(key, figure, display=True)
