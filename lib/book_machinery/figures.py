"""One look for every figure in the book, the shapes it draws again and again, and the one
way a figure reaches a page.

- ``PALETTE`` names one colour for each concept (attention, the cache, the weights, a
  running summary, ...), the same on every page, chosen from the Okabe-Ito and Tol sets so
  that readers with colour-blindness can tell them apart.
- ``new_figure`` gives a figure at the book's size and style.
- ``cell_grid``, ``heatmap``, ``bars``, ``curve``, ``mark`` and ``mark_below`` draw the
  recurring shapes: a grid of labelled cells (masks, caches, filters, tokens), a grid of
  numbers with a colour bar, labelled bars, and a curve with marked points whose labels stay
  inside the axes; ``tap_tree`` and ``head_groups`` draw two mechanisms that appear more than
  once (the taps of stacked filters, query heads sharing key-value heads).
- ``show(fig, key, alt)`` draws the figure once, checks the layout (every label inside its
  axes, no two labels on top of each other), encodes the drawing as PNG deterministically,
  and glues it under ``key`` with its alt text, so that the page places it with
  ``{glue:figure}`` (``myst_plugin.AltText`` puts that alt text on the page).
"""
from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap, to_rgb  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

__all__ = [
    "PALETTE", "use_book_style", "new_figure", "scale_for", "cell_grid", "heatmap", "bars",
    "curve", "mark", "check_layout", "show", "BookFigure", "png_bytes", "ink_on", "sequential",
    "tap_tree", "head_groups", "mark_below",
]

#: One colour per concept, used the same way on every page.
PALETTE: dict[str, str] = {
    # designs (and the same idea wherever it appears)
    "attention": "#D55E00",     # full attention: its pairs of positions and its key-value cache
    "window": "#E69F00",        # attention cut to a window
    "grouped": "#CC79A7",       # query heads sharing key-value heads (grouped / multi-query)
    "convolution": "#009E73",   # convolutional filters
    "recurrent": "#0072B2",     # recurrent networks
    "summary": "#56B4E9",       # running summaries (state-space layers) and their fixed state
    "hybrid": "#4D4D4D",        # hybrids of attention and running summaries
    # what a model holds and does
    "weights": "#332288",       # the weights: their count, their bytes, the work they do
    "cache": "#D55E00",         # the key-value cache is attention's memory: attention's colour
    "keys": "#D55E00",          # the key half of the cache
    "values": "#F4A582",        # the value half of the cache
    "gradients": "#44AA99",
    "optimiser": "#882255",
    "master": "#AA4499",        # the full-precision master copy of the weights
    "activations": "#999933",
    "logits": "#DDCC77",        # the output layer's raw scores kept for the loss
    # time on an accelerator
    "arithmetic": "#009E73",    # time the arithmetic takes
    "reading": "#0072B2",       # time reading memory takes
    # tokens, cells and marks
    "given": "#DDDDDD",         # text the model is given (the prompt, the true text)
    "earlier": "#BBBBBB",       # tokens written at earlier steps
    "new": "#F0E442",           # the token being written now
    "right": "#009E73",
    "wrong": "#CC6677",
    "kept": "#332288",          # kept by a sampling rule
    "cut": "#BBBBBB",           # removed by a sampling rule
    "blocked": "#EEF1F4",       # a pair of positions a mask blocks, an empty cell
    "highlight": "#F0E442",     # the one cell, bar or point the caption points at
    "muted": "#9AA5B1",         # context: reference lines, unchosen options
    "ink": "#1D2733",           # text and outlines
}

STYLE = {
    "figure.figsize": (7.0, 3.6),
    "figure.dpi": 150,      # drawn once, at the resolution the page shows
    "savefig.dpi": 150,
    "font.size": 10.5,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "axes.prop_cycle": matplotlib.cycler(color=[PALETTE[k] for k in (
        "weights", "attention", "summary", "convolution", "window", "grouped", "muted")]),
    "legend.frameon": False,
    "path.simplify": False,
    "image.cmap": "cividis",
}


