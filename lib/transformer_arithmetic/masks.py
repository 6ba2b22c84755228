"""Attention masks: which (query, key) pairs of positions may attend, and how many there
are.

A mask is a boolean grid: row i is the position doing the looking, column j the
position looked at; True means the pair is allowed. Positions are 0-based here.

The pair counts are plain integer arithmetic; only the grids need numpy, which is
imported where a grid is built, so the calculator (which counts pairs) runs where numpy
is not installed: in the reader's browser, under Pyodide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .checks import checked_whole

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "causal_mask",
    "window_mask",
    "window_global_mask",
    "causal_pairs",
    "window_pairs",
    "window_global_pairs",
    "window_reach",
    "apply_mask",
    "window_overflow",
]


def causal_mask(n: int) -> np.ndarray:
    """An n-by-n grid allowing each position itself and every earlier position."""
    import numpy as np

    n = checked_whole("n", n)
    return np.tri(n, dtype=bool)


def window_mask(n: int, window: int) -> np.ndarray:
    """The causal grid cut to a band: each position sees itself and ``window - 1``
    before it."""
    import numpy as np

    w = checked_whole("window", window, minimum=1)
    n = checked_whole("n", n)
    rows, cols = np.indices((n, n))
    return (cols <= rows) & (rows - cols < w)


def window_global_mask(n: int, window: int, n_global: int) -> np.ndarray:
    """A window plus the first ``n_global`` positions, which every later position may
    read."""
    g = checked_whole("n_global", n_global)
    mask = window_mask(n, window)
    mask[:, :g] |= causal_mask(n)[:, :g]
    return mask


def causal_pairs(n: int) -> int:
    """Allowed pairs under the causal mask for ``n`` positions: n(n+1)/2."""
    n = checked_whole("n", n)
    return n * (n + 1) // 2


def window_pairs(n: int, window: int) -> int:
    """Allowed pairs when each of ``n`` positions sees at most ``window`` positions."""
    n, w = checked_whole("n", n), checked_whole("window", window, minimum=1)
    w = min(w, n)
    return w * (w + 1) // 2 + (n - w) * w


def window_global_pairs(n: int, window: int, n_global: int) -> int:
    """Allowed pairs for a window plus ``n_global`` positions everyone may read."""
    n, w = checked_whole("n", n), checked_whole("window", window, minimum=1)
    g = checked_whole("n_global", n_global)
    extra = sum(
        max(0, n - j - w) for j in range(min(g, n))
    )  # rows too far to see j in the window
    return window_pairs(n, w) + extra


def window_reach(window: int, layers: int) -> int:
    """Furthest distance back, in positions, that ``layers`` stacked windows can carry
    information."""
    layers = checked_whole("layers", layers)
    window = checked_whole("window", window, minimum=1)
    return layers * (window - 1)


def apply_mask(
    scores: np.ndarray, mask: np.ndarray, fill: float = float("-inf")
) -> np.ndarray:
    """The scores with every blocked pair replaced by ``fill`` (minus infinity by
    default)."""
    import numpy as np

    scores = np.asarray(scores, dtype=float)
    if scores.shape[-2:] != mask.shape:  # leading batch and head dimensions broadcast
        raise ValueError(
            f"scores of shape {scores.shape} do not match a mask of shape {mask.shape}"
        )
    return np.where(mask, scores, fill)


def window_overflow(tokens: int, window: int) -> tuple[int, float]:
    """Oldest tokens a conversation of ``tokens`` loses when only the newest ``window``
    fit, and that loss as a fraction of the conversation (0 when it fits)."""
    n, w = checked_whole("tokens", tokens), checked_whole("window", window, minimum=1)
    dropped = max(0, n - w)
    return dropped, (dropped / n if n else 0.0)
