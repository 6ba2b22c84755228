"""Blockwise attention against PyTorch's attention and brute-force counts."""
import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from transformer_arithmetic import blockwise, masks

pytestmark = pytest.mark.torch_kernels


def torch_attention(q, k, v, mask):
    """PyTorch's scaled dot-product attention of one head, in float64."""
    as_t = [torch.from_numpy(x)[None, None] for x in (q, k, v)]
    return F.scaled_dot_product_attention(*as_t, attn_mask=torch.from_numpy(mask)[None, None])[0, 0].numpy()


@pytest.mark.parametrize("n, d, tile, window", [(16, 8, 4, None), (13, 5, 4, None), (16, 8, 3, 4),
                                                 (40, 16, 7, 5), (9, 4, 1, None), (9, 4, 20, 3)])
def test_blockwise_attention_matches_pytorch(n, d, tile, window):
    rng = np.random.default_rng(n * 100 + tile)
    q, k, v = (rng.standard_normal((n, d)) * 3 for _ in range(3))
    mask = masks.causal_mask(n) if window is None else masks.window_mask(n, window)
    ours = blockwise.blockwise_attention(q, k, v, tile, None if window is None else mask)
    np.testing.assert_allclose(ours, torch_attention(q, k, v, mask), rtol=0, atol=1e-12)


def test_blockwise_attention_with_a_rectangular_mask():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((5, 4)), rng.standard_normal((11, 4)), rng.standard_normal((11, 6))
    mask = np.ones((5, 11), dtype=bool)
    mask[:, 2:6] = False
    ours = blockwise.blockwise_attention(q, k, v, 3, mask)
    np.testing.assert_allclose(ours, torch_attention(q, k, v, mask), rtol=0, atol=1e-12)


def test_running_softmax_ends_at_the_whole_row_normaliser():
    rng = np.random.default_rng(0)
    row = rng.standard_normal(23) * 4
    row[[3, 17]] = -np.inf
    steps = blockwise.running_softmax(row, 5)
    assert len(steps) == math.ceil(23 / 5)
    largest, total = steps[-1]
    finite = row[np.isfinite(row)]
    assert largest == finite.max()
    assert math.isclose(total, math.fsum(math.exp(x - finite.max()) for x in finite), rel_tol=1e-13)
    # each step is the normaliser of the scores seen so far
    for i, (m, s) in enumerate(steps):
        seen = row[: (i + 1) * 5]
        seen = seen[np.isfinite(seen)]
        assert m == seen.max() and math.isclose(s, float(np.exp(seen - seen.max()).sum()), rel_tol=1e-13)


@pytest.mark.parametrize("n, tile, window", [(64, 8, None), (70, 8, None), (64, 8, 9), (64, 8, 8),
                                              (100, 7, 20), (5, 8, None), (33, 1, 3), (50, 6, 1)])
def test_tiles_with_pairs_match_a_brute_force_count(n, tile, window):
    mask = masks.causal_mask(n) if window is None else masks.window_mask(n, window)
    tiles = -(-n // tile)
    padded = np.zeros((tiles * tile, tiles * tile), dtype=bool)
    padded[:n, :n] = mask
    brute = int(padded.reshape(tiles, tile, tiles, tile).any(axis=(1, 3)).sum())
    assert blockwise.tiles_with_pairs(n, tile, window) == brute


@pytest.mark.parametrize("call, words", [
    (lambda: blockwise.running_softmax([1.0], 0), "tile must be at least 1, got 0"),
    (lambda: blockwise.running_softmax([], 2), "scores must be one non-empty row"),
    (lambda: blockwise.blockwise_attention(np.ones((3, 2)), np.ones((4, 2)), np.ones((4, 2)), 2),
     "the causal mask needs as many queries as keys"),
    (lambda: blockwise.blockwise_attention(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), 2,
                                           np.zeros((3, 3), dtype=bool)), "row 0 of the mask allows no pair"),
    (lambda: blockwise.tiles_with_pairs(10, 4, window=0), "window must be at least 1, got 0"),
])
def test_bad_inputs_name_the_bad_value(call, words):
    with pytest.raises(ValueError, match=words):
        call()
