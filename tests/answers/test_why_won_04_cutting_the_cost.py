"""Answers of why-won section 4 (cutting the cost of attention), from real PyTorch modules and
brute-force counts."""
import dataclasses

import numpy as np
import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token as real_cache_bytes_per_token  # of a real decode loop
from decoder_reference import weight_bytes as real_weight_bytes  # a real decoder's, built on the meta device
from decoder_reference import matrices, query_channels

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/04_cutting_the_cost"


def window_share(rows: int, window: int) -> float:
    """Allowed pairs under a window over allowed causal pairs, counted row by row."""
    kept = sum(min(i + 1, window) for i in range(rows))
    return kept / sum(i + 1 for i in range(rows))


def traffic_by_tiles(tokens: int, head: int, tile: int) -> int:
    """Numbers a tiled kernel moves without a mask, tile by tile: a query tile read and an
    output tile written per row of tiles, a key tile and a value tile per tile."""
    moved = 0
    widths = [min(tile, tokens - c0) for c0 in range(0, tokens, tile)]
    every_key_tile = sum(2 * width * head for width in widths)   # K and V, tile by tile
    for r0 in range(0, tokens, tile):
        moved += 2 * min(tile, tokens - r0) * head + every_key_tile  # Q and O, and K and V
    return moved


def plain_traffic(tokens: int, head: int) -> int:
    """Q, K, V read and O written; the scores and the weights each written and read."""
    return 4 * tokens * head + 4 * tokens * tokens


def backward_again(g) -> tuple[int, int]:
    """(the scores computed again in the backward pass, the training step's operations) for one
    row of train_n tokens, from a real decoder's modules: Q K^T over the causal pairs, two
    operations a pair and a query channel; and the step three times a forward pass of two
    operations a weight a token and four a pair and a channel."""
    m, n = ta.EXAMPLE_MODEL, g["train_n"]
    channels = query_channels(m)
    pairs = n * (n + 1) // 2
    weights = sum(i * o for _, i, o in matrices(m))
    return 2 * channels * pairs, 3 * (2 * weights * n + 4 * channels * pairs)


def online_by_torch(g) -> tuple[float, float]:
    """The row's largest score and its sum of exp(s - largest), from torch's logsumexp over
    the whole row rebuilt from the seed the notebook states."""
    rng = np.random.default_rng(0)
    q, k, _ = (rng.standard_normal((g["tile_n"], 8)) for _ in range(3))
    row = g["row"] - 1
    scores = torch.tensor(q[row] @ k[: row + 1].T / np.sqrt(8))
    top = float(scores.max())
    return top, float(torch.exp(torch.logsumexp(scores, 0) - top))


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
    * min(g["ex_cut_rows"], g["ex_cut_window"] - 1),   # transformers' sliding layer: W - 1
    "ans_cut_backward_ops": lambda g: backward_again(g)[0],
    "ans_cut_backward_share": lambda g: backward_again(g)[0] / backward_again(g)[1],
    "ans_cut_backward_ms": lambda g: backward_again(g)[0] / ta.EXAMPLE_ACCELERATOR.flops_per_s * 1e3,
    "ans_cut_traffic_ratio": lambda g: plain_traffic(g["traffic_n"], g["traffic_head"])
    / traffic_by_tiles(g["traffic_n"], g["traffic_head"], g["ex_cut_tile"]),
    "ans_cut_traffic_smallest": lambda g: next(
        t for t in range(1, g["traffic_n"])
        if traffic_by_tiles(g["traffic_n"], g["traffic_head"], t)
        < plain_traffic(g["traffic_n"], g["traffic_head"])),
    "ans_cut_online_max": lambda g: online_by_torch(g)[0],
    "ans_cut_online_sum": lambda g: online_by_torch(g)[1],
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
