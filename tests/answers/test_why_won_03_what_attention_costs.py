"""Answers of why-won section 3 (what attention costs), from real PyTorch modules and brute force."""
import dataclasses

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token as real_cache_bytes_per_token  # of a real decode loop
from decoder_reference import parameters as real_parameters  # a real decoder's, built on the meta device
from transformer_arithmetic.reference_model import Decoder

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


def fast_step(g) -> tuple[float, float]:
    """(arithmetic seconds, reading seconds) of one decode step after long_ctx tokens on the
    faster-reading chip, from the real module's parameters and cache."""
    m, acc, ctx = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR, g["long_ctx"]
    _, channels, _ = layer_sizes(m)
    flops = 2 * real_parameters(m) + m.layers * 4 * channels * ctx
    nbytes = real_parameters(m) * m.bytes_per_number + real_cache_bytes_per_token(m) * ctx
    return flops / acc.flops_per_s, nbytes / (g["ex_cost_read_factor"] * acc.bytes_per_s)


CHECKS = {
    "ans_cost_wide_cross": lambda g: brute_crossing(wide(g)),
    "ans_cost_wide_times": lambda g: brute_crossing(wide(g)) / layer_sizes(wide(g))[2],
    "ans_cost_chip_tokens": lambda g: ceiling(parse_size(g["ex_cost_chip_size"])),
    "ans_cost_chip_ratio": lambda g: ceiling(parse_size(g["ex_cost_chip_size"]))
    / ceiling(ta.EXAMPLE_ACCELERATOR.memory_bytes),
    "ans_cost_fast_rate": lambda g: 1 / max(fast_step(g)),
    "ans_cost_fast_limit": lambda g: "reading" if fast_step(g)[1] > fast_step(g)[0] else "arithmetic",
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