def use_book_style() -> None:
    """Apply the book's matplotlib settings to every later figure."""
    matplotlib.rcParams.update(STYLE)


def new_figure(ncols: int = 1, nrows: int = 1, width: float | None = None, height: float | None = None,
               **kwargs):
    """A figure and its axes in the book's style, ``width`` by ``height`` inches (the style's
    size where not given)."""
    use_book_style()
    default_width, default_height = STYLE["figure.figsize"]
    size = (width or default_width, height or default_height)
    return plt.subplots(nrows, ncols, figsize=size, layout="constrained", **kwargs)


def scale_for(values: Sequence[float], span: float = 100.0) -> str:
    """'log' when the positive ``values`` span more than ``span`` times from least to most,
    else 'linear': a log axis only where a quantity covers orders of magnitude."""
    v = np.asarray(values, dtype=float)
    v = v[v > 0]
    return "log" if v.size and v.max() / v.min() > span else "linear"


def ink_on(colour: str) -> str:
    """Text colour that stays readable on a cell filled with ``colour``: white on dark, ink on light."""
    r, g, b = to_rgb(colour)
    return "white" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.5 else PALETTE["ink"]


def sequential(concept: str) -> LinearSegmentedColormap:
    """A colour map from white to the concept's colour, for heat maps of one quantity."""
    return LinearSegmentedColormap.from_list(concept, ["#FFFFFF", PALETTE[concept]])


def cell_grid(ax, fills: Sequence[Sequence[str]], text: Sequence[Sequence[str]] | None = None, *,
              row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
              fontsize: float = 9.0, gap: float = 0.08, edges: Sequence[Sequence[str | None]] | None = None) -> None:
    """Draw a grid of cells, row 0 at the top: ``fills[r][c]`` is a colour (None leaves the
    cell empty), ``text[r][c]`` an optional label drawn in a readable colour, ``edges[r][c]``
    an optional outline colour. Ticks name the rows and columns."""
    rows, cols = len(fills), max(len(r) for r in fills)
    cells, faces, outlines, widths = [], [], [], []
    for r, row in enumerate(fills):
        for c, colour in enumerate(row):
            if colour is None:
                continue
            edge = edges[r][c] if edges is not None else None
            cells.append(Rectangle((c + gap / 2, rows - 1 - r + gap / 2), 1 - gap, 1 - gap))
            faces.append(colour)
            outlines.append(edge or "none")
            widths.append(1.6 if edge else 0)
            label = text[r][c] if text is not None else ""
            if label:
                ax.text(c + 0.5, rows - 0.5 - r, label, ha="center", va="center",
                        fontsize=fontsize, color=ink_on(colour))
    # one collection, not an artist a cell: the same pixels, drawn about four times faster
    ax.add_collection(PatchCollection(cells, facecolors=faces, edgecolors=outlines, linewidths=widths),
                      autolim=False)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.spines[["left", "bottom", "top", "right"]].set_visible(False)
    ax.tick_params(length=0)
    ax.set_xticks(np.arange(cols) + 0.5, col_labels if col_labels is not None else [""] * cols)
    ax.set_yticks(rows - 0.5 - np.arange(rows), row_labels if row_labels is not None else [""] * rows)


