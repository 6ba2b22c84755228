"""Answers of why-won section 6 (what is still open), computed by other routes: acceptance
patterns enumerated, each kernel's bytes and operations read off real PyTorch modules."""
import dataclasses
import itertools
import math

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token, parameters  # a real decode loop's cache; a real decoder's
from decoder_reference import kernels_decode  # a step kernel by kernel, from a real decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/06_still_open"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR


def tokens_by_enumeration(k: int, alpha: float) -> float:
    total = 0.0
    for pattern in itertools.product([True, False], repeat=k):
        p = math.prod(alpha if ok else 1 - alpha for ok in pattern)
        total += p * (next((i for i, ok in enumerate(pattern) if not ok), k) + 1)
    return total


def speculative_ms(g) -> float:
    k, alpha, context = g["ex_spec_drafted"], g["ex_spec_acceptance"], g["prompt"]
    draft = dataclasses.replace(M, layers=g["draft_layers"])
    one_round = k * kernels_decode(draft, A, context) + kernels_decode(M, A, context, positions=k + 1)
    return one_round / tokens_by_enumeration(k, alpha) * 1e3


def four_bit_ms(g) -> float:
    chip = dataclasses.replace(A, bytes_per_s=g["ex_bits_tb_per_s"] * 1e12)
    return kernels_decode(M, chip, g["ex_bits_context"], weight_bytes_per_number=0.5) * 1e3


def fit(g) -> int:
    grouped = dataclasses.replace(M, kv_heads=M.heads // g["group"])
    free = g["ex_fit_gib"] * 2**30 - parameters(grouped) * grouped.bytes_per_number
    return free // (cache_bytes_per_token(grouped) * g["long"])


CHECKS = {
    "ans_spec_tokens": lambda g: tokens_by_enumeration(g["ex_spec_drafted"], g["ex_spec_acceptance"]),
    "ans_spec_ms": speculative_ms,
    "ans_bits_ms": four_bit_ms,
    "ans_fit": fit,
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
