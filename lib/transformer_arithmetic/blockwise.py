"""Blockwise attention: the grid of scores worked through one tile at a time, never held
whole.

One head's scores form a grid, one row per query position and one column per key
position. A blockwise kernel cuts that grid into square tiles of ``tile`` by ``tile``
scores and brings one tile at a time into the chip's small, fast memory. For every query
row it keeps three running quantities: the largest score seen so far, the sum of
``exp(score - largest)`` over the scores seen so far, and the matching weighted sum of
values. When a tile brings a larger score, the two sums are rescaled by ``exp(old
largest - new largest)``, so after the last tile they equal what a softmax over the
whole row would give, exactly and not approximately. Tiles that hold no allowed pair
(above the diagonal under the causal mask, or too far back for a window) are skipped.
"""

from __future__ import annotations

import math

import numpy as np

from .checks import checked_whole

__all__ = ["running_softmax", "blockwise_attention", "tiles_with_pairs"]


def _fold(
    largest: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One tile's update of the running largest score: the new largest, the factor that
    rescales what was summed before, and the exponentials of this tile's scores (0 where
    a score is minus infinity, a blocked pair)."""
    new = np.maximum(largest, scores.max(axis=-1))
    seen = np.isfinite(new)
    base = np.where(seen, new, 0.0)
    rescale = np.exp(np.where(np.isfinite(largest), largest - base, -np.inf))
    weights = np.exp(np.where(np.isfinite(scores), scores - base[..., None], -np.inf))
    return new, rescale, weights


def running_softmax(scores, tile: int) -> list[tuple[float, float]]:
    """The running largest score and running sum of exp(score - largest) of one row of
    scores, after each tile of ``tile`` scores (minus infinity marks a blocked pair).
    The last pair is the row's softmax normaliser: its largest score and the sum of
    exp(score - largest)."""
    t = checked_whole("tile", tile, minimum=1)
    row = np.asarray(scores, dtype=float)
    if row.ndim != 1 or row.size == 0:
        raise ValueError(f"scores must be one non-empty row, got shape {row.shape}")
    largest, total, out = np.array(-np.inf), np.array(0.0), []
    for start in range(0, row.size, t):
        largest, rescale, weights = _fold(largest, row[start : start + t])
        total = rescale * total + weights.sum()
        out.append((float(largest), float(total)))
    return out


def blockwise_attention(q, k, v, tile: int, mask=None) -> np.ndarray:
    """One head's attention output (softmax of the scaled query-key scores, times the
    values), computed tile by tile with a running largest score and running sums;
    ``mask`` (True = the pair may attend) defaults to the causal mask. Shape: one row
    per query, one column per value channel."""
    t = checked_whole("tile", tile, minimum=1)
    q, k, v = (np.asarray(x, dtype=float) for x in (q, k, v))
    if (
        q.ndim != 2
        or k.ndim != 2
        or v.ndim != 2
        or q.shape[1] != k.shape[1]
        or k.shape[0] != v.shape[0]
    ):
        raise ValueError(
            f"q, k, v must be (queries, d), (keys, d), (keys, d_v); got {q.shape}, "
            f"{k.shape}, {v.shape}"
        )
    n, m = q.shape[0], k.shape[0]
    if mask is None:
        if n != m:
            raise ValueError(
                f"the causal mask needs as many queries as keys, got {n} and {m}"
            )
        mask = np.tri(n, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (n, m):
        raise ValueError(
            f"mask of shape {mask.shape} does not match {n} queries and {m} keys"
        )
    if not mask.any(axis=1).all():
        raise ValueError(
            f"row {int(np.argmin(mask.any(axis=1)))} of the mask allows no pair"
        )
    scale = 1.0 / math.sqrt(q.shape[1])
    out = np.empty((n, v.shape[1]))
    for r0 in range(0, n, t):
        rows = slice(r0, min(r0 + t, n))
        largest = np.full(rows.stop - r0, -np.inf)
        total = np.zeros(rows.stop - r0)
        acc = np.zeros((rows.stop - r0, v.shape[1]))
        for c0 in range(0, m, t):
            cols = slice(c0, min(c0 + t, m))
            allowed = mask[rows, cols]
            if not allowed.any():
                continue  # a tile with no allowed pair is never computed
            scores = np.where(allowed, (q[rows] @ k[cols].T) * scale, -np.inf)
            largest, rescale, weights = _fold(largest, scores)
            total = rescale * total + weights.sum(axis=1)
            acc = rescale[:, None] * acc + weights @ v[cols]
        out[rows] = acc / total[:, None]
    return out


def tiles_with_pairs(tokens: int, tile: int, window: int | None = None) -> int:
    """Tiles of ``tile`` by ``tile`` scores, in the causal grid of ``tokens`` positions
    (cut to a ``window`` if given), that hold at least one allowed pair: the tiles a
    blockwise kernel computes; it skips the rest."""
    n, t = (
        checked_whole("tokens", tokens, minimum=1),
        checked_whole("tile", tile, minimum=1),
    )
    w = None if window is None else checked_whole("window", window, minimum=1)
    tiles = -(-n // t)
    i, j = np.indices((tiles, tiles))
    first_row, last_row = i * t, np.minimum((i + 1) * t, n) - 1
    first_col, last_col = j * t, np.minimum((j + 1) * t, n) - 1
    causal = first_col <= last_row  # some key at or before some query
    nearest = np.maximum(
        first_row - last_col, 0
    )  # the shortest distance back inside the tile
    keep = causal if w is None else causal & (nearest < w)
    return int(keep.sum())
