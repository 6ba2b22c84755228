"""Answers of why-won section 3 (what attention costs), from real PyTorch modules and brute force."""
import dataclasses

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token as real_cache_bytes_per_token  # of a real decode loop
from decoder_reference import parameters as real_parameters  # a real decoder's, built on the meta device
from decoder_reference import kernels_decode, matrices
from transformer_arithmetic.runs.reference_model import Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/03_what_attention_costs"
UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def parse_size(text: str) -> float:
    """'48 GiB' -> bytes."""
    number, unit = text.split()
    return float(number.replace(",", "")) * UNITS[unit]


def layer_sizes(shape: ta.ModelShape) -> tuple[int, int, int]:
    """Weights of one real block's matrices (attention and feed-forward), its query channels,
    and the model's width (the embedding size)."""
    with torch.device("meta"):
        decoder = Decoder(dataclasses.replace(shape, layers=1))
    block = decoder.blocks[0]
    weights = sum(m.weight.numel() for m in block.modules() if isinstance(m, torch.nn.Linear))
    return weights, block.attn.q.out_features, decoder.embed.embedding_dim


def brute_crossing(shape: ta.ModelShape) -> int:
    """The first length at which one layer's pair operations (4 per channel per causal pair)
    exceed its weight operations (2 per weight per position), trying one length after another
    and counting the causal pairs as they come (position t adds t pairs)."""
    weights, channels, _ = layer_sizes(shape)
    t, pairs = 0, 0
    while True:
        t += 1
        pairs += t
        if 4 * channels * pairs > 2 * t * weights:
            return t


def wide(g) -> ta.ModelShape:
    return dataclasses.replace(ta.EXAMPLE_MODEL, ffn_width=g["ex_cost_ffn"])


def ceiling(memory_bytes: float) -> int:
    m = ta.EXAMPLE_MODEL
    return int((memory_bytes - real_parameters(m) * m.bytes_per_number) // real_cache_bytes_per_token(m))


def fast_chip(g) -> ta.Accelerator:
    acc = ta.EXAMPLE_ACCELERATOR
    return dataclasses.replace(acc, bytes_per_s=g["ex_cost_read_factor"] * acc.bytes_per_s)


def fast_kernels(g) -> tuple[float, float, float, float]:
    """(matrix arithmetic, matrix reading, attention arithmetic, attention reading) seconds of
    one decode step after long_ctx tokens on the faster-reading chip, from the real module's
    matrices and cache."""
    m, acc, ctx = ta.EXAMPLE_MODEL, fast_chip(g), g["long_ctx"]
    weights = sum(i * o for _, i, o in matrices(m))
    _, channels, _ = layer_sizes(m)
    return (2 * weights / acc.flops_per_s, weights * m.bytes_per_number / acc.bytes_per_s,
            m.layers * 4 * channels * ctx / acc.flops_per_s,
            real_cache_bytes_per_token(m) * ctx / acc.bytes_per_s)


CHECKS = {
    "ans_cost_wide_cross": lambda g: brute_crossing(wide(g)),
    "ans_cost_wide_times": lambda g: brute_crossing(wide(g)) / layer_sizes(wide(g))[2],
    "ans_cost_chip_tokens": lambda g: ceiling(parse_size(g["ex_cost_chip_size"])),
    "ans_cost_chip_ratio": lambda g: ceiling(parse_size(g["ex_cost_chip_size"]))
    / ceiling(ta.EXAMPLE_ACCELERATOR.memory_bytes),
    "ans_cost_fast_rate": lambda g: 1 / kernels_decode(ta.EXAMPLE_MODEL, fast_chip(g), g["long_ctx"]),
    "ans_cost_fast_matrices": lambda g: "reading" if fast_kernels(g)[1] > fast_kernels(g)[0]
    else "arithmetic",
    "ans_cost_fast_attention": lambda g: "reading" if fast_kernels(g)[3] > fast_kernels(g)[2]
    else "arithmetic",
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
