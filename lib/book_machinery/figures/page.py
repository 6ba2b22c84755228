"""How a figure reaches a page: its layout checked, its PNG encoded deterministically,
and glued with its alt text for ``{glue:figure}``."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt

__all__ = ["check_layout", "png_bytes", "BookFigure", "show"]

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


def png_bytes(fig, draw: bool = True) -> bytes:
    """The figure as PNG bytes (no software stamp), identical on every run with the same
    library versions. ``draw=False`` encodes the canvas as it was last drawn, so a
    figure that was just checked is not drawn twice."""
    from PIL import Image

    if draw:
        fig.canvas.draw()
    width, height = fig.canvas.get_width_height(physical=True)
    image = Image.frombuffer(
        "RGBA", (width, height), bytes(fig.canvas.buffer_rgba()), "raw", "RGBA", 0, 1
    )
    buf = io.BytesIO()
    image.save(buf, format="png", dpi=(fig.dpi, fig.dpi))
    return buf.getvalue()


class BookFigure:
    """A rendered figure and its alt text, displayed as PNG (the alt travels in the
    output's metadata)."""

    def __init__(self, png: bytes, alt: str) -> None:
        if not alt or not alt.strip():
            raise ValueError("every figure needs alt text that says what it shows")
        self.png, self.alt = png, " ".join(alt.split())

    def _repr_png_(self):
        return self.png, {"alt": self.alt}

    def __repr__(self) -> str:
        return f"Figure: {self.alt}"


def show(fig, key: str, alt: str) -> None:
    """Check the layout of ``fig``, render it, close it, and glue it under ``key``
    (shown in the notebook, placed on the page by ``{glue:figure}``; tag the cell
    ``remove-output``)."""
    from ..prose import glue

    # once: the check and the picture share this drawing
    fig.canvas.draw()
    check_layout(fig, draw=False)
    figure = BookFigure(png_bytes(fig, draw=False), alt)
    plt.close(fig)
    glue(key, figure, display=True)
