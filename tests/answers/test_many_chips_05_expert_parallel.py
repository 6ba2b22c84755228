"""Answers of the expert section: the all-to-all's bytes counted copy by copy, the dropped share
from the binomial distribution in exact rational arithmetic, the per-token comparison from the
two splits' collectives, and the redundant copies by an exhaustive search over every way of
handing them to the experts."""
import itertools
from fractions import Fraction
from math import comb

import pytest

import published
import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.examples.many_chips import NETWORK, grown
from transformer_arithmetic.units import size_text

pytestmark = pytest.mark.notebooks

NOTEBOOK = "many_chips/05_expert_parallel"
BIG = grown(ta.EXAMPLE_MODEL)
EXPERTS, CHOSEN = 64, 8
LOADS = [90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86]   # EPLB's README, layer 1
V3 = published.model_config("deepseek-v3-fp8")
DECODE = published.plan("deepseek-v3-decode")


def ep_bytes(tokens, k, n):
    """Copies leaving a device under the even router (copy j of token t to device (t k + j)
    mod n), out and back, d numbers each."""
    away = sum(1 for t in range(tokens) for j in range(k) if (t * k + j) % n != 0)
    return 2 * away * BIG.width * BIG.bytes_per_number


def once_bytes(tokens, nodes):
    """Each token to each of ``nodes`` machines once: d numbers at a byte and a four-byte
    scale for every 128 out, two bytes back."""
    return tokens * nodes * BIG.width * (1 + Fraction(4, 128) + 2)


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


def best_busiest(r):
    """The least busiest chip over every way of giving r extra copies to the experts (one
    expert or copy a chip, each copy an equal share of its expert's load), over an even
    share."""
    even = sum(LOADS) / len(LOADS)
    best = None
    for picks in itertools.combinations_with_replacement(range(len(LOADS)), r):
        copies = [1 + picks.count(e) for e in range(len(LOADS))]
        busiest = max(load / c for load, c in zip(LOADS, copies))
        best = busiest if best is None else min(best, busiest)
    return best / even


def fewest_copies(target):
    return next(r for r in range(0, 9) if best_busiest(r) <= target)


CHECKS = {
    "ans_mc_ep_sent": lambda g: size_text(ep_bytes(g["ex_mc_ep_tokens"], g["ex_mc_ep_k"],
                                                   g["ex_mc_ep_devices"])),
    "ans_mc_ep_ms": lambda g: ep_bytes(g["ex_mc_ep_tokens"], g["ex_mc_ep_k"], g["ex_mc_ep_devices"])
    / NETWORK.bytes_per_s * 1e3,
    "ans_mc_ep_once": lambda g: size_text(float(once_bytes(g["ex_mc_ep_tokens"], g["ex_mc_ep_nodes"]))),
    "ans_mc_ep_once_ms": lambda g: float(once_bytes(g["ex_mc_ep_tokens"], g["ex_mc_ep_nodes"]))
    / NETWORK.bytes_per_s * 1e3,
    "ans_mc_capacity": lambda g: smallest_factor(g["ex_mc_cap_tokens"], g["ex_mc_cap_target"]),
    "ans_mc_ep_times": lambda g: (8 * 4 * 7 / 8) / (2 * 7 / 8 * 2),   # eight devices, k = 2
    "ans_mc_red_copies": lambda g: fewest_copies(1 + g["ex_mc_red_target"]),
    "ans_mc_red_ratio": lambda g: best_busiest(fewest_copies(1 + g["ex_mc_red_target"])),
    "ans_mc_red_bytes": lambda g: size_text(3 * V3["hidden_size"] * V3["moe_intermediate_size"]),
    "ans_mc_red_share": lambda g: fewest_copies(1 + g["ex_mc_red_target"]) / len(LOADS),
    "ans_mc_red_unit": lambda g: DECODE["ep"],
    "ans_mc_red_unit_extra": lambda g: DECODE["devices_for_redundant_and_shared"],
    "ans_mc_red_unit_share": lambda g: 64 / (320 - 64),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
