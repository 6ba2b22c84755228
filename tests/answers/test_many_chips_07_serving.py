"""Answers of the serving section, from the decode step written out by hand: each device's
share of a real decoder's weights and cache read at the chip's rate, plus the ring waits of
two all-reduces a layer."""
import dataclasses

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token
from transformer_arithmetic.many_chips_inputs import MACHINE_DEVICES, NETWORK, NVLINK, REAL_CHIP, grown
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.torch_kernels]

NOTEBOOK = "many_chips/07_serving"
BIG = grown(ta.EXAMPLE_MODEL)
CONTEXT, FIT_CONTEXT = 2048, 8192


def device_weights(m, n):
    """Bytes of weights a device holds: 1/n of every matrix (a whole key-value head when there
    are fewer than n), every norm whole, the table cut by vocabulary."""
    kv = max(m.kv_heads // n, 1)
    layer = (2 * m.width * (m.heads // n) * m.head_dim + 2 * m.width * kv * m.head_dim
             + m.ffn_matrices * m.width * m.ffn_width // n + 2 * m.width)
    return (m.layers * layer + m.vocab // n * m.width + m.width) * m.bytes_per_number


def device_cache(m, n):
    return cache_bytes_per_token(m) * max(m.kv_heads // n, 1) // m.kv_heads


def token_time(n):
    read = (device_weights(BIG, n) + CONTEXT * device_cache(BIG, n)) / REAL_CHIP.bytes_per_s
    flops = 2 * device_weights(BIG, n) / BIG.bytes_per_number + 4 * BIG.layers * BIG.heads // n * BIG.head_dim * CONTEXT
    one = BIG.width * BIG.bytes_per_number
    wait = 2 * BIG.layers * (2 * (n - 1) * NVLINK.step_latency_s + 2 * (n - 1) / n * one / NVLINK.bytes_per_s)
    return max(read, flops / REAL_CHIP.flops_per_s) + (wait if n > 1 else 0.0)


def fitting_sizes():
    return [n for n in (1, 2, 4, 8)
            if device_weights(BIG, n) + CONTEXT * device_cache(BIG, n) <= REAL_CHIP.memory_bytes]


def quickest():
    return min(fitting_sizes(), key=token_time)


def conversations(m, n):
    room = max(REAL_CHIP.memory_bytes - device_weights(m, n), 0)
    return room // (FIT_CONTEXT * device_cache(m, n))


def grouped():
    return dataclasses.replace(BIG, kv_heads=MACHINE_DEVICES)


def ship(tokens, link):
    return link.step_latency_s + cache_bytes_per_token(grouped()) * tokens / link.bytes_per_s


CHECKS = {
    "ans_mc_serve_best": lambda g: quickest(),
    "ans_mc_serve_best_ms": lambda g: token_time(quickest()) * 1e3,
    "ans_mc_serve_speedup": lambda g: token_time(min(fitting_sizes())) / token_time(quickest()),
    "ans_mc_fit_one": lambda g: conversations(grouped(), MACHINE_DEVICES),
    "ans_mc_fit_pairs": lambda g: conversations(grouped(), 2) * (MACHINE_DEVICES // 2),
    "ans_mc_ship_size": lambda g: size_text(cache_bytes_per_token(grouped()) * g["ex_mc_ship_tokens"]),
    "ans_mc_ship_network_ms": lambda g: ship(g["ex_mc_ship_tokens"], NETWORK) * 1e3,
    "ans_mc_ship_nvlink_ms": lambda g: ship(g["ex_mc_ship_tokens"], NVLINK) * 1e3,
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
