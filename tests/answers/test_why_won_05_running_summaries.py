"""Answers of why-won section 5 (running summaries), computed by other routes: real tensors,
a real decoder's cache, a closed form for the scan, and the walk run in PyTorch."""
import math

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from decoder_reference import DTYPES, cache_bytes_per_token  # of a real decode loop

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/05_running_summaries"
M = ta.EXAMPLE_MODEL
DTYPE = DTYPES[M.bytes_per_number]   # the torch format of the model's numbers


def state_bytes(g) -> int:
    """Bytes of a real tensor holding the state of every layer: layers x channels x numbers."""
    state = torch.zeros(M.layers, M.width, g["ex_state_size"], dtype=DTYPE)
    return state.numel() * state.element_size()


def scan_combines_closed_form(n: int) -> int:
    """Round r combines n - 2**r positions; summed over R rounds that is n*R - (2**R - 1)."""
    rounds = math.ceil(math.log2(n))
    return n * rounds - (2**rounds - 1)


def held_weight_by_walking(g) -> float:
    """Write the word with the reset step, then walk the held tokens one by one in torch."""
    h = torch.tensor(0.0, dtype=torch.float64)
    steps = [g["reset_step"]] + [g["ex_hold_step"]] * g["ex_hold_tokens"]
    for i, step in enumerate(steps):
        keep = torch.exp(torch.tensor(-step, dtype=torch.float64))
        h = keep * h + (1 - keep) * (1.0 if i == 0 else 0.0)
    return float(h)


CHECKS = {
    "ans_state_bytes": state_bytes,
    "ans_state_cross": lambda g: state_bytes(g) / cache_bytes_per_token(M),
    "ans_scan_rounds": lambda g: math.ceil(math.log2(g["ex_scan_tokens"])),
    "ans_scan_combines": lambda g: scan_combines_closed_form(g["ex_scan_tokens"]),
    "ans_hold_weight": held_weight_by_walking,
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
