"""Answers of why-won section 4 (cutting the cost of attention), from real PyTorch modules and
brute-force counts."""
import dataclasses

import numpy as np
import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.reference_model import Decoder, cache_bytes

NOTEBOOK = "why_won/04_cutting_the_cost"


def real_cache_bytes_per_token(shape: ta.ModelShape) -> int:
    """Bytes a real decoder of this attention shape adds to its cache per token."""
    probe = dataclasses.replace(shape, ffn_width=8, vocab=8)
    decoder = Decoder(probe).to(torch.bfloat16 if shape.bytes_per_number == 2 else torch.float32).eval()
    row, cache = decoder.generate(torch.tensor([[1]]), new_tokens=1)
    return cache_bytes(cache) // row.shape[1]


def real_weight_bytes(shape: ta.ModelShape) -> int:
    """Bytes of the weights of a real decoder of this shape (built on the meta device)."""
    with torch.device("meta"):
        decoder = Decoder(shape)
    return sum(p.numel() for p in {id(p): p for p in decoder.parameters()}.values()) * shape.bytes_per_number


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
    """Tiles of the score grid holding at least one allowed pair, tile by tile from the pairs."""
    count = 0
    for r0 in range(0, tokens, tile):
        rows = np.arange(r0, min(r0 + tile, tokens))[:, None]
        for c0 in range(0, tokens, tile):
            cols = np.arange(c0, min(c0 + tile, tokens))[None, :]
            allowed = cols <= rows
            if window is not None:
                allowed &= rows - cols < window
            count += bool(allowed.any())
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
