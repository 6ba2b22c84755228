"""Answers of the tensor-parallel section: the width where a plain layer's all-reduces last as
long as its arithmetic, found by bisection on the two times written out; a step's traffic
from the all-reduces it calls; the cache a device keeps from a real decoder's cache; and the
overlap design from a real decoder's matrices cut into shares."""
import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import _linears, _meta_decoder, cache_bytes_per_token
from transformer_arithmetic.examples.many_chips import (MACHINE_DEVICES, NVLINK,
                                                        NVLINK_ACHIEVED, REAL_CHIP,
                                                        grown)
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.torch_kernels]

NOTEBOOK = "many_chips/03_tensor_parallel"
BIG = grown(ta.EXAMPLE_MODEL)
DEVICES, TOKENS, T = 8, 8 * 2048, 8192


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


def per_device(n):
    """A real decoder's cache a token, times the share of its key-value heads a device keeps
    (one whole head when there are fewer heads than devices)."""
    return cache_bytes_per_token(BIG) * max(BIG.kv_heads // n, 1) // BIG.kv_heads


def sticking_out(n):
    """One layer of a real (meta-device) block: each linear's operations on a device, the
    column-cut ones beside an all-gather and the row-cut ones beside a reduce-scatter."""
    block = _meta_decoder(BIG).blocks[0]
    one = T * BIG.width * BIG.bytes_per_number
    collective = (n - 1) * NVLINK.step_latency_s + (n - 1) / n * one / NVLINK.bytes_per_s
    kv_rows = max(BIG.kv_heads // n, 1) * BIG.head_dim
    a = block.attn
    qkv = 2 * T * BIG.width * (a.q.weight.shape[0] // n + 2 * kv_rows)
    products = [qkv, 2 * T * a.out.weight.numel() // n]
    ffn = [lin for lin in _linears(block.ffn)]
    products += [2 * T * sum(l.weight.numel() for l in ffn[:-1]) // n, 2 * T * ffn[-1].weight.numel() // n]
    return sum(max(0.0, collective - f / REAL_CHIP.flops_per_s) for f in products) * 1e6


def activations(n):
    """Bytes a layer keeps a device with sequence parallelism: queries, keys and values, the
    attention's output, the two inner vectors, cut; two norm inputs and two block inputs cut
    by positions."""
    b, d = BIG.bytes_per_number, BIG.width
    q = BIG.heads // n * BIG.head_dim
    kv = max(BIG.kv_heads // n, 1) * BIG.head_dim
    return T * b * (q + 2 * kv + q + 2 * BIG.ffn_width // n) + 4 * T * d * b // n


CHECKS = {
    "ans_mc_tp_width": lambda g: width_where_equal(),
    "ans_mc_tp_step": lambda g: size_text(step_bytes()),
    "ans_mc_tp_step_s": lambda g: step_bytes() / NVLINK.bytes_per_s,
    "ans_mc_tp_step_reached_s": lambda g: step_bytes() / NVLINK_ACHIEVED.bytes_per_s,
    "ans_mc_kv_low": lambda g: per_device(g["ex_mc_kv_low"]),
    "ans_mc_kv_high": lambda g: per_device(g["ex_mc_kv_high"]),
    "ans_mc_design_small_us": lambda g: sticking_out(g["ex_mc_design_small"]),
    "ans_mc_design_big_us": lambda g: sticking_out(MACHINE_DEVICES),
    "ans_mc_design_small_mem": lambda g: size_text(activations(g["ex_mc_design_small"])),
    "ans_mc_design_big_mem": lambda g: size_text(activations(MACHINE_DEVICES)),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
