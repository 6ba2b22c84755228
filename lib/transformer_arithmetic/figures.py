"""One look for every figure in the book, and the one way a figure reaches a page.

``use_book_style()`` sets matplotlib's rcParams; ``show(fig, key, alt)`` renders the
figure to PNG bytes deterministically (fixed size and resolution, no software stamp),
closes it, and glues it under ``key`` with its alt text, so that the page places it
with ``{glue:figure}`` and a caption whose numbers are glued too.
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["COLORS", "use_book_style", "new_figure", "show", "BookFigure", "png_bytes"]

#: The book's palette: one colour per role, used the same way on every page.
COLORS = {
    "main": "#1f5a99",      # the quantity under discussion
    "contrast": "#d1603d",  # what it is compared against
    "third": "#3f8f5f",     # a third design or series
    "muted": "#9aa5b1",     # context: blocked cells, reference lines
    "highlight": "#f2b134", # the one cell or bar the caption points at
    "ink": "#1d2733",       # text and outlines
}

STYLE = {
    "figure.figsize": (7.0, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 10.5,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "axes.prop_cycle": matplotlib.cycler(color=[COLORS[k] for k in ("main", "contrast", "third", "highlight", "muted")]),
    "legend.frameon": False,
    "svg.hashsalt": "transformer-arithmetic",
    "path.simplify": False,
}


def use_book_style() -> None:
    """Apply the book's matplotlib settings to every later figure."""
    matplotlib.rcParams.update(STYLE)


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 7.0, height: float = 3.6, **kwargs):
    """A figure and its axes at the book's standard size (inches), with the book's style."""
    use_book_style()
    return plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kwargs)


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes, identical on every run with the same library versions."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


class BookFigure:
    """A rendered figure and its alt text, displayed as PNG (the alt travels in the output's metadata)."""

    def __init__(self, png: bytes, alt: str) -> None:
        if not alt or not alt.strip():
            raise ValueError("every figure needs alt text that says what it shows")
        self.png, self.alt = png, alt.strip()

    def _repr_png_(self):
        return self.png, {"alt": self.alt}

    def __repr__(self) -> str:
        return f"Figure: {self.alt}"


def show(fig, key: str, alt: str) -> None:
    """Render ``fig``, close it, and glue it under ``key`` (shown in the notebook, placed on the page
    by ``{glue:figure}``)."""
    from myst_nb import glue

    figure = BookFigure(png_bytes(fig), alt)
    plt.close(fig)
    glue(key, figure, display=True)
