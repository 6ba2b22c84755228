"""Answers of the pipeline section: the micro-batches searched one by one, the activations
from Korthikanti et al.'s count (34 s b h bytes a layer for their layer, which the large
model is), a stage's work from a real decoder's matrices."""
import math

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import layer_matrix_weights
from transformer_arithmetic.many_chips_inputs import NETWORK, REAL_CHIP, grown

pytestmark = [pytest.mark.notebooks, pytest.mark.meta_device]

NOTEBOOK = "many_chips/04_pipeline_parallel"
BIG = grown(ta.EXAMPLE_MODEL)
STAGES, TOKENS = 8, 4096


def fewest_micro(p, share):
    return next(m for m in range(1, 10**6) if (p - 1) / (m + p - 1) <= share + 1e-15)


def per_micro():
    """One micro-batch of one sequence through one stage: 34 s h bytes a layer."""
    assert BIG.ffn_width == 4 * BIG.width and BIG.kv_heads == BIG.heads and BIG.bytes_per_number == 2
    return 34 * TOKENS * BIG.width * (BIG.layers // STAGES)


def send_and_forward():
    send = NETWORK.step_latency_s + TOKENS * BIG.width * BIG.bytes_per_number / NETWORK.bytes_per_s
    pairs = TOKENS * (TOKENS + 1) // 2
    layer = 2 * TOKENS * layer_matrix_weights(BIG) + 4 * BIG.heads * BIG.head_dim * pairs
    return send, (BIG.layers // STAGES) * layer / REAL_CHIP.flops_per_s


CHECKS = {
    "ans_mc_pp_micro": lambda g: fewest_micro(g["ex_mc_pp_stages"], g["ex_mc_pp_share"]),
    "ans_mc_pp_gpipe": lambda g: REAL_CHIP.memory_bytes // per_micro(),
    "ans_mc_pp_1f1b": lambda g: "any number of them" if STAGES * per_micro() <= REAL_CHIP.memory_bytes
    else "none at all: the micro-batches it keeps do not fit by themselves",
    "ans_mc_pp_send_ms": lambda g: send_and_forward()[0] * 1e3,
    "ans_mc_pp_send_share": lambda g: send_and_forward()[0] / send_and_forward()[1],
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
