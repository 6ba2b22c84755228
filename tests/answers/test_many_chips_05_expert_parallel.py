"""Answers of the expert section: the all-to-all's bytes counted copy by copy, and the dropped
share from the binomial distribution in exact rational arithmetic."""
from fractions import Fraction
from math import comb

import pytest

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.many_chips_inputs import NETWORK, grown
from transformer_arithmetic.units import size_text

pytestmark = pytest.mark.notebooks

NOTEBOOK = "many_chips/05_expert_parallel"
BIG = grown(ta.EXAMPLE_MODEL)
EXPERTS, CHOSEN = 64, 8


def ep_bytes(tokens, k, n):
    """Copies leaving a device under the even router (copy j of token t to device (t k + j)
    mod n), out and back, d numbers each."""
    away = sum(1 for t in range(tokens) for j in range(k) if (t * k + j) % n != 0)
    return 2 * away * BIG.width * BIG.bytes_per_number


def dropped(tokens, factor):
    p = Fraction(CHOSEN, EXPERTS)
    cap = int(Fraction(factor).limit_denominator(1000) * tokens * p)
    excess = sum((j - cap) * comb(tokens, j) * p**j * (1 - p) ** (tokens - j)
                 for j in range(cap + 1, tokens + 1))
    return excess / (tokens * p)


def smallest_factor(tokens, target):
    for step in range(0, 61):
        factor = Fraction(100 + 5 * step, 100)
        if dropped(tokens, factor) <= Fraction(target).limit_denominator(10**6):
            return float(factor)


CHECKS = {
    "ans_mc_ep_sent": lambda g: size_text(ep_bytes(g["ex_mc_ep_tokens"], g["ex_mc_ep_k"],
                                                   g["ex_mc_ep_devices"])),
    "ans_mc_ep_ms": lambda g: ep_bytes(g["ex_mc_ep_tokens"], g["ex_mc_ep_k"], g["ex_mc_ep_devices"])
    / NETWORK.bytes_per_s * 1e3,
    "ans_mc_capacity": lambda g: smallest_factor(g["ex_mc_cap_tokens"], g["ex_mc_cap_target"]),
    "ans_mc_ep_equal_k": lambda g: (2 * 2 * 7 / 8) / (2 * 7 / 8),   # TP's two all-reduces over k=1
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
