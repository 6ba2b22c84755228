"""The shapes the book draws again and again: grids of cells, heat maps, bars, curves
with marked points, the taps of stacked filters, query heads sharing key-value heads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.patches import Rectangle

from .style import PALETTE, ink_on, scale_for, sequential

__all__ = ["cell_grid", "heatmap", "bars", "curve", "mark", "mark_below", "tap_tree",
           "head_groups"]

def cell_grid(
    ax,
    fills: Sequence[Sequence[str]],
    text: Sequence[Sequence[str]] | None = None,
    *,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    fontsize: float = 9.0,
    gap: float = 0.08,
    edges: Sequence[Sequence[str | None]] | None = None,
) -> None:
    """Draw a grid of cells, row 0 at the top: ``fills[r][c]`` is a colour (None leaves
    the cell empty), ``text[r][c]`` an optional label drawn in a readable colour,
    ``edges[r][c]`` an optional outline colour. Ticks name the rows and columns."""
    rows, cols = len(fills), max(len(r) for r in fills)
    cells, faces, outlines, widths = [], [], [], []
    for r, row in enumerate(fills):
        for c, colour in enumerate(row):
            if colour is None:
                continue
            edge = edges[r][c] if edges is not None else None
            cells.append(
                Rectangle((c + gap / 2, rows - 1 - r + gap / 2), 1 - gap, 1 - gap)
            )
            faces.append(colour)
            outlines.append(edge or "none")
            widths.append(1.6 if edge else 0)
            label = text[r][c] if text is not None else ""
            if label:
                ax.text(
                    c + 0.5,
                    rows - 0.5 - r,
                    label,
                    ha="center",
                    va="center",
                    fontsize=fontsize,
                    color=ink_on(colour),
                )
    # one collection, not an artist a cell: the same pixels, drawn about four times
    # faster
    ax.add_collection(
        PatchCollection(
            cells, facecolors=faces, edgecolors=outlines, linewidths=widths
        ),
        autolim=False,
    )
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.spines[["left", "bottom", "top", "right"]].set_visible(False)
    ax.tick_params(length=0)
    ax.set_xticks(
        np.arange(cols) + 0.5, col_labels if col_labels is not None else [""] * cols
    )
    ax.set_yticks(
        rows - 0.5 - np.arange(rows),
        row_labels if row_labels is not None else [""] * rows,
    )


def heatmap(
    ax,
    values,
    *,
    concept: str = "attention",
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    fmt: str = "{:.2f}",
    colourbar: str | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    blank=None,
    fontsize: float = 8.5,
    signed: str | None = None,
):
    """A grid of numbers shaded from white to the concept's colour, each cell labelled
    in a readable colour, with a colour bar titled ``colourbar``. Cells where ``blank``
    is True are drawn in the 'blocked' colour with no number. For numbers of either
    sign, ``signed`` names a second concept: negative numbers shade towards its colour,
    positive ones towards ``concept``'s, white at zero, the scale symmetric about it."""
    v = np.asarray(values, dtype=float)
    lo = float(np.nanmin(v)) if vmin is None else vmin
    hi = float(np.nanmax(v)) if vmax is None else vmax
    cmap = sequential(concept)
    if signed is not None:
        reach = max(abs(lo), abs(hi))
        lo, hi = -reach, reach
        cmap = matplotlib.colors.LinearSegmentedColormap.from_list(
            f"{signed}-{concept}", [PALETTE[signed], "#FFFFFF", PALETTE[concept]])
    shown = np.ma.masked_where(
        np.asarray(blank) if blank is not None else np.zeros(v.shape, bool), v
    )
    cmap.set_bad(PALETTE["blocked"])
    image = ax.imshow(shown, cmap=cmap, vmin=lo, vmax=hi, aspect="equal")
    norm = image.norm
    for (r, c), x in np.ndenumerate(v):
        if blank is not None and np.asarray(blank)[r, c]:
            continue
        ax.text(
            c,
            r,
            fmt.format(x),
            ha="center",
            va="center",
            fontsize=fontsize,
            color=ink_on(matplotlib.colors.to_hex(cmap(norm(x)))),
        )
    ax.grid(False)
    ax.tick_params(length=0)
    ax.set_xticks(
        range(v.shape[1]), col_labels if col_labels is not None else [""] * v.shape[1]
    )
    ax.set_yticks(
        range(v.shape[0]), row_labels if row_labels is not None else [""] * v.shape[0]
    )
    if colourbar is not None:
        ax.figure.colorbar(image, ax=ax, shrink=0.85, label=colourbar)
    return image


