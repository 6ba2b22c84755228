"""Answers of the data-parallel section: ZeRO's memory searched device count by device count
from a real decoder's parameter count, its traffic from the collectives it calls, and the
all-reduce against the backward pass from a real decoder's operations."""
import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import parameters, prefill_work
from transformer_arithmetic.many_chips_inputs import NETWORK, REAL_CHIP, grown
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.meta_device]

NOTEBOOK = "many_chips/02_data_parallel"
BIG = grown(ta.EXAMPLE_MODEL)
B = BIG.bytes_per_number
BATCH, SEQ = 512, 256            # the section's batch
ZERO_DEVICES = 64


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
    grads = parameters(m) * m.bytes_per_number
    best = 1
    for n in (2**k for k in range(10)):
        backward = 2 * (BATCH // n) * prefill_work(m, SEQ)[0] / ta.EXAMPLE_ACCELERATOR.flops_per_s
        if ring_all_reduce(grads, n, NETWORK) <= backward:
            best = n
    return best


CHECKS = {
    "ans_mc_zero3_devices": lambda g: fewest(3),
    "ans_mc_zero2_kept": lambda g: size_text(parameters(BIG) * B),
    "ans_mc_zero2_devices": lambda g: second_stage_words(),
    "ans_mc_zero3_s": lambda g: 3 * (ZERO_DEVICES - 1) / ZERO_DEVICES * parameters(BIG) * B / NETWORK.bytes_per_s,
    "ans_mc_zero0_s": lambda g: 2 * (ZERO_DEVICES - 1) / ZERO_DEVICES * parameters(BIG) * B / NETWORK.bytes_per_s,
    "ans_mc_dp_devices": lambda g: flat_hidden(),
    "ans_mc_dp_tokens": lambda g: BATCH * SEQ // flat_hidden(),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
