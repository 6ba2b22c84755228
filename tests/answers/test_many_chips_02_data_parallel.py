"""Answers of the data-parallel section: ZeRO's memory searched device count by device count
from a real decoder's parameter count, its traffic from the collectives it calls (four-byte
gradients), the all-reduce against the backward pass from a real decoder's operations, and
FSDP's prefetch searched token by token from one layer's gather against its arithmetic."""
import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import parameters, prefill_work
from transformer_arithmetic.examples.many_chips import (MACHINE_DEVICES, NETWORK,
                                                        NVLINK, REAL_CHIP, grown)
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.meta_device]

NOTEBOOK = "many_chips/02_data_parallel"
BIG = grown(ta.EXAMPLE_MODEL)
B = BIG.bytes_per_number
BATCH, SEQ = 512, 256            # the section's batch
ZERO_DEVICES = 64
B_G = 4                          # gradients in four-byte numbers


def per_number(part):
    """Bytes a number of each part: weights and gradients at b, Adam's two fp32 averages, an
    fp32 master copy when b < 4."""
    return {"weights": B, "gradients": B, "optimiser": 8, "master": 4 if B < 4 else 0}[part]


def held(stage, n):
    p = parameters(BIG)
    share = -(-p // n)
    cut = {"optimiser": 1, "master": 1, "gradients": 2, "weights": 3}
    return sum((share if stage >= first else p) * per_number(part) for part, first in cut.items())


def fewest(stage):
    return next((n for n in range(1, 100_000) if held(stage, n) <= REAL_CHIP.memory_bytes), None)


def second_stage_words():
    n = fewest(2) if held(2, 100_000) <= REAL_CHIP.memory_bytes else None
    return f"{n:,} devices" if n else "no number of devices"


def ring_all_reduce(x, n, link):
    return 2 * (n - 1) * link.step_latency_s + 2 * (n - 1) / n * x / link.bytes_per_s


def flat_hidden():
    m = ta.EXAMPLE_MODEL
    grads = parameters(m) * B_G
    best = 1
    for n in (2**k for k in range(10)):
        backward = 2 * (BATCH // n) * prefill_work(m, SEQ)[0] / ta.EXAMPLE_ACCELERATOR.flops_per_s
        if ring_all_reduce(grads, n, NETWORK) <= backward:
            best = n
    return best


def fsdp_tokens(n, link):
    """The fewest tokens a device, counted up one by one from the bound, at which one layer's
    prefetched gather hides under its forward pass and the gather with the reduce-scatter
    under its backward pass (a layer: the parameters over the layers)."""
    layer = parameters(BIG) // BIG.layers
    R = REAL_CHIP.flops_per_s

    def gather(x):
        return (n - 1) * link.step_latency_s + (n - 1) / n * x / link.bytes_per_s

    def hides(t):
        return (gather(layer * B) <= 2 * t * layer / R
                and gather(layer * B) + gather(layer * B_G) <= 4 * t * layer / R)

    t = 1
    while not hides(t):
        t *= 2
    low = t // 2
    while t - low > 1:
        mid = (low + t) // 2
        low, t = (low, mid) if hides(mid) else (mid, t)
    return t


CHECKS = {
    "ans_mc_zero3_devices": lambda g: fewest(3),
    "ans_mc_zero2_kept": lambda g: size_text(parameters(BIG) * B),
    "ans_mc_zero2_devices": lambda g: second_stage_words(),
    "ans_mc_zero3_s": lambda g: (ZERO_DEVICES - 1) / ZERO_DEVICES * parameters(BIG) * (2 * B + B_G)
    / NETWORK.bytes_per_s,
    "ans_mc_zero0_s": lambda g: 2 * (ZERO_DEVICES - 1) / ZERO_DEVICES * parameters(BIG) * B_G / NETWORK.bytes_per_s,
    "ans_mc_zero3_micro_s": lambda g: g["ex_mc_zero_micro"] * (ZERO_DEVICES - 1) / ZERO_DEVICES
    * parameters(BIG) * (2 * B + B_G) / NETWORK.bytes_per_s,
    "ans_mc_fsdp_across": lambda g: -(-fsdp_tokens(g["ex_mc_fsdp_devices"], NETWORK) // 4096),
    "ans_mc_fsdp_inside": lambda g: -(-fsdp_tokens(MACHINE_DEVICES, NVLINK) // 4096),
    "ans_mc_fsdp_full": lambda g: size_text(held(3, g["ex_mc_fsdp_devices"])),
    "ans_mc_fsdp_hybrid": lambda g: size_text(held(3, MACHINE_DEVICES)),
    "ans_mc_fsdp_fits": lambda g: "fits" if held(3, MACHINE_DEVICES) <= REAL_CHIP.memory_bytes else "does not fit",
    "ans_mc_dp_devices": lambda g: flat_hidden(),
    "ans_mc_dp_tokens": lambda g: BATCH * SEQ // flat_hidden(),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
