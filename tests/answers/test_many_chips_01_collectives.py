"""Answers of the collectives section, from the definitions written out again: nccl-tests' bus
bandwidth, a search for where ring and tree cross, the bytes each network card carries tallied
ring by ring, and the in-switch all-reduce's bytes tallied slice by slice."""
import math

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import weight_bytes
from transformer_arithmetic.examples.many_chips import (MACHINE_DEVICES, NETWORK,
                                                        NVLINK, NVLINK_ACHIEVED,
                                                        NVLS_EFFICIENCY, grown)
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.meta_device]

NOTEBOOK = "many_chips/01_collectives"
BUS_BYTES, BUS_DEVICES, BUS_SECONDS = 2**30, 8, 4.0e-3   # the exercise's inputs
MACHINES = 4


def ring(x, n, link):
    return 2 * (n - 1) * link.step_latency_s + 2 * (n - 1) / n * x / link.bytes_per_s


def ring_steps_of(x, n, link, steps, share):
    return steps * link.step_latency_s + share * x / link.bytes_per_s


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


def busbw():
    return BUS_BYTES / BUS_SECONDS * 2 * (BUS_DEVICES - 1) / BUS_DEVICES


def rail_tally():
    """Each card's and each fast link's bytes in one ring a card, ring by ring; the time."""
    g, m, x = MACHINE_DEVICES, MACHINES, big_grads()
    n = g * m
    card = inside = 0.0
    for r in range(g):                              # ring r leaves each machine through chip r
        order = [mach * g + (r + i) % g for mach in range(m) for i in range(g)]
        for i, chip in enumerate(order):
            if chip == 0:                           # the tally of one chip
                leaves = order[(i + 1) % n] // g != 0
                bytes_ = 2 * (n - 1) / n * x / g
                card, inside = (card + bytes_, inside) if leaves else (card, inside + bytes_)
    latency = 2 * (n - m) * NVLINK.step_latency_s + 2 * (m - 1) * NETWORK.step_latency_s
    return card, latency + max(card / NETWORK.bytes_per_s, inside / NVLINK.bytes_per_s)


def two_levels():
    g, m, x = MACHINE_DEVICES, MACHINES, big_grads()
    inner = 2 * ring_steps_of(x, g, NVLINK, g - 1, (g - 1) / g)
    return inner + ring(x / g, m, NETWORK)


def switch_factor(n):
    """Bus bandwidth of an in-switch all-reduce over the ring's rate, its bytes tallied: each
    chip sends each slice's part up and its own slice's sum once more, n + 1 slices."""
    x = 1.0
    moved = n * (x / n) + x / n
    return 2 * (n - 1) / n * x / (moved / (NVLS_EFFICIENCY * 1.0))


CHECKS = {
    "ans_mc_busbw": lambda g: busbw() / 1e9,
    "ans_mc_bus_share": lambda g: busbw() / NVLINK.bytes_per_s,
    "ans_mc_bus_reached_share": lambda g: busbw() / NVLINK_ACHIEVED.bytes_per_s,
    "ans_mc_cross_bytes": lambda g: crossing(g["ex_mc_cross_devices"], NETWORK),
    "ans_mc_cross_size": lambda g: size_text(crossing(g["ex_mc_cross_devices"], NETWORK)),
    "ans_mc_rail_card": lambda g: size_text(rail_tally()[0]),
    "ans_mc_two_network": lambda g: size_text(2 * (MACHINES - 1) / MACHINES * big_grads() / MACHINE_DEVICES),
    "ans_mc_rail_s": lambda g: rail_tally()[1],
    "ans_mc_two_s": lambda g: two_levels(),
    "ans_mc_two_winner": lambda g: "the ring a card" if rail_tally()[1] < two_levels() else "the two levels",
    "ans_mc_one_card_s": lambda g: ring(big_grads(), MACHINES * MACHINE_DEVICES, NETWORK),
    "ans_mc_switch_first": lambda g: next(n for n in range(2, 73) if switch_factor(n) > 1),
    "ans_mc_switch_factor": lambda g: switch_factor(g["ans_mc_switch_first"]),
    "ans_mc_switch_eight": lambda g: switch_factor(8),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-6)
