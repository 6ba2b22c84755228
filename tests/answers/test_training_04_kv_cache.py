"""Answers of training section 4 (the key-value cache), computed from real PyTorch modules."""
import dataclasses

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token as real_cache_bytes_per_token
from decoder_reference import weight_bytes as real_weight_bytes
from transformer_arithmetic.reference_model import Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/04_kv_cache"


def grouped(g) -> ta.ModelShape:
    return dataclasses.replace(ta.EXAMPLE_MODEL, kv_heads=g["ex_kv_grouped_heads"])


def brute_force_generation_flops(m: ta.ModelShape, n: int, cache: bool) -> int:
    """Operations to write n tokens, step by step, from the shapes of a real module's matrices."""
    with torch.device("meta"):
        decoder = Decoder(m)
    per_position = sum(2 * mod.in_features * mod.out_features for name, mod in decoder.named_modules()
                       if isinstance(mod, torch.nn.Linear) and not name.startswith("head"))
    head = 2 * m.vocab * m.width
    total = 0
    for k in range(1, n + 1):
        if cache:   # one position through the stack; its query meets k keys and k values
            total += per_position + head + m.layers * m.heads * m.head_dim * 4 * k
        else:       # all k positions again; every allowed pair of the k-long row again
            pairs = k * (k + 1) // 2
            total += per_position * k + head + m.layers * m.heads * m.head_dim * 4 * pairs
    return total


CHECKS = {
    "ans_kv_grouped_bytes": lambda g: real_cache_bytes_per_token(grouped(g)),
    "ans_kv_grouped_break_even": lambda g: real_weight_bytes(grouped(g)) / real_cache_bytes_per_token(grouped(g)),
    "ans_kv_chip_fit": lambda g: (g["ex_kv_chip_gib"] * 2**30 - real_weight_bytes(ta.EXAMPLE_MODEL))
    // (real_cache_bytes_per_token(ta.EXAMPLE_MODEL) * g["ex_kv_chip_tokens"]),
    "ans_kv_ops_ratio": lambda g: brute_force_generation_flops(ta.EXAMPLE_MODEL, g["ex_kv_ops_tokens"], False)
    / brute_force_generation_flops(ta.EXAMPLE_MODEL, g["ex_kv_ops_tokens"], True),
    "ans_kv_ops_positions": lambda g: sum(range(1, g["ex_kv_ops_tokens"] + 1)) / g["ex_kv_ops_tokens"],
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
