"""Answers of training section 2 (the causal mask), by brute force and PyTorch's attention."""
import pytest
import torch
from torch.nn import functional as F

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic import simulated

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


def even_weight(pos: int) -> float:
    """The weight position `pos` gives position 1 when every score is equal, by PyTorch's
    own causal attention (zero queries and keys, identity values)."""
    n = len(simulated.INPUTS)
    zeros = torch.zeros(1, n, 4, dtype=torch.float64)
    out = F.scaled_dot_product_attention(zeros, zeros, torch.eye(n, dtype=torch.float64)[None], is_causal=True)
    return out[0, pos - 1, 0].item()


CHECKS = {
    "ans_mask_full": lambda g: M.layers * M.heads * g["ex_mask_tokens"] ** 2,
    "ans_mask_skipped": lambda g: M.layers * M.heads * blocked_pairs(g["ex_mask_tokens"]),
    "ans_mask_leak_small": lambda g: leak(g["ex_mask_fill_small"], g["row"]),
    "ans_mask_leak_big": lambda g: leak(g["ex_mask_fill_big"], g["row"]),
    "ans_mask_even_weight": lambda g: even_weight(g["ex_mask_even_pos"]),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