def bars(
    ax,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    colours: Mapping[str, str],
    *,
    fmt: str = "{:,.0f}",
    scale: str | None = None,
    horizontal: bool = False,
    fontsize: float = 9.0,
    width: float = 0.8,
) -> None:
    """Bars for each category, one per series side by side, each labelled with its value
    (``fmt``). The value axis is log only when the values span orders of magnitude,
    unless ``scale`` says otherwise; its limits leave room for the labels."""
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
        drawn = draw(
            where,
            values,
            step * 0.92,
            color=colours[name],
            label=name if n > 1 else None,
        )
        ax.bar_label(
            drawn, [fmt.format(v) for v in values], fontsize=fontsize, padding=2
        )
    top = all_values.max()
    if scale == "log":   # room for the labels: a decade or so above the tallest bar
        low = 0.5 * all_values[all_values > 0].min()
        limits = (low, top * (8 if horizontal else 6))
    else:
        limits = (0, top * (1.28 if horizontal else 1.18))
    if horizontal:
        ax.set_yticks(pos, categories)
        ax.invert_yaxis()
        ax.set_xscale(scale)
        ax.set_xlim(*limits)
        ax.grid(axis="y", visible=False)
    else:
        ax.set_xticks(pos, categories)
        ax.set_yscale(scale)
        ax.set_ylim(*limits)
        ax.grid(axis="x", visible=False)


def curve(
    ax,
    x,
    y,
    *,
    concept: str,
    label: str | None = None,
    scale_x: str | None = None,
    scale_y: str | None = None,
    **kwargs,
):
    """A line in the concept's colour; each axis is log only when its values span orders
    of magnitude (unless ``scale_x`` / ``scale_y`` say otherwise)."""
    (line,) = ax.plot(x, y, color=PALETTE[concept], label=label, **kwargs)
    ax.set_xscale(scale_x or scale_for(x))
    ax.set_yscale(scale_y or scale_for(y))
    return line


def against(
    ax,
    measured,
    expected,
    *,
    concept: str,
    unit: str,
    title: str,
    size: float = 2.2,
    expected_label: str = "expected",
) -> None:
    """Expected against measured on log axes, a dot a run, with the line where the two
    are equal (a dot above it: expected slower or larger than measured);
    ``expected_label`` names the vertical axis's quantity (a count, say)."""
    ax.plot(measured, expected, "o", ms=size, alpha=0.35, color=PALETTE[concept],
            mew=0, rasterized=True)
    span = [min(measured.min(), expected.min()), max(measured.max(), expected.max())]
    ax.plot(span, span, color=PALETTE["ink"], lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"measured ({unit})")
    ax.set_ylabel(f"{expected_label} ({unit})")
    ax.set_title(title)


def mark(
    ax,
    x: float,
    y: float,
    text: str,
    *,
    colour: str | None = None,
    fontsize: float = 9.0,
) -> None:
    """A dot at (x, y) with ``text`` beside it, on whichever side keeps the text inside
    the axes (call it after the axis limits are set)."""
    ax.plot([x], [y], "o", color=colour or PALETTE["ink"], ms=4.5, zorder=5)
    fx, fy = ax.transAxes.inverted().transform(ax.transData.transform((x, y)))
    right, above = fx < 0.6, fy < 0.75
    ax.annotate(
        text,
        (x, y),
        textcoords="offset points",
        xytext=(7 if right else -7, 6 if above else -6),
        ha="left" if right else "right",
        va="bottom" if above else "top",
        fontsize=fontsize,
        color=colour or PALETTE["ink"],
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
    )


