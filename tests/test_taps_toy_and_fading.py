"""The trees of taps, the toy attention and the fading walk, each against an independent reference:
real causal torch convolutions, torch's scaled_dot_product_attention, and a brute-force loop."""
import math

import matplotlib
import numpy as np
import pytest
import torch
from torch.nn import functional as F

from book_machinery import figures
from transformer_arithmetic import convolution, summaries
from transformer_arithmetic.examples import simulated

pytestmark = pytest.mark.torch_kernels


def torch_taps(kernel: int, layers: int, dilated: bool) -> list[list[int]]:
    """Distances back, at every level, of the positions whose values reach the last output of a
    stack of real causal torch convolutions (all weights one, so nothing cancels)."""
    length = convolution.dilated_receptive_field(kernel, layers) + 4
    x = torch.zeros(1, 1, length, dtype=torch.float64, requires_grad=True)
    levels, h = [x], x
    for layer in range(layers):
        d = 2**layer if dilated else 1
        h = F.conv1d(F.pad(h, (d * (kernel - 1), 0)), torch.ones(1, 1, kernel, dtype=torch.float64),
                     dilation=d)
        h.retain_grad()
        levels.append(h)
    h[0, 0, -1].backward()
    return [sorted(length - 1 - int(i) for i in torch.nonzero(level.grad[0, 0]).flatten())
            for level in levels]


@pytest.mark.parametrize("kernel, layers", [(2, 1), (2, 4), (3, 3), (3, 5), (4, 2), (5, 3)])
@pytest.mark.parametrize("dilated", [False, True])
def test_taps_match_real_causal_convolutions(kernel, layers, dilated):
    assert convolution.taps(kernel, layers, dilated) == torch_taps(kernel, layers, dilated)


@pytest.mark.parametrize("kernel, layers", [(2, 3), (3, 4), (7, 2)])
def test_the_inputs_of_the_tree_are_the_receptive_field(kernel, layers):
    assert len(convolution.taps(kernel, layers)[0]) == convolution.receptive_field(kernel, layers)
    assert len(convolution.taps(kernel, layers, True)[0]) == convolution.dilated_receptive_field(kernel, layers)
    assert convolution.layer_gaps(layers, dilated=True) == [2**n for n in range(layers)]
    assert convolution.layer_gaps(layers) == [1] * layers


@pytest.mark.parametrize("call, words", [
    (lambda: convolution.taps(1, 3), "a filter of width 1 never widens"),
    (lambda: convolution.layer_gaps(-1), "layers must be at least 0, got -1"),
])
def test_tap_errors_name_the_bad_value(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_tap_tree_refuses_levels_and_gaps_that_disagree():
    fig, ax = figures.new_figure()
    with pytest.raises(ValueError, match="4 levels need 3 gaps, got 2"):
        figures.tap_tree(ax, convolution.taps(3, 3), [1, 2], 3, concept="convolution")
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("words", simulated.TOY_SENTENCES)
def test_toy_attention_matches_torch(words):
    # keys built here from the feature table, not by the library's toy_keys (which toy_attention uses)
    keys = torch.tensor([[float(simulated.TOY_KEYS[w] == f) for f in simulated.TOY_FEATURES] for w in words],
                        dtype=torch.float64)
    query = torch.tensor(simulated.TOY_QUERY, dtype=torch.float64)[None, :]
    values = torch.eye(len(words), dtype=torch.float64)         # row j picks out weight j
    weights = F.scaled_dot_product_attention(query[None], keys[None], values[None])[0, 0]
    np.testing.assert_allclose(simulated.toy_attention(words), weights.numpy(), rtol=1e-12, atol=1e-15)


def test_toy_attention_peaks_on_the_thing_beyond_a_short_filter():
    for words in simulated.TOY_SENTENCES:
        w = simulated.toy_attention(words)
        peak = int(np.argmax(w))
        assert simulated.TOY_KEYS[words[peak]] == "a thing to hold" and len(words) - 1 - peak >= 3
        assert math.isclose(w.sum(), 1.0, rel_tol=1e-12)


def test_toy_errors_name_the_bad_words():
    with pytest.raises(ValueError, match="words without a toy key: \\['gripper'\\]"):
        simulated.toy_attention(["the", "gripper", "it"])
    with pytest.raises(ValueError, match="at least one word"):
        simulated.toy_attention([])


@pytest.mark.parametrize("share, steps", [(0.5, 1), (0.5, 512), (0.01, 100), (0.9, 7)])
def test_rate_to_keep_leaves_that_share(share, steps):
    rate, left = summaries.rate_to_keep(share, steps), 1.0
    for _ in range(steps):
        left *= rate
    assert math.isclose(left, share, rel_tol=1e-12)


@pytest.mark.parametrize("rate, share", [(0.98, 0.01), (0.5, 0.25), (0.9, 1.0), (0.999, 0.5), (0.5, 0.5)])
def test_steps_until_is_the_first_step_below_the_share(rate, share):
    left, steps = 1.0, 0
    while left >= share:
        left, steps = left * rate, steps + 1
    assert summaries.steps_until(rate, share) == steps


@pytest.mark.parametrize("call, words", [
    (lambda: summaries.steps_until(1.0, 0.5), "rate must lie in \\(0, 1\\)"),
    (lambda: summaries.steps_until(0.9, 0.0), "share must lie in \\(0, 1\\]"),
    (lambda: summaries.rate_to_keep(0.5, 0), "steps must be at least 1, got 0"),
    (lambda: summaries.rate_to_keep(1.5, 3), "share must lie in \\(0, 1\\]"),
])
def test_fading_errors_name_the_bad_value(call, words):
    with pytest.raises(ValueError, match=words):
        call()
