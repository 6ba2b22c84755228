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


# --- traffic, split-KV decoding, what the backward pass keeps ------------------------------

@pytest.mark.parametrize("n, d, tile, window", [(64, 16, 8, None), (60, 8, 16, None),
                                                 (64, 16, 8, 12), (33, 4, 5, 7)])
def test_traffic_counted_in_a_real_tiled_run_equals_the_formulas(n, d, tile, window):
    rng = np.random.default_rng(n + tile)
    q, k, v = rng.standard_normal((3, n, d))
    mask = masks.causal_mask(n) if window is None else masks.window_mask(n, window)
    tiled, moved = blockwise.counted_traffic(q, k, v, tile, mask)
    plain, plain_moved = blockwise.counted_traffic(q, k, v, None, mask)
    np.testing.assert_allclose(tiled, torch_attention(q, k, v, mask), atol=1e-12)
    np.testing.assert_allclose(plain, torch_attention(q, k, v, mask), atol=1e-12)
    assert moved == blockwise.tiled_attention_traffic(n, d, tile, window)
    assert plain_moved == blockwise.plain_attention_traffic(n, d)
    # by hand: queries and outputs once, a key tile and a value tile per tile computed
    computed = sum(min(tile, n - c) for r in range(0, n, tile) for c in range(0, n, tile)
                   if mask[r:r + tile, c:c + tile].any())
    assert moved == 2 * n * d + 2 * d * computed


def test_without_a_mask_tiles_cut_traffic_by_twice_the_tile_over_the_head():
    n, d, tile = 8192, 64, 128
    whole = blockwise.tiled_attention_traffic(n, d, tile, causal=False)
    assert whole == 2 * n * d + 2 * n * n * d // tile
    ratio = blockwise.plain_attention_traffic(n, d) / whole
    assert 2 * tile / d * 0.97 < ratio < 2 * tile / d


@pytest.mark.parametrize("keys, splits", [(1, 1), (100, 7), (64, 64), (10, 3)])
def test_split_kv_decoding_matches_pytorch(keys, splits):
    rng = np.random.default_rng(keys)
    q, k, v = rng.standard_normal(16) * 3, rng.standard_normal((keys, 16)), rng.standard_normal((keys, 8))
    reference = F.scaled_dot_product_attention(*(torch.from_numpy(x)[None] for x in (q[None], k, v)))
    np.testing.assert_allclose(blockwise.split_kv_attention(q, k, v, splits), reference[0, 0].numpy(),
                               atol=1e-12)


def test_softmax_statistics_against_a_real_tensor():
    lse = torch.zeros(24, 16, 8192, dtype=torch.float32)   # one log-sum per row, every head and layer
    assert blockwise.softmax_statistics_bytes(24, 16, 8192) == lse.numel() * lse.element_size()
