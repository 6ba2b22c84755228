"""Answers of training section 3 (teacher forcing, training memory and time): parameters
counted on a real PyTorch module, memory from the published per-layer formulas, lengths and
budgets by other routes."""
import math

import pytest

import published
import transformer_arithmetic as ta
from transformer_calculator.reading.plain import shipped_shape
from checking import check
from decoder_reference import parameters as torch_params  # a real decoder's, built on the meta device

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/03_teacher_forcing"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR
LLAMA = shipped_shape("llama-3-8b")   # the sizes of its published config.json
H100_BYTES = published.chip("h100-sxm").memory_bytes


def biggest_batch(seq_len: int, gpt3_era: bool) -> int:
    """The most sequences that fit, solved in closed form from Korthikanti et al.'s per-layer
    s*b*h*(34 + 5*a*s/h) with dropout and stored grids, or s*b*h*32 without either (their 34
    less two bytes of dropout masks), and 4-byte logits; 16 bytes a parameter for the rest."""
    s, h, a = seq_len, M.width, M.heads
    per_layer = 34 * s * h + 5 * a * s * s if gpt3_era else 32 * s * h
    per_sequence = M.layers * per_layer + s * M.vocab * 4
    return (A.memory_bytes - 16 * torch_params(M)) // per_sequence


def fewest_chips() -> int:
    """Chips over which 18 bytes a parameter of the real shape fit in three quarters of each."""
    return next(c for c in range(1, 1000) if 18 * torch_params(LLAMA) / c <= 0.75 * H100_BYTES)


def best_params(budget: float) -> float:
    """The P with 6 P (20 P) = budget, by bisection on the run's operations."""
    low, high = 1.0, 1e15
    for _ in range(200):
        mid = (low * high) ** 0.5
        low, high = (mid, high) if 6 * mid * 20 * mid < budget else (low, mid)
    return (low * high) ** 0.5


def budget(g) -> float:
    return g["ex_tf_team_chips"] * published.chip("h100-sxm").bf16_flops_per_s * g["u"] * g["ex_tf_team_days"] * 24 * 3600


CHECKS = {
    "ans_tf_batch_today": lambda g: biggest_batch(g["seq_len"], False),
    "ans_tf_batch_kept": lambda g: biggest_batch(g["seq_len"], True),
    "ans_tf_longest": lambda g: math.floor(math.log(0.5) / math.log(g["ex_tf_q"])),
    "ans_tf_chips": lambda g: fewest_chips(),
    "ans_tf_left_gib": lambda g: (H100_BYTES - 18 * torch_params(LLAMA) / fewest_chips()) / 2**30,
    "ans_tf_budget_params_b": lambda g: best_params(budget(g)) / 1e9,
    "ans_tf_budget_tokens_b": lambda g: 20 * best_params(budget(g)) / 1e9,
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
