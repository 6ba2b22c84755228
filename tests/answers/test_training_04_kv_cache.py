"""Answers of training section 4 (the key-value cache), computed from real PyTorch modules."""
import dataclasses
import itertools
from functools import lru_cache

import pytest
import torch

import published
import transformer_arithmetic as ta
from transformer_calculator.reading.plain import shipped_shape
from checking import check
from decoder_reference import cache_bytes_per_token as real_cache_bytes_per_token
from decoder_reference import layer_matrix_weights, parameters
from decoder_reference import weight_bytes as real_weight_bytes
from transformer_arithmetic.runs.reference_model import Decoder

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


def kernel(flops: float, nbytes: float) -> float:
    """One operation on the example accelerator's roofline."""
    return max(flops / A.flops_per_s, nbytes / A.bytes_per_s)


@lru_cache(maxsize=None)
def linears(m: ta.ModelShape) -> tuple[tuple[str, int, int], ...]:
    """(name, in, out) of every matrix of a real decoder of shape m (the head included)."""
    with torch.device("meta"):
        decoder = Decoder(m)
    return tuple((name, mod.in_features, mod.out_features)
                 for name, mod in decoder.named_modules() if isinstance(mod, torch.nn.Linear))


def kernels_step(m: ta.ModelShape, k: int, cache: bool) -> float:
    """Seconds of step k kernel by kernel, from a real decoder's matrices: with a cache, one
    position through every matrix and attention over k cached positions; without, k positions
    through every matrix but the head, every causal pair, and its queries, keys, values and
    outputs moved; the normalisations and the looked-up rows either way."""
    b, d, t = m.bytes_per_number, m.width, 1 if cache else k
    out = sum(kernel(2 * (1 if name == "head" else t) * i * o,
                     b * ((1 if name == "head" else t) * (i + o) + i * o))
              for name, i, o in linears(m))
    channels = 4 * m.layers * m.heads * m.head_dim
    if cache:
        out += kernel(channels * k, k * real_cache_bytes_per_token(m))
    else:
        moved = t * b * m.layers * 2 * (m.heads + m.kv_heads) * m.head_dim
        out += kernel(channels * k * (k + 1) // 2, moved)
    norms = 2 * m.layers + 1                          # two a block and the final one
    out += norms * kernel(2 * t * d, b * (d + 2 * t * d))
    return out + t * d * b / A.bytes_per_s


def first_by_kernels(m: ta.ModelShape, target: float) -> int:
    with_cache = without = 0.0
    for k in itertools.count(1):
        with_cache += kernels_step(m, k, True)
        without += kernels_step(m, k, False)
        if without >= target * with_cache:
            return k


def first_approximate(m: ta.ModelShape, target: float) -> int:
    """The first a at which (P a^2 / R) / ((a P b + C a^2 / 2) / S) reaches target, with the
    real decoder's parameters and cache."""
    p, c, b = parameters(m), real_cache_bytes_per_token(m), m.bytes_per_number
    return next(a for a in itertools.count(1)
                if (p * a * a / A.flops_per_s) >= target * (a * p * b + c * a * a / 2) / A.bytes_per_s)


def pairs_pass(m: ta.ModelShape) -> int:
    """The first length at which one layer's causal pair work passes its weight work."""
    weights, channels = layer_matrix_weights(m), m.heads * m.head_dim
    return next(t for t in itertools.count(1) if 4 * channels * (t * (t + 1) // 2) > 2 * t * weights)


CHECKS = {
    "ans_kv_grouped_bytes": lambda g: real_cache_bytes_per_token(grouped(g)),
    "ans_kv_grouped_break_even": lambda g: real_weight_bytes(grouped(g)) / real_cache_bytes_per_token(grouped(g)),
    "ans_kv_chip_fit": lambda g: (g["ex_kv_chip_gib"] * 2**30 - real_weight_bytes(M))
    // (real_cache_bytes_per_token(M) * g["ex_kv_cache_bytes"] // M.bytes_per_number
        * g["ex_kv_serve_tokens"]),
    "ans_kv_real_fit": lambda g: (H100_BYTES - real_weight_bytes(LLAMA))
    // (real_cache_bytes_per_token(LLAMA) * g["ex_kv_cache_bytes"] // LLAMA.bytes_per_number
        * g["ex_kv_serve_tokens"]),
    "ans_kv_param_ratio": lambda g: parameters(LLAMA) / parameters(M),
    "ans_kv_cache_ratio": lambda g: real_cache_bytes_per_token(LLAMA) / real_cache_bytes_per_token(M),
    "ans_kv_seconds_first": lambda g: first_approximate(M, g["ex_kv_target"]),
    "ans_kv_seconds_first_ops": lambda g: first_by_kernels(M, g["ex_kv_target"]),
    "ans_kv_seconds_limit": lambda g: 2 * parameters(M) * A.bytes_per_s
    / (A.flops_per_s * real_cache_bytes_per_token(M)),
    "ans_kv_pairs_pass": lambda g: pairs_pass(M),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
