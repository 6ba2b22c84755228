"""Answers of the serving section, from the decode step written out by hand: each device's
share of a real decoder's weights and cache read at the chip's rate, plus the ring waits of
two all-reduces a layer; and DeepSeek-V3's chip counted from its published config.json by
the formulas of its layers written out (latent attention, experts, tables), with DeepEP's
published times."""
import dataclasses

import pytest

import published
import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token
from transformer_arithmetic.examples.many_chips import (MACHINE_DEVICES, NETWORK,
                                                        NVLINK, REAL_CHIP, grown)
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.torch_kernels]

NOTEBOOK = "many_chips/07_serving"
BIG = grown(ta.EXAMPLE_MODEL)
CONTEXT, FIT_CONTEXT = 2048, 8192
V3 = published.model_config("deepseek-v3-fp8")
SERVICE = published.plan("deepseek-v3-decode-service")
PROFILE = published.plan("deepseek-v3-decode-profile")


def device_weights(m, n):
    """Bytes of weights a device holds: 1/n of every matrix (a whole key-value head when there
    are fewer than n), every norm whole, the table cut by vocabulary."""
    kv = max(m.kv_heads // n, 1)
    layer = (2 * m.width * (m.heads // n) * m.head_dim + 2 * m.width * kv * m.head_dim
             + m.ffn_matrices * m.width * m.ffn_width // n + 2 * m.width)
    return (m.layers * layer + -(-m.vocab // n) * m.width + m.width) * m.bytes_per_number


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


def full():
    return dataclasses.replace(BIG, kv_heads=BIG.heads)


def ship(tokens, link):
    return link.step_latency_s + cache_bytes_per_token(BIG) * tokens / link.bytes_per_s


def v3_chip():
    """Bytes one chip of the service's unit holds (one-byte matrices, two-byte tables), the
    cache a token (the latent and the rotary key, two bytes each, every layer), and the
    layers with experts."""
    c = V3
    d, h, L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    q, kv, nope, rope, v = (c["q_lora_rank"], c["kv_lora_rank"], c["qk_nope_head_dim"],
                            c["qk_rope_head_dim"], c["v_head_dim"])
    attention = (d * q + q + q * h * (nope + rope) + d * (kv + rope) + kv
                 + kv * h * (nope + v) + h * v * d)
    dense_layers = c["first_k_dense_replace"]
    dense = dense_layers * 3 * d * c["intermediate_size"]
    expert = 3 * d * c["moe_intermediate_size"]
    moe_layers = L - dense_layers
    mine = moe_layers * (SERVICE["routed_a_device"] + c["n_shared_experts"]) * expert
    tables = 2 * c["vocab_size"] * d * 2 + d * 2
    held = L * attention + dense + mine + tables
    cache = (kv + rope) * L * 2
    return held, cache, moe_layers


def v3_most():
    held, cache, _ = v3_chip()
    return (REAL_CHIP.memory_bytes - held) // (SERVICE["mean_cache_tokens"] * cache)


def v3_step():
    """At the most conversations, the all-to-alls (DeepEP's published times, grown with the
    batch) set the step: they outlast the reading of every weight and cache."""
    held, cache, moe_layers = v3_chip()
    most = v3_most()
    move = moe_layers * (published.achieved("deepep-dispatch-ep128").seconds
                         + published.achieved("deepep-combine-ep128").seconds)
    moving = move * most / PROFILE["requests_a_device"]
    reading = (held + most * SERVICE["mean_cache_tokens"] * cache) / REAL_CHIP.bytes_per_s
    assert moving > reading
    return moving


CHECKS = {
    "ans_mc_serve_best": lambda g: quickest(),
    "ans_mc_serve_best_ms": lambda g: token_time(quickest()) * 1e3,
    "ans_mc_serve_speedup": lambda g: token_time(min(fitting_sizes())) / token_time(quickest()),
    "ans_mc_fit_one": lambda g: conversations(BIG, MACHINE_DEVICES),
    "ans_mc_fit_full": lambda g: conversations(full(), MACHINE_DEVICES),
    "ans_mc_ship_size": lambda g: size_text(cache_bytes_per_token(BIG) * g["ex_mc_ship_tokens"]),
    "ans_mc_ship_network_ms": lambda g: ship(g["ex_mc_ship_tokens"], NETWORK) * 1e3,
    "ans_mc_ship_nvlink_ms": lambda g: ship(g["ex_mc_ship_tokens"], NVLINK) * 1e3,
    "ans_mc_v3_most": lambda g: v3_most(),
    "ans_mc_v3_step_ms": lambda g: v3_step() * 1e3,
    "ans_mc_v3_node": lambda g: MACHINE_DEVICES * v3_most() / v3_step(),
    "ans_mc_v3_word": lambda g: words(round(MACHINE_DEVICES * v3_most() / v3_step()),
                                      round(profile_rate())),
}


def profile_rate():
    """Tokens a second a machine at the profile's batch, where the all-to-alls also outlast
    the reading."""
    held, cache, moe_layers = v3_chip()
    b = PROFILE["requests_a_device"]
    move = moe_layers * (published.achieved("deepep-dispatch-ep128").seconds
                         + published.achieved("deepep-combine-ep128").seconds)
    assert move > (held + b * SERVICE["mean_cache_tokens"] * cache) / REAL_CHIP.bytes_per_s
    return MACHINE_DEVICES * b / move


def words(a, b):
    return "more" if a > b else "fewer" if a < b else "no more"


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