def heatmap(ax, values, *, concept: str = "attention", row_labels: Sequence[str] | None = None,
            col_labels: Sequence[str] | None = None, fmt: str = "{:.2f}", colourbar: str | None = None,
            vmin: float | None = None, vmax: float | None = None, blank=None, fontsize: float = 8.5):
    """A grid of numbers shaded from white to the concept's colour, each cell labelled in a
    readable colour, with a colour bar titled ``colourbar``. Cells where ``blank`` is True
    are drawn in the 'blocked' colour with no number."""
    v = np.asarray(values, dtype=float)
    lo = float(np.nanmin(v)) if vmin is None else vmin
    hi = float(np.nanmax(v)) if vmax is None else vmax
    cmap = sequential(concept)
    shown = np.ma.masked_where(np.asarray(blank) if blank is not None else np.zeros(v.shape, bool), v)
    cmap.set_bad(PALETTE["blocked"])
    image = ax.imshow(shown, cmap=cmap, vmin=lo, vmax=hi, aspect="equal")
    norm = image.norm
    for (r, c), x in np.ndenumerate(v):
        if blank is not None and np.asarray(blank)[r, c]:
            continue
        ax.text(c, r, fmt.format(x), ha="center", va="center", fontsize=fontsize,
                color=ink_on(matplotlib.colors.to_hex(cmap(norm(x)))))
    ax.grid(False)
    ax.tick_params(length=0)
    ax.set_xticks(range(v.shape[1]), col_labels if col_labels is not None else [""] * v.shape[1])
    ax.set_yticks(range(v.shape[0]), row_labels if row_labels is not None else [""] * v.shape[0])
    if colourbar is not None:
        ax.figure.colorbar(image, ax=ax, shrink=0.85, label=colourbar)
    return image


def bars(ax, categories: Sequence[str], series: Mapping[str, Sequence[float]], colours: Mapping[str, str], *,
         fmt: str = "{:,.0f}", scale: str | None = None, horizontal: bool = False, fontsize: float = 9.0,
         width: float = 0.8) -> None:
    """Bars for each category, one per series side by side, each labelled with its value
    (``fmt``). The value axis is log only when the values span orders of magnitude, unless
    ``scale`` says otherwise; its limits leave room for the labels."""
    names = list(series)
    n = len(names)
    step = width / n
    pos = np.arange(len(categories))
    all_values = np.concatenate([np.asarray(series[k], dtype=float) for k in names])
    scale = scale or scale_for(all_values)
    for i, name in enumerate(names):
        where = pos - width / 2 + step * (i + 0.5)
        values = np.asarray(series[name], dtype=float)
        draw = ax.barh if horizontal else ax.bar
        drawn = draw(where, values, step * 0.92, color=colours[name], label=name if n > 1 else None)
        ax.bar_label(drawn, [fmt.format(v) for v in values], fontsize=fontsize, padding=2)
    top = all_values.max()
    if horizontal:
        ax.set_yticks(pos, categories)
        ax.invert_yaxis()
        ax.set_xscale(scale)
        ax.set_xlim(*((0.5 * all_values[all_values > 0].min(), top * 8) if scale == "log" else (0, top * 1.28)))
        ax.grid(axis="y", visible=False)
    else:
        ax.set_xticks(pos, categories)
        ax.set_yscale(scale)
        ax.set_ylim(*((0.5 * all_values[all_values > 0].min(), top * 6) if scale == "log" else (0, top * 1.18)))
        ax.grid(axis="x", visible=False)


def curve(ax, x, y, *, concept: str, label: str | None = None, scale_x: str | None = None,
          scale_y: str | None = None, **kwargs):
    """A line in the concept's colour; each axis is log only when its values span orders of
    magnitude (unless ``scale_x`` / ``scale_y`` say otherwise)."""
    line, = ax.plot(x, y, color=PALETTE[concept], label=label, **kwargs)
    ax.set_xscale(scale_x or scale_for(x))
    ax.set_yscale(scale_y or scale_for(y))
    return line


def mark(ax, x: float, y: float, text: str, *, colour: str | None = None, fontsize: float = 9.0) -> None:
    """A dot at (x, y) with ``text`` beside it, on whichever side keeps the text inside the
    axes (call it after the axis limits are set)."""
    ax.plot([x], [y], "o", color=colour or PALETTE["ink"], ms=4.5, zorder=5)
    fx, fy = ax.transAxes.inverted().transform(ax.transData.transform((x, y)))
    right, above = fx < 0.6, fy < 0.75
    ax.annotate(text, (x, y), textcoords="offset points", xytext=(7 if right else -7, 6 if above else -6),
                ha="left" if right else "right", va="bottom" if above else "top", fontsize=fontsize,
                color=colour or PALETTE["ink"], bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})


