"""Answers of training section 2 (the causal mask), by brute force and PyTorch's attention."""
from functools import lru_cache

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.examples import simulated

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/02_causal_mask"
M = ta.EXAMPLE_MODEL


def blocked_pairs(n: int) -> int:
    """Pairs above the diagonal of an n-by-n grid, counted from a real boolean mask."""
    return int(torch.ones(n, n, dtype=torch.bool).triu(1).sum())


def leak(fill: float, row: int) -> float:
    """Weight row `row` of the simulated scores puts on later positions when they are
    filled with `fill`, through torch's masked_fill and softmax."""
    scores = torch.tensor(simulated.SCORES, dtype=torch.float64)
    later = torch.ones_like(scores, dtype=torch.bool).triu(1)
    weights = torch.softmax(scores.masked_fill(later, fill), dim=-1)
    return weights[row - 1, row:].sum().item()


def largest_safe_fill(row: int, limit: float) -> float:
    """The fill at which torch's masked softmax of row `row` leaks exactly `limit`, found by
    bisection on the leak itself (it rises with the fill)."""
    low, high = -100.0, 10.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if leak(mid, row) < limit else (low, mid)
    return (low + high) / 2


@lru_cache(maxsize=None)
def tiles_computed(tokens: int, t: int) -> tuple[int, float]:
    """Tiles of a causal tiled kernel and the blocked share of their scores, counted tile by
    tile from a real boolean mask."""
    allowed = torch.ones(tokens, tokens, dtype=torch.bool).tril()
    tiles = allowed.unflatten(0, (-1, t)).unflatten(2, (-1, t)).any(dim=(1, 3))
    computed = int(tiles.sum()) * t * t
    return int(tiles.sum()), (computed - int(allowed.sum())) / computed


CHECKS = {
    "ans_mask_full": lambda g: M.layers * M.heads * g["ex_mask_tokens"] ** 2,
    "ans_mask_skipped": lambda g: M.layers * M.heads * blocked_pairs(g["ex_mask_tokens"]),
    "ans_mask_leak_small": lambda g: leak(g["ex_mask_fill_small"], g["row"]),
    "ans_mask_leak_big": lambda g: leak(g["ex_mask_fill_big"], g["row"]),
    "ans_mask_fill": lambda g: largest_safe_fill(g["row"], g["ex_mask_leak_limit"]),
    "ans_mask_tiles": lambda g: tiles_computed(g["ex_mask_tile_tokens"], g["ex_mask_tile"])[0],
    "ans_mask_waste": lambda g: tiles_computed(g["ex_mask_tile_tokens"], g["ex_mask_tile"])[1],
    "ans_mask_waste_half": lambda g: tiles_computed(g["ex_mask_tile_tokens"], g["ex_mask_tile"] // 2)[1],
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
