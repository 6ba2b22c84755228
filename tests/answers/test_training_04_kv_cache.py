"""Answers of training section 4 (the key-value cache), computed from real PyTorch modules."""
import dataclasses
import itertools
from functools import lru_cache

import pytest
import torch

import published
import transformer_arithmetic as ta
from transformer_calculator.plain import shipped_shape
from checking import check
from decoder_reference import cache_bytes_per_token as real_cache_bytes_per_token
from decoder_reference import layer_matrix_weights, parameters
from decoder_reference import weight_bytes as real_weight_bytes
from transformer_arithmetic.reference_model import Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/04_kv_cache"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR
LLAMA = shipped_shape("llama-3-8b")   # the sizes of its published config.json
H100_BYTES = published.chip("h100-sxm").memory_bytes


def grouped(g) -> ta.ModelShape:
    return dataclasses.replace(M, kv_heads=g["ex_kv_grouped_heads"])


@lru_cache(maxsize=None)
def per_position_flops(m: ta.ModelShape) -> int:
    """Operations one position costs in the layers' matrices, read off a real module's shapes."""
    with torch.device("meta"):
        decoder = Decoder(m)
    return sum(2 * mod.in_features * mod.out_features for name, mod in decoder.named_modules()
               if isinstance(mod, torch.nn.Linear) and not name.startswith("head"))


def step_flops(m: ta.ModelShape, k: int, cache: bool) -> int:
    """Operations of step k of writing an answer, from the shapes of a real module's matrices."""
    per_position, head = per_position_flops(m), 2 * m.vocab * m.width
    pairs = k if cache else k * (k + 1) // 2      # the new query's k keys; or every causal pair again
    return per_position * (1 if cache else k) + head + 4 * m.layers * m.heads * m.head_dim * pairs


def first_tenfold(m: ta.ModelShape, target: float) -> int:
    """The first answer length whose time without a cache is `target` times the time with one,
    each step the slower of its arithmetic and its reading (the weights, and the cache if kept)."""
    weights, per_token = real_weight_bytes(m), real_cache_bytes_per_token(m)
    with_cache = without = 0.0
    for k in itertools.count(1):
        with_cache += max(step_flops(m, k, True) / A.flops_per_s, (weights + k * per_token) / A.bytes_per_s)
        without += max(step_flops(m, k, False) / A.flops_per_s, weights / A.bytes_per_s)
        if without >= target * with_cache:
            return k


def pairs_pass(m: ta.ModelShape) -> int:
    """The first length at which one layer's causal pair work passes its weight work."""
    weights, channels = layer_matrix_weights(m), m.heads * m.head_dim
    return next(t for t in itertools.count(1) if 4 * channels * (t * (t + 1) // 2) > 2 * t * weights)


CHECKS = {
    "ans_kv_grouped_bytes": lambda g: real_cache_bytes_per_token(grouped(g)),
    "ans_kv_grouped_break_even": lambda g: real_weight_bytes(grouped(g)) / real_cache_bytes_per_token(grouped(g)),
    "ans_kv_chip_fit": lambda g: (g["ex_kv_chip_gib"] * 2**30 - real_weight_bytes(M))
    // (real_cache_bytes_per_token(M) * g["ex_kv_serve_tokens"]),
    "ans_kv_real_fit": lambda g: (H100_BYTES - real_weight_bytes(LLAMA))
    // (real_cache_bytes_per_token(LLAMA) * g["ex_kv_serve_tokens"]),
    "ans_kv_param_ratio": lambda g: parameters(LLAMA) / parameters(M),
    "ans_kv_cache_ratio": lambda g: real_cache_bytes_per_token(LLAMA) / real_cache_bytes_per_token(M),
    "ans_kv_seconds_first": lambda g: first_tenfold(M, g["ex_kv_target"]),
    "ans_kv_seconds_limit": lambda g: 2 * parameters(M) * A.bytes_per_s
    / (A.flops_per_s * real_cache_bytes_per_token(M)),
    "ans_kv_pairs_pass": lambda g: pairs_pass(M),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