def tap_tree(ax, levels: Sequence[Sequence[int]], gaps: Sequence[int], kernel: int, *, concept: str,
             width: int | None = None, size: float = 80.0) -> None:
    """The taps of a stack of backward-looking filters that feed one output: a row of positions
    per level (the inputs at the bottom, the output top right, drawn in 'highlight'), the
    positions that feed the output filled in the concept's colour and joined to the taps they
    read one level down, the others left hollow. ``levels`` and ``gaps`` come from
    ``convolution.taps`` and ``convolution.layer_gaps``; ``width`` columns (default: just
    enough for the inputs), labelled by how far back each lies from the output."""
    rows = len(levels)
    if rows != len(gaps) + 1:
        raise ValueError(f"{rows} levels need {rows - 1} gaps, got {len(gaps)}")
    cols = width if width is not None else max(levels[0]) + 1
    colour = PALETTE[concept]
    for level in range(1, rows):
        for p in levels[level]:
            for j in range(kernel):
                child = p + j * gaps[level - 1]
                ax.plot([cols - 1 - p, cols - 1 - child], [level, level - 1], color=colour, lw=1.0,
                        alpha=0.75, zorder=1)
    for level, used in enumerate(levels):
        ax.scatter(range(cols), [level] * cols, s=size, facecolor="white", edgecolor=PALETTE["muted"],
                   lw=1.0, zorder=2)
        ax.scatter([cols - 1 - p for p in used], [level] * len(used), s=size, color=colour, zorder=3)
    ax.scatter([cols - 1], [rows - 1], s=size * 1.6, color=PALETTE["highlight"], edgecolor=PALETTE["ink"],
               lw=1.0, zorder=4)
    ax.set_xlim(-0.7, cols - 0.3)
    ax.set_ylim(-0.6, rows - 0.4)
    ax.set_yticks(range(rows), ["inputs"] + [f"layer {n}" for n in range(1, rows)])
    ax.set_xticks(range(cols), [str(cols - 1 - c) for c in range(cols)])
    ax.grid(False)
    ax.spines[["left", "bottom", "top", "right"]].set_visible(False)
    ax.tick_params(length=0)


def head_groups(ax, heads: int, kv_heads: int, *, concept: str, fontsize: float = 8.0) -> None:
    """Query heads in a row above the key-value heads they read, each joined to its own by a
    line: one key-value head per query head (plain attention), one per group (grouped), or one
    for all (multi-query). A key-value head spans its group and is filled with the concept's
    colour; the query heads are muted."""
    if heads < 1 or kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"kv_heads={kv_heads} must be at least 1 and divide heads={heads}")
    group = heads // kv_heads
    for g in range(kv_heads):
        ax.add_patch(Rectangle((g * group + 0.08, 0.1), group - 0.16, 0.8, facecolor=PALETTE[concept]))
        ax.text(g * group + group / 2, 0.5, str(g + 1), ha="center", va="center", fontsize=fontsize,
                color=ink_on(PALETTE[concept]))
    for h in range(heads):
        ax.add_patch(Rectangle((h + 0.08, 2.1), 0.84, 0.8, facecolor=PALETTE["muted"]))
        ax.text(h + 0.5, 2.5, str(h + 1), ha="center", va="center", fontsize=fontsize,
                color=ink_on(PALETTE["muted"]))
        g = h // group
        ax.plot([h + 0.5, g * group + group / 2], [2.1, 0.9], color=PALETTE["ink"], lw=0.8)
    ax.set_xlim(0, heads)
    ax.set_ylim(0, 3)
    ax.grid(False)
    ax.spines[["left", "bottom", "top", "right"]].set_visible(False)
    ax.tick_params(length=0)
    ax.set_xticks([])
    ax.set_yticks([0.5, 2.5], ["key-value heads", "query heads"])


