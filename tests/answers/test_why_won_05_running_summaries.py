"""Answers of why-won section 5 (running summaries), computed by other routes: real tensors,
a real decoder's cache, the scans' counts by recursion and closed form, and the walk run in
PyTorch."""
import math

import pytest
import torch

import published
import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token  # of a real decode loop

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/05_running_summaries"
M = ta.EXAMPLE_MODEL
UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def best_chunk_by_trying(chip_name: str | None, dk: int, dv: int, b_s: int = 4) -> float:
    """The chunk of least time, 2 tau (dk + dv) / R + 2 dk dv b_s / (tau S), found by trying chunks
    on a fine grid and refining around the best (the example accelerator when no name)."""
    chip = ta.EXAMPLE_ACCELERATOR if chip_name is None else ta.accelerator_of(published.chip(chip_name))
    cost = lambda q: 2 * q * (dk + dv) / chip.flops_per_s + 2 * dk * dv * b_s / (q * chip.bytes_per_s)
    q = min((x / 10 for x in range(10, 100_000)), key=cost)
    lo, hi = q - 0.1, q + 0.1
    for _ in range(200):                      # golden-section search on the bracket
        m1, m2 = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        lo, hi = (lo, m2) if cost(m1) < cost(m2) else (m1, hi)
    return (lo + hi) / 2


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
    "ans_chunk_example": lambda g: best_chunk_by_trying(None, M.head_dim, M.head_dim),
    "ans_chunk_h100": lambda g: best_chunk_by_trying("h100-sxm", M.head_dim, M.head_dim),
    "ans_chunk_mamba2": lambda g: best_chunk_by_trying("h100-sxm", g["ex_chunk_nk"], g["ex_chunk_nv"]),
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
    check(NOTEBOOK, key, CHECKS[key], rel=1e-6 if key.startswith("ans_chunk") else 1e-9)
