"""The book's one figure style: a colour for each concept, the figure size and fonts."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap, to_rgb  # noqa: E402

__all__ = ["PALETTE", "STYLE", "use_book_style", "new_figure", "scale_for", "ink_on",
           "sequential"]

#: One colour per concept, used the same way on every page.
PALETTE: dict[str, str] = {
    # designs (and the same idea wherever it appears)
    # full attention: its pairs of positions and its key-value cache
    "attention": "#D55E00",
    "window": "#E69F00",  # attention cut to a window
    # query heads sharing key-value heads (grouped / multi-query)
    "grouped": "#CC79A7",
    "convolution": "#009E73",  # convolutional filters
    "recurrent": "#0072B2",  # recurrent networks
    # running summaries (state-space layers) and their fixed state
    "summary": "#56B4E9",
    "hybrid": "#4D4D4D",  # hybrids of attention and running summaries
    # what a model holds and does
    # the weights: their count, their bytes, the work they do
    "weights": "#332288",
    # the key-value cache is attention's memory: attention's colour
    "cache": "#D55E00",
    "keys": "#D55E00",  # the key half of the cache
    "values": "#F4A582",  # the value half of the cache
    "gradients": "#44AA99",
    "optimiser": "#882255",
    "master": "#AA4499",  # the full-precision master copy of the weights
    "activations": "#999933",
    "logits": "#DDCC77",  # the output layer's raw scores kept for the loss
    # time on an accelerator
    "arithmetic": "#009E73",  # time the arithmetic takes
    "reading": "#0072B2",  # time reading memory takes
    # tokens, cells and marks
    "given": "#DDDDDD",  # text the model is given (the prompt, the true text)
    "earlier": "#BBBBBB",  # tokens written at earlier steps
    "new": "#F0E442",  # the token being written now
    "right": "#009E73",
    "wrong": "#CC6677",
    "kept": "#332288",  # kept by a sampling rule
    "cut": "#BBBBBB",  # removed by a sampling rule
    "blocked": "#EEF1F4",  # a pair of positions a mask blocks, an empty cell
    "highlight": "#F0E442",  # the one cell, bar or point the caption points at
    "muted": "#9AA5B1",  # context: reference lines, unchosen options
    "ink": "#1D2733",  # text and outlines
}

STYLE = {
    "figure.figsize": (7.0, 3.6),
    # the canvas the layout check draws on, kept as the notebook's PNG preview (the site
    # and the PDF get SVG)
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.size": 10.5,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "axes.prop_cycle": matplotlib.cycler(
        color=[
            PALETTE[k]
            for k in (
                "weights",
                "attention",
                "summary",
                "convolution",
                "window",
                "grouped",
                "muted",
            )
        ]
    ),
    "legend.frameon": False,
    "path.simplify": False,
    "image.cmap": "cividis",
}


def use_book_style() -> None:
    """Apply the book's matplotlib settings to every later figure."""
    matplotlib.rcParams.update(STYLE)


def new_figure(
    ncols: int = 1,
    nrows: int = 1,
    width: float | None = None,
    height: float | None = None,
    **kwargs,
):
    """A figure and its axes in the book's style, ``width`` by ``height`` inches (the
    style's size where not given)."""
    use_book_style()
    default_width, default_height = STYLE["figure.figsize"]
    size = (width or default_width, height or default_height)
    return plt.subplots(nrows, ncols, figsize=size, layout="constrained", **kwargs)


def scale_for(values: Sequence[float], span: float = 100.0) -> str:
    """'log' when the positive ``values`` span more than ``span`` times from least to
    most, else 'linear': a log axis only where a quantity covers orders of magnitude."""
    v = np.asarray(values, dtype=float)
    v = v[v > 0]
    return "log" if v.size and v.max() / v.min() > span else "linear"


def ink_on(colour: str) -> str:
    """Text colour that stays readable on a cell filled with ``colour``: white on dark,
    ink on light."""
    r, g, b = to_rgb(colour)
    return "white" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.5 else PALETTE["ink"]


def sequential(concept: str) -> LinearSegmentedColormap:
    """A colour map from white to the concept's colour, for heat maps of one
    quantity."""
    return LinearSegmentedColormap.from_list(concept, ["#FFFFFF", PALETTE[concept]])