def mark_below(ax, x: float, y: float, text: str, *, colour: str | None = None,
               fontsize: float = 9.0) -> None:
    """A dot at (x, y) with ``text`` below it and to its right, or to its left / above it
    where the label would leave the axes: for points on a rising curve, where ``mark`` would
    set the label on the curve itself (call it after the axis limits are set)."""
    ax.plot([x], [y], "o", color=colour or PALETTE["ink"], ms=4.5, zorder=5)
    label = ax.annotate(text, (x, y), textcoords="offset points", xytext=(7, -6), ha="left",
                        va="top", fontsize=fontsize, color=colour or PALETTE["ink"],
                        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
    renderer = ax.figure.canvas.get_renderer()
    box, extent = ax.get_window_extent(renderer), label.get_window_extent(renderer)
    left, above = extent.x1 > box.x1, extent.y0 < box.y0
    label.set_position((-7 if left else 7, 6 if above else -6))
    label.set_horizontalalignment("right" if left else "left")
    label.set_verticalalignment("bottom" if above else "top")


def check_layout(fig, tolerance: float = 1.0, draw: bool = True) -> None:
    """Raise ValueError if a label drawn on an axes (``ax.text`` / ``ax.annotate``) sticks out
    of that axes by more than ``tolerance`` points, or if two such labels overlap: a changed
    example model must not push a label off the plot or onto another. ``draw=False`` checks the
    canvas as it was last drawn."""
    if draw:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    tolerance = tolerance * fig.dpi / 72   # points to pixels
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        texts = [t for t in ax.texts if t.get_visible() and t.get_text().strip()]
        extents = [t.get_window_extent(renderer) for t in texts]
        for t, e in zip(texts, extents):
            if (e.x0 < box.x0 - tolerance or e.x1 > box.x1 + tolerance
                    or e.y0 < box.y0 - tolerance or e.y1 > box.y1 + tolerance):
                raise ValueError(f"the label {t.get_text()!r} lies outside its axes "
                                 f"({ax.get_title() or 'untitled'}): move it or widen the limits")
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                a, b = extents[i], extents[j]
                w = min(a.x1, b.x1) - max(a.x0, b.x0)
                h = min(a.y1, b.y1) - max(a.y0, b.y0)
                if w > tolerance and h > tolerance:
                    raise ValueError(f"the labels {texts[i].get_text()!r} and {texts[j].get_text()!r} "
                                     f"overlap ({ax.get_title() or 'untitled'})")


def png_bytes(fig, draw: bool = True) -> bytes:
    """The figure as PNG bytes (no software stamp), identical on every run with the same library
    versions. ``draw=False`` encodes the canvas as it was last drawn, so a figure that was just
    checked is not drawn twice."""
    from PIL import Image

    if draw:
        fig.canvas.draw()
    width, height = fig.canvas.get_width_height(physical=True)
    image = Image.frombuffer("RGBA", (width, height), bytes(fig.canvas.buffer_rgba()), "raw", "RGBA", 0, 1)
    buf = io.BytesIO()
    image.save(buf, format="png", dpi=(fig.dpi, fig.dpi))
    return buf.getvalue()


class BookFigure:
    """A rendered figure and its alt text, displayed as PNG (the alt travels in the output's metadata)."""

    def __init__(self, png: bytes, alt: str) -> None:
        if not alt or not alt.strip():
            raise ValueError("every figure needs alt text that says what it shows")
        self.png, self.alt = png, " ".join(alt.split())

    def _repr_png_(self):
        return self.png, {"alt": self.alt}

    def __repr__(self) -> str:
        return f"Figure: {self.alt}"


def show(fig, key: str, alt: str) -> None:
    """Check the layout of ``fig``, render it, close it, and glue it under ``key`` (shown in the
    notebook, placed on the page by ``{glue:figure}``; tag the cell ``remove-output``)."""
    from .prose import glue

    fig.canvas.draw()                        # once: the check and the picture share this drawing
    check_layout(fig, draw=False)
    figure = BookFigure(png_bytes(fig, draw=False), alt)
    plt.close(fig)
    glue(key, figure, display=True)
