"""The library against independent references: PyTorch's own operations, brute force, and the
definitions of the sampling rules (property-based, with hypothesis). The sampling rules are
checked against torch here and nowhere else (beam search and top-k: test_beam_and_intensity.py)."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from transformer_arithmetic import masks, objective, sampling

pytestmark = pytest.mark.torch_kernels

logit_rows = st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=40)
temperatures = st.floats(0.05, 20)
top_ps = st.floats(1e-6, 1.0)


@pytest.mark.parametrize("n", [1, 2, 6, 17])
def test_causal_mask_matches_scaled_dot_product_attention(n):
    torch.manual_seed(n)
    q, k, v = (torch.randn(1, 2, n, 8, dtype=torch.float64) for _ in range(3))
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    allowed = torch.from_numpy(masks.causal_mask(n))
    ours = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    torch.testing.assert_close(ours, reference)
    scores = (q @ k.transpose(-1, -2) / math.sqrt(8)).numpy()
    weights = sampling.softmax(masks.apply_mask(scores, masks.causal_mask(n)))
    torch.testing.assert_close(torch.from_numpy(weights) @ v, reference)


@pytest.mark.parametrize("n, window, n_global", [(16, 4, 0), (16, 3, 2), (40, 7, 3), (5, 9, 1), (1, 1, 0)])
def test_pair_counts_match_the_masks_by_brute_force(n, window, n_global):
    brute = sum(1 for i in range(n) for j in range(n) if j <= i and (i - j < window or j < n_global))
    assert masks.window_global_pairs(n, window, n_global) == brute == int(masks.window_global_mask(n, window, n_global).sum())
    assert masks.causal_pairs(n) == int(masks.causal_mask(n).sum()) == int(torch.ones(n, n).tril().sum())


def test_window_mask_in_sdpa_gives_the_same_weights():
    n, window = 12, 4
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, 4, dtype=torch.float64) for _ in range(3))
    allowed = torch.from_numpy(masks.window_mask(n, window))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    scores = (q @ k.transpose(-1, -2) / 2.0).numpy()
    ours = torch.from_numpy(sampling.softmax(masks.apply_mask(scores, masks.window_mask(n, window)))) @ v
    torch.testing.assert_close(ours, out)


@settings(max_examples=60, deadline=None)
@given(st.lists(logit_rows.filter(lambda r: len(r) == 5), min_size=1, max_size=6), st.data())
def test_token_losses_match_cross_entropy(rows, data):
    logits = np.array(rows)
    targets = data.draw(st.lists(st.integers(0, 4), min_size=len(rows), max_size=len(rows)))
    ours = objective.token_losses(logits, targets)
    ref = F.cross_entropy(torch.tensor(logits), torch.tensor(targets), reduction="none").numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(logit_rows, temperatures)
def test_softmax_is_a_distribution_and_matches_torch(row, t):
    p = sampling.softmax(row, temperature=t)
    assert math.isclose(p.sum(), 1.0, rel_tol=1e-12) and (p >= 0).all()
    theirs = torch.softmax(torch.tensor(row, dtype=torch.float64) / t, -1).numpy()
    np.testing.assert_allclose(p, theirs, rtol=1e-12, atol=1e-15)


def test_softmax_sends_minus_infinity_to_exactly_zero():
    p = sampling.softmax([1.0, -np.inf, 0.5])
    assert p[1] == 0.0
    np.testing.assert_allclose(p, torch.softmax(torch.tensor([1.0, -math.inf, 0.5], dtype=torch.float64), -1))


@settings(max_examples=100, deadline=None)
@given(logit_rows, temperatures, temperatures)
def test_higher_temperature_never_lowers_entropy_or_raises_the_favourite(row, t1, t2):
    lo, hi = sorted((t1, t2))
    cold, hot = sampling.softmax(row, lo), sampling.softmax(row, hi)
    assert sampling.entropy(hot) >= sampling.entropy(cold) - 1e-9
    assert hot.max() <= cold.max() + 1e-12
    for t, p in ((lo, cold), (hi, hot)):
        ref = torch.distributions.Categorical(logits=torch.tensor(row, dtype=torch.float64) / t).entropy()
        assert math.isclose(sampling.entropy(p), float(ref), rel_tol=1e-10, abs_tol=1e-12)


def test_entropy_limits():
    assert sampling.entropy([1.0, 0.0, 0.0]) == 0.0
    assert math.isclose(sampling.entropy(np.full(12, 1 / 12)), math.log(12))


@settings(max_examples=150, deadline=None)
@given(logit_rows, top_ps)
def test_top_p_keeps_at_least_one_and_never_more_than_needed(row, p):
    probs = sampling.softmax(row)
    kept = sampling.top_p_keep(probs, p)
    assert len(kept) >= 1
    assert probs[kept].sum() >= p - 1e-9 or len(kept) == len(probs)       # enough
    assert len(kept) == 1 or probs[kept[:-1]].sum() < p + 1e-9              # not more than needed
    assert min(probs[kept]) >= max(np.delete(probs, kept), default=0.0)     # the most likely ones
    filtered = sampling.top_p_filter(probs, p)
    assert math.isclose(filtered.sum(), 1.0, rel_tol=1e-12)


def _torch_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Top-p written the usual torch way: drop a word once the words above it already reach top_p."""
    sorted_p, order = torch.sort(probs, descending=True, stable=True)
    before = torch.cumsum(sorted_p, 0) - sorted_p  # chance held by the words ranked above
    keep_sorted = before < top_p
    keep = torch.zeros_like(keep_sorted).scatter(0, order, keep_sorted)
    kept = torch.where(keep, probs, torch.zeros_like(probs))
    return kept / kept.sum()


