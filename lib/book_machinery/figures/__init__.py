"""One look for every figure in the book, the shapes it draws again and again, and the
one way a figure reaches a page.

- ``PALETTE`` names one colour for each concept (attention, the cache, the weights, a
  running summary, ...), the same on every page, chosen from the Okabe-Ito and Tol sets
  so that readers with colour-blindness can tell them apart.
- ``new_figure`` gives a figure at the book's size and style.
- ``cell_grid``, ``heatmap``, ``bars``, ``curve``, ``against``, ``mark`` and
  ``mark_below`` draw the recurring shapes: a grid of labelled cells (masks, caches,
  filters, tokens), a grid of numbers with a colour bar, labelled bars, a curve with
  marked points whose labels stay inside the axes, and expected against measured with
  its line of equality; ``tap_tree`` and ``head_groups`` draw two mechanisms that appear
  more than once (the taps of stacked filters, query heads sharing key-value heads).
- ``show(fig, key, alt)`` draws the figure once, checks the layout (every label inside
  its axes, no two labels on top of each other), writes it as SVG with deterministic
  bytes (letters and lines as vector outlines, sharp at any zoom and in print; a grid of
  many cells as a 300 dpi raster inside it), and glues it under ``key`` with its alt
  text, its width and its smallest font, so that the page places it with
  ``{glue:figure}`` (``myst_plugin.AltText`` puts the alt text on the page, links the
  picture to its full-size file and gives narrow screens a width at which its smallest
  letters can be read).
"""

from .drawing import (against, bars, cell_grid, curve, head_groups, heatmap, mark,
                      mark_below, tap_tree)
from .page import (BookFigure, check_layout, png_preview, show, smallest_font, svg_text,
                   svg_width)
from .style import PALETTE, ink_on, new_figure, scale_for, sequential, use_book_style

__all__ = [
    "PALETTE", "use_book_style", "new_figure", "scale_for", "ink_on", "sequential",
    "cell_grid", "heatmap", "bars", "curve", "against", "mark", "mark_below",
    "tap_tree", "head_groups", "check_layout", "svg_text", "svg_width", "png_preview",
    "smallest_font", "BookFigure", "show",
]
