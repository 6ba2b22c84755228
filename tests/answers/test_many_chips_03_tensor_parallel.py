"""Answers of the tensor-parallel section: the width where a plain layer's all-reduces last as
long as its arithmetic, found by bisection on the two times written out; a step's traffic
from the all-reduces it calls; the cache a device keeps from a real decoder's cache."""
import dataclasses

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token
from transformer_arithmetic.many_chips_inputs import MACHINE_DEVICES, NVLINK, REAL_CHIP, grown
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.torch_kernels]

NOTEBOOK = "many_chips/03_tensor_parallel"
BIG = grown(ta.EXAMPLE_MODEL)
DEVICES, TOKENS = 8, 8 * 2048


def width_where_equal():
    """d at which 2 T 12 d^2 / (N R) = 4 (N - 1)/N T d b / S (b = 2), by bisection."""
    def sending_wins(d):
        arithmetic = 2 * TOKENS * 12 * d * d / DEVICES / REAL_CHIP.flops_per_s
        sending = 4 * (DEVICES - 1) / DEVICES * TOKENS * d * 2 / NVLINK.bytes_per_s
        return sending > arithmetic
    low, high = 1.0, 1e7
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if sending_wins(mid) else (low, mid)
    return high


def step_bytes():
    one = TOKENS * BIG.width * BIG.bytes_per_number
    return BIG.layers * 4 * 2 * (DEVICES - 1) / DEVICES * one


def grouped():
    return dataclasses.replace(BIG, kv_heads=MACHINE_DEVICES)


def per_device(n):
    """A real decoder's cache a token, times the share of its key-value heads a device keeps
    (one whole head when there are fewer heads than devices)."""
    m = grouped()
    return cache_bytes_per_token(m) * max(m.kv_heads // n, 1) // m.kv_heads


CHECKS = {
    "ans_mc_tp_width": lambda g: width_where_equal(),
    "ans_mc_tp_step": lambda g: size_text(step_bytes()),
    "ans_mc_tp_step_s": lambda g: step_bytes() / NVLINK.bytes_per_s,
    "ans_mc_kv_low": lambda g: per_device(g["ex_mc_kv_low"]),
    "ans_mc_kv_high": lambda g: per_device(g["ex_mc_kv_high"]),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
