"""Answers of why-won section 2 (recurrent networks), from a real PyTorch decoder and brute force."""
import dataclasses

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import kernels_prefill

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/02_recurrent_networks"


def real_prefill_ms(m: ta.ModelShape, acc: ta.Accelerator, tokens: int) -> float:
    """Milliseconds to read a prompt kernel by kernel, from a real decoder's modules and cache
    (``decoder_reference.kernels_prefill``)."""
    return kernels_prefill(m, acc, tokens) * 1e3


def faster_chip(g) -> ta.Accelerator:
    acc = ta.EXAMPLE_ACCELERATOR
    return dataclasses.replace(acc, flops_per_s=acc.flops_per_s * g["ex_rnn_chip_factor"])


def rate_by_bisection(share: float, steps: int) -> float:
    """The rate whose steps-fold product is ``share``, found by halving an interval."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        left = 1.0
        for _ in range(steps):
            left *= mid
        lo, hi = (mid, hi) if left < share else (lo, mid)
    return (lo + hi) / 2


def steps_by_walking(rate: float, share: float) -> int:
    left, steps = 1.0, 0
    while left >= share:
        left, steps = left * rate, steps + 1
    return steps


CHECKS = {
    "ans_rnn_fast_pass_ms": lambda g: real_prefill_ms(ta.EXAMPLE_MODEL, faster_chip(g), g["positions"]),
    "ans_rnn_fast_chain_ms": lambda g: sum(g["step_us"] for _ in range(g["positions"])) / 1e3,
    "ans_rnn_half_rate": lambda g: rate_by_bisection(0.5, g["ex_rnn_half_steps"]),
    "ans_rnn_steps": lambda g: steps_by_walking(g["rate_pct"] / 100, g["ex_rnn_share_pct"] / 100),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
