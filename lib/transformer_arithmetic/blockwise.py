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

Traffic is counted in numbers moved between the chip's main memory and its fast memory.
Plain attention writes one head's grid of scores out and reads it back twice over (the
scores, then the softmax weights): about 4 n^2 numbers, plus the queries, keys, values
and outputs. Tiled attention writes no grid, but reads every key and value tile once
for each tile of queries: about 2 n^2 d / tile numbers (half that under the causal
mask), plus the queries and outputs once. With the tile as large as fast memory M
allows (about M / d numbers a row), that is n^2 d^2 / M, less than n^2 by d^2 / M, not
zero.

At decode there is one query row: the keys and values are split among the chip's cores
instead, each split gives a partial (largest score, sum, weighted values), and the
partials are combined with the same rescaling as the tiles (split-KV decoding).
"""

from __future__ import annotations

import math

import numpy as np

from .checks import checked_whole

__all__ = [
    "running_softmax",
    "blockwise_attention",
    "tiles_with_pairs",
    "plain_attention_traffic",
    "tiled_attention_traffic",
    "counted_traffic",
    "split_kv_attention",
    "softmax_statistics_bytes",
]


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


def _checked(q, k, v, tile: int, mask):
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
    return q, k, v, t, mask


def _tiled(q, k, v, tile: int, mask) -> tuple[np.ndarray, int]:
    """The tiled computation: (outputs, numbers moved to and from main memory)."""
    q, k, v, t, mask = _checked(q, k, v, tile, mask)
    n, m = q.shape[0], k.shape[0]
    scale = 1.0 / math.sqrt(q.shape[1])
    out = np.empty((n, v.shape[1]))
    moved = 0
    for r0 in range(0, n, t):
        rows = slice(r0, min(r0 + t, n))
        queries = q[rows]  # one read of this tile of queries
        moved += queries.size
        largest = np.full(rows.stop - r0, -np.inf)
        total = np.zeros(rows.stop - r0)
        acc = np.zeros((rows.stop - r0, v.shape[1]))
        for c0 in range(0, m, t):
            cols = slice(c0, min(c0 + t, m))
            allowed = mask[rows, cols]
            if not allowed.any():
                continue  # a tile with no allowed pair is never computed
            keys, values = k[cols], v[cols]  # one read of a key tile and a value tile
            moved += keys.size + values.size
            scores = np.where(allowed, (queries @ keys.T) * scale, -np.inf)
            largest, rescale, weights = _fold(largest, scores)
            total = rescale * total + weights.sum(axis=1)
            acc = rescale[:, None] * acc + weights @ values
        out[rows] = acc / total[:, None]  # one write of this tile of outputs
        moved += out[rows].size
    return out, moved


def blockwise_attention(q, k, v, tile: int, mask=None) -> np.ndarray:
    """One head's attention output (softmax of the scaled query-key scores, times the
    values), computed tile by tile with a running largest score and running sums;
    ``mask`` (True = the pair may attend) defaults to the causal mask. Shape: one row
    per query, one column per value channel."""
    return _tiled(q, k, v, tile, mask)[0]


def _plain(q, k, v, mask) -> tuple[np.ndarray, int]:
    """Attention done plainly, its grid held in main memory: (outputs, numbers
    moved)."""
    q, k, v, _, mask = _checked(q, k, v, 1, mask)
    scores = np.where(mask, (q @ k.T) / math.sqrt(q.shape[1]), -np.inf)
    moved = q.size + k.size + scores.size  # read Q and K, write the scores
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    moved += scores.size + weights.size  # read the scores, write the weights
    out = weights @ v
    moved += weights.size + v.size + out.size  # read the weights and V, write O
    return out, moved


def counted_traffic(q, k, v, tile: int | None = None, mask=None):
    """(outputs, numbers moved between main and fast memory) of one head done plainly
    (``tile`` None: the whole grid written out and read back) or in tiles of ``tile``
    (queries and outputs once, a key and a value tile per tile computed)."""
    return _plain(q, k, v, mask) if tile is None else _tiled(q, k, v, tile, mask)


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


def plain_attention_traffic(tokens: int, head_dim: int) -> int:
    """Numbers one head moves when its grid is held in main memory: Q, K, V read and O
    written (4 n d); the scores written and read, the weights written and read
    (4 n^2)."""
    n = checked_whole("tokens", tokens, minimum=1)
    d = checked_whole("head_dim", head_dim, minimum=1)
    return 4 * n * d + 4 * n * n


def tiled_attention_traffic(
    tokens: int, head_dim: int, tile: int, window: int | None = None, causal=True
) -> int:
    """Numbers one head moves in tiles of ``tile``: each query tile and each output tile
    once (2 n d), and a key tile and a value tile for every tile computed (all of them,
    or only those ``tiles_with_pairs`` keeps under the causal mask or a window)."""
    n = checked_whole("tokens", tokens, minimum=1)
    d = checked_whole("head_dim", head_dim, minimum=1)
    t = checked_whole("tile", tile, minimum=1)
    if not causal:  # every query tile reads all n keys and n values
        return 2 * n * d + 2 * d * n * -(-n // t)
    i, j = np.indices((-(-n // t),) * 2)
    first_row, last_row = i * t, np.minimum((i + 1) * t, n) - 1
    first_col, last_col = j * t, np.minimum((j + 1) * t, n) - 1
    keep = first_col <= last_row
    if window is not None:
        w = checked_whole("window", window, minimum=1)
        keep &= np.maximum(first_row - last_col, 0) < w
    widths = np.where(keep, last_col - first_col + 1, 0)
    return 2 * n * d + 2 * d * int(widths.sum())


def split_kv_attention(q, k, v, splits: int) -> np.ndarray:
    """One query row's attention over every cached key and value, split into ``splits``
    stretches of the cache done apart (as the cores of a chip would): each gives its
    largest score, its sum of exp(score - largest) and its weighted values, and the
    partials are rescaled to the overall largest score and added."""
    q = np.asarray(q, dtype=float)
    k, v = np.asarray(k, dtype=float), np.asarray(v, dtype=float)
    if q.ndim != 1 or k.ndim != 2 or k.shape[1] != q.size or v.shape[0] != k.shape[0]:
        raise ValueError(
            f"q, k, v must be (d,), (keys, d), (keys, d_v); got {q.shape}, {k.shape}, "
            f"{v.shape}"
        )
    parts = checked_whole("splits", splits, minimum=1)
    scores = (k @ q) / math.sqrt(q.size)
    partials = []
    for piece in np.array_split(np.arange(k.shape[0]), parts):
        if piece.size:
            top = scores[piece].max()
            w = np.exp(scores[piece] - top)
            partials.append((top, w.sum(), w @ v[piece]))
    top = max(p[0] for p in partials)
    total = sum(s * math.exp(m - top) for m, s, _ in partials)
    return sum(o * math.exp(m - top) for m, _, o in partials) / total


def softmax_statistics_bytes(
    layers: int, heads: int, tokens: int, bytes_per_number: int = 4
) -> int:
    """Bytes a tiled kernel keeps for the backward pass instead of the grids: one
    number a row (the log of its softmax sum), for every head of every layer."""
    return (
        checked_whole("layers", layers, minimum=1)
        * checked_whole("heads", heads, minimum=1)
        * checked_whole("tokens", tokens, minimum=1)
        * checked_whole("bytes_per_number", bytes_per_number, minimum=1)
    )
