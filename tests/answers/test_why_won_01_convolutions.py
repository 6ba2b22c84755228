"""Answers of why-won section 1 (convolutions), from real torch convolutions and attention."""
import pytest
import torch
from torch.nn import functional as F

from checking import check
from transformer_arithmetic.examples import simulated

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/01_convolutions"


def layers_until_heard(kernel: int, distance: int, dilated: bool) -> int:
    """Stack real causal torch convolutions until the last output depends on an input
    ``distance`` back: an impulse at the first position, spread as a 0/1 mask layer by layer."""
    x = torch.zeros(1, 1, distance + 1, dtype=torch.float64)
    x[0, 0, 0] = 1.0
    layers = 0
    while x[0, 0, -1] == 0:
        gap = 2**layers if dilated else 1
        x = F.conv1d(F.pad(x, (gap * (kernel - 1), 0)), torch.ones(1, 1, kernel, dtype=torch.float64),
                     dilation=gap)
        x = (x > 0).to(torch.float64)
        layers += 1
    return layers


def heard_through_blocks(layers: int, blocks: int, length: int) -> int:
    """Inputs whose gradient reaches the last output of ``blocks`` real blocks of two-tap
    causal torch convolutions with gaps 1, 2, ..., 2**(layers - 1)."""
    x = torch.zeros(1, 1, length, dtype=torch.float64, requires_grad=True)
    h = x
    for _ in range(blocks):
        for layer in range(layers):
            gap = 2**layer
            h = F.conv1d(F.pad(h, (gap, 0)), torch.ones(1, 1, 2, dtype=torch.float64), dilation=gap)
    h[0, 0, -1].backward()
    return int((x.grad != 0).sum())


def fewest_blocks(g) -> int:
    blocks = 1
    while heard_through_blocks(g["ex_wave_layers"], blocks, g["ex_wave_span"]) < g["ex_wave_span"]:
        blocks += 1
    return blocks


def longer_sentence(g) -> list[str]:
    first = list(simulated.TOY_SENTENCES[0])
    return first[:-3] + g["ex_conv_filler"].split() * g["ex_conv_repeats"] + first[-3:]


def thing_position(words: list[str]) -> int:
    return next(i for i, w in enumerate(words) if w in ("block", "cup"))


def attention_on_the_thing(g) -> float:
    """The toy's weight on the thing, by torch's scaled_dot_product_attention on keys built
    here from the feature table."""
    words = longer_sentence(g)
    keys = torch.tensor([[float(simulated.TOY_KEYS[w] == f) for f in simulated.TOY_FEATURES] for w in words],
                        dtype=torch.float64)
    query = torch.tensor([simulated.TOY_QUERY], dtype=torch.float64)
    values = torch.eye(len(words), dtype=torch.float64)
    weights = F.scaled_dot_product_attention(query[None], keys[None], values[None])[0, 0]
    return float(weights[thing_position(words)])


def filter_on_the_thing(g) -> float:
    """The even causal filter's weight on the thing: a real convolution of a one-hot input."""
    words = longer_sentence(g)
    x = torch.zeros(1, 1, len(words), dtype=torch.float64)
    x[0, 0, thing_position(words)] = 1.0
    k = g["k"]
    out = F.conv1d(F.pad(x, (k - 1, 0)), torch.full((1, 1, k), 1 / k, dtype=torch.float64))
    return float(out[0, 0, -1])


CHECKS = {
    "ans_conv_wide_plain": lambda g: layers_until_heard(g["ex_conv_width"], g["ex_conv_distance"], False),
    "ans_conv_wide_dilated": lambda g: layers_until_heard(g["ex_conv_width"], g["ex_conv_distance"], True),
    "ans_wave_blocks": fewest_blocks,
    "ans_wave_layers": lambda g: fewest_blocks(g) * g["ex_wave_layers"],
    "ans_wave_single": lambda g: layers_until_heard(2, g["ex_wave_span"] - 1, True),
    "ans_conv_far_back": lambda g: len(longer_sentence(g)) - 1 - thing_position(longer_sentence(g)),
    "ans_conv_far_weight": attention_on_the_thing,
    "ans_conv_far_filter": filter_on_the_thing,
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
