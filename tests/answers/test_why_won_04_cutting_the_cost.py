"""Answers of why-won section 4 (cutting the cost of attention), from real PyTorch modules and
brute-force counts."""
import dataclasses

import numpy as np
import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token as real_cache_bytes_per_token  # of a real decode loop
from decoder_reference import weight_bytes as real_weight_bytes  # a real decoder's, built on the meta device

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/04_cutting_the_cost"


def window_share(rows: int, window: int) -> float:
    """Allowed pairs under a window over allowed causal pairs, counted row by row."""
    kept = sum(min(i + 1, window) for i in range(rows))
    return kept / sum(i + 1 for i in range(rows))


def fit(g, kv_heads: int) -> int:
    """Conversations of conv_len tokens whose real caches fit beside the real weights."""
    shape = dataclasses.replace(ta.EXAMPLE_MODEL, kv_heads=kv_heads)
    free = ta.EXAMPLE_ACCELERATOR.memory_bytes - real_weight_bytes(shape)
    return free // (real_cache_bytes_per_token(shape) * g["conv_len"])


def tiles_touched(tokens: int, tile: int, window: int | None) -> int:
    """Tiles of the score grid holding at least one allowed pair, from the pairs: one row of
    tiles at a time, the allowed pairs of every tile in it marked and each tile asked for any."""
    tiles = -(-tokens // tile)
    cols = np.arange(tiles * tile)[None, :]           # columns past the last token allow nothing
    count = 0
    for r0 in range(0, tokens, tile):
        rows = np.arange(r0, min(r0 + tile, tokens))[:, None]
        allowed = (cols <= rows) & (cols < tokens)
        if window is not None:
            allowed &= cols > rows - window   # rows - cols < window
        count += int(allowed.reshape(len(rows), tiles, tile).any(axis=(0, 2)).sum())
    return count


CHECKS = {
    "ans_cut_window_share": lambda g: window_share(g["ex_cut_rows"], g["ex_cut_window"]),
    "ans_cut_window_bytes": lambda g: real_cache_bytes_per_token(ta.EXAMPLE_MODEL)
    * min(g["ex_cut_rows"], g["ex_cut_window"]),
    "ans_cut_fit_full": lambda g: fit(g, g["kv_full"]),
    "ans_cut_fit_group": lambda g: fit(g, g["kv_group"]),
    "ans_cut_fit_one": lambda g: fit(g, g["kv_one"]),
    "ans_cut_tiles_causal": lambda g: tiles_touched(g["ex_cut_tokens"], g["big_tile"], None),
    "ans_cut_tiles_window": lambda g: tiles_touched(g["ex_cut_tokens"], g["big_tile"], g["long_window"]),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