def tap_tree(
    ax,
    levels: Sequence[Sequence[int]],
    gaps: Sequence[int],
    kernel: int,
    *,
    concept: str,
    width: int | None = None,
    size: float = 80.0,
) -> None:
    """The taps of a stack of backward-looking filters that feed one output: a row of
    positions per level (the inputs at the bottom, the output top right, drawn in
    'highlight'), the positions that feed the output filled in the concept's colour and
    joined to the taps they read one level down, the others left hollow. ``levels`` and
    ``gaps`` come from ``convolution.taps`` and ``convolution.layer_gaps``; ``width``
    columns (default: just enough for the inputs), labelled by how far back each lies
    from the output."""
    rows = len(levels)
    if rows != len(gaps) + 1:
        raise ValueError(f"{rows} levels need {rows - 1} gaps, got {len(gaps)}")
    cols = width if width is not None else max(levels[0]) + 1
    colour = PALETTE[concept]
    for level in range(1, rows):
        for p in levels[level]:
            for j in range(kernel):
                child = p + j * gaps[level - 1]
                ax.plot(
                    [cols - 1 - p, cols - 1 - child],
                    [level, level - 1],
                    color=colour,
                    lw=1.0,
                    alpha=0.75,
                    zorder=1,
                )
    for level, used in enumerate(levels):
        ax.scatter(
            range(cols),
            [level] * cols,
            s=size,
            facecolor="white",
            edgecolor=PALETTE["muted"],
            lw=1.0,
            zorder=2,
        )
        ax.scatter(
            [cols - 1 - p for p in used],
            [level] * len(used),
            s=size,
            color=colour,
            zorder=3,
        )
    ax.scatter(
        [cols - 1],
        [rows - 1],
        s=size * 1.6,
        color=PALETTE["highlight"],
        edgecolor=PALETTE["ink"],
        lw=1.0,
        zorder=4,
    )
    ax.set_xlim(-0.7, cols - 0.3)
    ax.set_ylim(-0.6, rows - 0.4)
    ax.set_yticks(range(rows), ["inputs"] + [f"layer {n}" for n in range(1, rows)])
    ax.set_xticks(range(cols), [str(cols - 1 - c) for c in range(cols)])
    ax.grid(False)
    ax.spines[["left", "bottom", "top", "right"]].set_visible(False)
    ax.tick_params(length=0)


def head_groups(
    ax, heads: int, kv_heads: int, *, concept: str, fontsize: float = 8.0
) -> None:
    """Query heads in a row above the key-value heads they read, each joined to its own
    by a line: one key-value head per query head (plain attention), one per group
    (grouped), or one for all (multi-query). A key-value head spans its group and is
    filled with the concept's colour; the query heads are muted."""
    if heads < 1 or kv_heads < 1 or heads % kv_heads:
        raise ValueError(
            f"kv_heads={kv_heads} must be at least 1 and divide heads={heads}"
        )
    group = heads // kv_heads
    for g in range(kv_heads):
        ax.add_patch(
            Rectangle(
                (g * group + 0.08, 0.1), group - 0.16, 0.8, facecolor=PALETTE[concept]
            )
        )
        ax.text(
            g * group + group / 2,
            0.5,
            str(g + 1),
            ha="center",
            va="center",
            fontsize=fontsize,
            color=ink_on(PALETTE[concept]),
        )
    for h in range(heads):
        ax.add_patch(Rectangle((h + 0.08, 2.1), 0.84, 0.8, facecolor=PALETTE["muted"]))
        ax.text(
            h + 0.5,
            2.5,
            str(h + 1),
            ha="center",
            va="center",
            fontsize=fontsize,
            color=ink_on(PALETTE["muted"]),
        )
        g = h // group
        ax.plot(
            [h + 0.5, g * group + group / 2], [2.1, 0.9], color=PALETTE["ink"], lw=0.8
        )
    ax.set_xlim(0, heads)
    ax.set_ylim(0, 3)
    ax.grid(False)
    ax.spines[["left", "bottom", "top", "right"]].set_visible(False)
    ax.tick_params(length=0)
    ax.set_xticks([])
    ax.set_yticks([0.5, 2.5], ["key-value heads", "query heads"])


def mark_below(
    ax,
    x: float,
    y: float,
    text: str,
    *,
    colour: str | None = None,
    fontsize: float = 9.0,
) -> None:
    """A dot at (x, y) with ``text`` below it and to its right, or to its left / above
    it where the label would leave the axes: for points on a rising curve, where
    ``mark`` would set the label on the curve itself (call it after the axis limits are
    set)."""
    ax.plot([x], [y], "o", color=colour or PALETTE["ink"], ms=4.5, zorder=5)
    label = ax.annotate(
        text,
        (x, y),
        textcoords="offset points",
        xytext=(7, -6),
        ha="left",
        va="top",
        fontsize=fontsize,
        color=colour or PALETTE["ink"],
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
    )
    renderer = ax.figure.canvas.get_renderer()
    box, extent = ax.get_window_extent(renderer), label.get_window_extent(renderer)
    left, above = extent.x1 > box.x1, extent.y0 < box.y0
    label.set_position((-7 if left else 7, 6 if above else -6))
    label.set_horizontalalignment("right" if left else "left")
    label.set_verticalalignment("bottom" if above else "top")
