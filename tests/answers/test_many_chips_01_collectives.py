"""Answers of the collectives section, from the definitions written out again: nccl-tests'
bus bandwidth, a search for where ring and tree cross, the two-level all-reduce's sends."""
import math

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import weight_bytes
from transformer_arithmetic.many_chips_inputs import MACHINE_DEVICES, NETWORK, NVLINK, grown
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.meta_device]

NOTEBOOK = "many_chips/01_collectives"
BUS_BYTES, BUS_DEVICES, BUS_SECONDS = 2**30, 8, 5e-3   # the exercise's inputs
MACHINES = 4


def ring(x, n, link):
    return 2 * (n - 1) * link.step_latency_s + 2 * (n - 1) / n * x / link.bytes_per_s


def tree(x, n, link):
    return 2 * math.ceil(math.log2(n)) * (link.step_latency_s + x / link.bytes_per_s)


def crossing(n, link):
    """Bisection on the sign of ring - tree, in bytes."""
    low, high = 1.0, 1e15
    for _ in range(200):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if ring(mid, n, link) > tree(mid, n, link) else (low, mid)
    return high


def big_grads():
    return weight_bytes(grown(ta.EXAMPLE_MODEL))


CHECKS = {
    "ans_mc_busbw": lambda g: BUS_BYTES / BUS_SECONDS * 2 * (BUS_DEVICES - 1) / BUS_DEVICES / 1e9,
    "ans_mc_bus_share": lambda g: BUS_BYTES / BUS_SECONDS * 2 * 7 / 8 / NVLINK.bytes_per_s,
    "ans_mc_cross_bytes": lambda g: crossing(g["ex_mc_cross_devices"], NETWORK),
    "ans_mc_cross_size": lambda g: size_text(crossing(g["ex_mc_cross_devices"], NETWORK)),
    "ans_mc_two_network": lambda g: size_text(2 * (MACHINES - 1) / MACHINES * big_grads() / MACHINE_DEVICES),
    "ans_mc_two_s": lambda g: (2 * (MACHINE_DEVICES - 1) * NVLINK.step_latency_s
                               + 2 * (MACHINE_DEVICES - 1) / MACHINE_DEVICES * big_grads() / NVLINK.bytes_per_s
                               + ring(big_grads() / MACHINE_DEVICES, MACHINES, NETWORK)),
    "ans_mc_flat_s": lambda g: ring(big_grads(), MACHINES * MACHINE_DEVICES, NETWORK),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-6)
