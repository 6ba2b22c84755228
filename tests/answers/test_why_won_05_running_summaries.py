"""Answers of why-won section 5 (running summaries), computed by other routes: real tensors,
a real decoder's cache, the scans' counts by recursion and closed form, and the walk run in
PyTorch."""
import math

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token  # of a real decode loop

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/05_running_summaries"
M = ta.EXAMPLE_MODEL
UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def linear_state(g) -> int:
    """A real tensor holding one layer's states: a d_h by d_h matrix per head."""
    return torch.zeros(g["heads"], M.head_dim, M.head_dim).numel()


def cache_numbers_per_layer() -> float:
    """Numbers one token adds to one layer's cache, from a real decode loop's bytes."""
    return cache_bytes_per_token(M) / M.layers / M.bytes_per_number


def scan_combines_closed_form(n: int) -> int:
    """Round r combines n - 2**r positions; summed over R rounds that is n*R - (2**R - 1)."""
    rounds = math.ceil(math.log2(n))
    return n * rounds - (2**rounds - 1)


def tree_combines_by_recursion(n: int) -> int:
    """Blelloch's scan on n = 2**k: pair up neighbours (n/2 combines), scan the n/2 pairs,
    then fill in the n/2 - 1 positions in between."""
    return 1 if n == 2 else n // 2 + tree_combines_by_recursion(n // 2) + n // 2 - 1


def state_tensor_bytes(g, state_size: int) -> int:
    """A real four-byte tensor for every block's widened channels and state numbers."""
    state = torch.zeros(g["mamba_layers"], g["mamba_expand"] * M.width, state_size,
                        dtype=torch.float32)
    return state.numel() * state.element_size()


def largest_state(g) -> int:
    number, unit = g["ex_state_budget"].split()
    budget, size = float(number) * UNITS[unit], 1
    while state_tensor_bytes(g, 2 * size) <= budget:
        size *= 2
    return size


def held_weight_by_walking(g) -> float:
    """Write the word with the reset step, then walk the held tokens one by one in torch."""
    h = torch.tensor(0.0, dtype=torch.float64)
    steps = [g["reset_step"]] + [g["ex_hold_step"]] * g["ex_hold_tokens"]
    for i, step in enumerate(steps):
        keep = torch.exp(torch.tensor(-step, dtype=torch.float64))
        h = keep * h + (1 - keep) * (1.0 if i == 0 else 0.0)
    return float(h)


CHECKS = {
    "ans_linear_state": linear_state,
    "ans_linear_cross": lambda g: linear_state(g) / cache_numbers_per_layer(),
    "ans_scan_rounds": lambda g: math.ceil(math.log2(g["ex_scan_tokens"])),
    "ans_scan_combines": lambda g: scan_combines_closed_form(g["ex_scan_tokens"]),
    "ans_scan_tree": lambda g: tree_combines_by_recursion(g["ex_scan_tokens"]),
    "ans_state_size": largest_state,
    "ans_state_bytes": lambda g: state_tensor_bytes(g, largest_state(g)),
    "ans_state_cross": lambda g: state_tensor_bytes(g, largest_state(g)) / cache_bytes_per_token(M),
    "ans_hold_weight": held_weight_by_walking,
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
