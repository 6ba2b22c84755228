"""Answers of the pipeline section: the micro-batches and chunks searched one by one, the
activations counted tensor by tensor for the large model's layer (grouped keys and values, no
score grids, no dropout), a stage's work from a real decoder's matrices, and the interleaved
schedule's memory from its simulation."""
import math

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import layer_matrix_weights
from transformer_arithmetic import pipeline
from transformer_arithmetic.examples.many_chips import NETWORK, REAL_CHIP, grown

pytestmark = [pytest.mark.notebooks, pytest.mark.meta_device]

NOTEBOOK = "many_chips/04_pipeline_parallel"
BIG = grown(ta.EXAMPLE_MODEL)
STAGES, TOKENS = 8, 4096


def fewest_micro(p, share):
    return next(m for m in range(1, 10**6) if (p - 1) / (m + p - 1) <= share + 1e-15)


def per_micro():
    """One micro-batch of one sequence through one stage: each layer keeps two norm inputs,
    the attention's and the feed-forward part's inputs, queries, keys, values, the attention
    output and the two inner vectors (a plain feed-forward part)."""
    d, kv, q = BIG.width, BIG.kv_heads * BIG.head_dim, BIG.heads * BIG.head_dim
    layer = TOKENS * BIG.bytes_per_number * (4 * d + q + kv + kv + q + 2 * BIG.ffn_width)
    return layer * (BIG.layers // STAGES)


def send_and_forward():
    send = NETWORK.step_latency_s + TOKENS * BIG.width * BIG.bytes_per_number / NETWORK.bytes_per_s
    pairs = TOKENS * (TOKENS + 1) // 2
    layer = 2 * TOKENS * layer_matrix_weights(BIG) + 4 * BIG.heads * BIG.head_dim * pairs
    return send, (BIG.layers // STAGES) * layer / REAL_CHIP.flops_per_s


def chunks(p, m, target):
    return next(v for v in range(1, 65) if (p - 1) / (v * m + p - 1) <= target)


def simulated_held(g):
    p, m = g["ex_mc_il_stages"], g["ex_mc_il_micro"]
    v = chunks(p, m, g["ex_mc_il_target"])
    plan = pipeline.pipeline_schedule(p, m, pipeline.INTERLEAVED, 2.0, v)
    return pipeline.peak_in_flight(plan, 0, v)


CHECKS = {
    "ans_mc_pp_micro": lambda g: fewest_micro(g["ex_mc_pp_stages"], g["ex_mc_pp_share"]),
    "ans_mc_pp_gpipe": lambda g: REAL_CHIP.memory_bytes // per_micro(),
    "ans_mc_pp_1f1b": lambda g: "any number of them" if STAGES * per_micro() <= REAL_CHIP.memory_bytes
    else "none at all: the micro-batches it keeps do not fit by themselves",
    "ans_mc_pp_send_ms": lambda g: send_and_forward()[0] * 1e3,
    "ans_mc_pp_send_share": lambda g: send_and_forward()[0] / send_and_forward()[1],
    "ans_mc_il_chunks": lambda g: chunks(g["ex_mc_il_stages"], g["ex_mc_il_micro"], g["ex_mc_il_target"]),
    "ans_mc_il_bubble": lambda g: (g["ex_mc_il_stages"] - 1) / (
        g["ans_mc_il_chunks"] * g["ex_mc_il_micro"] + g["ex_mc_il_stages"] - 1),
    "ans_mc_il_held": simulated_held,
    "ans_mc_il_plain_micro": lambda g: fewest_micro(g["ex_mc_il_stages"], g["ex_mc_il_target"]),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