def _random_rows(n_rows: int = 60):
    """Seeded random logit rows of varied length and spread."""
    rng = np.random.default_rng(20240501)
    for _ in range(n_rows):
        size = int(rng.integers(2, 40))
        yield rng.normal(0.0, float(rng.uniform(0.1, 5.0)), size)


@pytest.mark.parametrize("top_p", [0.3, 0.5, 0.9, 0.95, 1.0])
def test_top_p_filter_matches_a_torch_top_p(top_p):
    """Seeded rows rather than hypothesis: a running total within a rounding error of ``top_p``
    is kept by one rule and dropped by the other, which says nothing about either."""
    for row in _random_rows():
        p = sampling.softmax(row)
        ours = sampling.top_p_filter(p, top_p)
        np.testing.assert_allclose(ours, _torch_top_p(torch.tensor(p), top_p).numpy(), rtol=1e-12, atol=1e-15)
        kept = sampling.top_p_keep(p, top_p)
        assert p[kept].sum() >= top_p - 1e-12  # the kept words reach the total
        assert p[kept[:-1]].sum() < top_p  # and one fewer would not


@pytest.mark.parametrize("call, words", [
    (lambda: sampling.softmax([1.0, 2.0], temperature=0), "temperature must be a positive finite number, got 0"),
    (lambda: sampling.softmax([1.0], temperature=-1.5), "got -1.5"),
    (lambda: sampling.top_p_keep([0.5, 0.5], 0), r"top_p must lie in \(0, 1\], got 0"),
    (lambda: sampling.top_p_keep([0.5, 0.5], 1.2), r"top_p must lie in \(0, 1\], got 1.2"),
    (lambda: sampling.entropy([0.5, 0.6]), "sum to 1"),
    (lambda: masks.window_mask(8, 0), "window must be at least 1, got 0"),
    (lambda: masks.causal_mask(-3), "n must be at least 0, got -3"),
    (lambda: masks.apply_mask(np.zeros((2, 3)), masks.causal_mask(2)), "do not match"),
    (lambda: objective.whole_answer_accuracy(1.5, 3), r"per_token must lie in \(0, 1\], got 1.5"),
    (lambda: objective.token_losses(np.zeros((3, 4)), [0, 1]), "3 rows of logits but 2 targets"),
])
def test_bad_inputs_name_the_bad_value(call, words):
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize("vocab", [2, 12, 32768])
def test_perplexity_of_a_uniform_guess_is_the_vocabulary_and_matches_cross_entropy(vocab):
    torch.manual_seed(vocab)
    logits = torch.randn(5, vocab, dtype=torch.float64)
    targets = torch.randint(vocab, (5,))
    losses = objective.token_losses(logits.numpy(), targets.numpy())
    assert objective.perplexity(losses) == pytest.approx(math.exp(F.cross_entropy(logits, targets).item()), rel=1e-12)
    uniform = F.cross_entropy(torch.zeros(3, vocab, dtype=torch.float64), targets[:3], reduction="none")
    assert objective.perplexity(uniform.numpy()) == pytest.approx(vocab, rel=1e-12)
    # a chance of 1/vocab carries log2(vocab) bits, however the logarithm is taken
    assert objective.nats_to_bits(uniform[0].item()) == pytest.approx(torch.log2(torch.tensor(float(vocab))).item())


@pytest.mark.parametrize("losses", [[], [0.5, -0.1], [float("inf")]])
def test_perplexity_refuses_what_is_not_a_set_of_losses(losses):
    with pytest.raises(ValueError, match="losses must be one or more finite numbers of nats"):
        objective.perplexity(losses)
