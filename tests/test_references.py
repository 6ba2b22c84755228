"""The library against independent references: PyTorch's own operations, brute force, and the
definitions of the sampling rules (property-based, with hypothesis)."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from transformer_arithmetic import masks, objective, sampling

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
    np.testing.assert_allclose(p, torch.softmax(torch.tensor(row, dtype=torch.float64) / t, -1).numpy(), atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(logit_rows, temperatures, temperatures)
def test_higher_temperature_never_lowers_entropy(row, t1, t2):
    lo, hi = sorted((t1, t2))
    assert sampling.entropy(sampling.softmax(row, hi)) >= sampling.entropy(sampling.softmax(row, lo)) - 1e-9
    ref = torch.distributions.Categorical(logits=torch.tensor(row, dtype=torch.float64) / lo).entropy()
    assert math.isclose(sampling.entropy(sampling.softmax(row, lo)), float(ref), abs_tol=1e-9)


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
