"""Selective summaries, the scan's rounds, the designs compared, and what cuts one user's wait,
each checked against an independent reference (PyTorch, a brute-force count, enumeration)."""
import dataclasses
import itertools
import math

import numpy as np
import pytest
import torch

import decoder_reference as R
from decoder_reference import CHIP_24GIB, PLAIN_335M
import transformer_arithmetic as ta
from transformer_arithmetic import designs, masks, memory, summaries, timing

pytestmark = pytest.mark.torch_kernels

M, A = PLAIN_335M, CHIP_24GIB


def step_limits(m: ta.ModelShape, acc: ta.Accelerator, context: int, positions: int = 1, weight_bytes=None):
    """(arithmetic seconds, reading seconds) of one step of one conversation that pushes
    ``positions`` positions after ``context`` tokens, from a real decoder: its matrices and
    normalisations for every position, 4 operations per query channel per earlier token, its
    weights (or ``weight_bytes``) and its real cache read once."""
    flops, nbytes = R.decode_work(m, context, positions=positions)
    if weight_bytes is not None:
        nbytes += weight_bytes - R.weight_bytes(m)
    return flops / acc.flops_per_s, nbytes / acc.bytes_per_s


# --- running summaries: content-chosen steps and the weight matrix --------------------------

def torch_weights(rates, writes):
    """Run h_t = a_t h_(t-1) + b_t x_t in torch once per token, with that token alone set to 1."""
    a, b = torch.tensor(rates, dtype=torch.float64), torch.tensor(writes, dtype=torch.float64)
    n = len(a)
    out = torch.zeros(n, n, dtype=torch.float64)
    for s in range(n):
        h = torch.tensor(0.0, dtype=torch.float64)
        for t in range(n):
            h = a[t] * h + b[t] * (1.0 if t == s else 0.0)
            out[t, s] = h
    return out.numpy()


def test_weight_matrix_matches_torch_and_the_walk():
    rng = np.random.default_rng(0)
    rates, writes = rng.uniform(0, 1, 12), rng.uniform(0, 1, 12)
    rates[4] = 0.0  # a full reset
    w = summaries.weight_matrix(rates, writes)
    np.testing.assert_allclose(w, torch_weights(rates, writes), rtol=1e-12, atol=1e-15)
    assert np.all(np.triu(w, 1) == 0)  # no token counts before it arrives
    x = rng.normal(size=12)
    rates[4] = 0.5  # run_summary takes rates in (0, 1]
    np.testing.assert_allclose(summaries.weight_matrix(rates, writes) @ x,
                               summaries.run_summary(x * writes, rates), rtol=1e-12)


def test_a_large_step_resets_the_summary_onto_one_token():
    big, tiny = summaries.selective_step(30.0), summaries.selective_step(0.0)
    assert big[0] == pytest.approx(math.exp(-30.0)) and big[1] == pytest.approx(1 - math.exp(-30.0))
    assert tiny == (1.0, 0.0)
    steps = [0.5, 0.5, 30.0, 0.0, 0.0, 0.0]
    rates, writes = zip(*(summaries.selective_step(s) for s in steps))
    last = summaries.weight_matrix(rates, writes)[-1]
    assert last[2] == pytest.approx(1.0, abs=1e-12) and max(last[:2]) < 1e-12 and max(last[3:]) == 0


@pytest.mark.parametrize("bad", [-1.0, float("inf"), float("nan"), "x"])
def test_selective_step_rejects_bad_steps(bad):
    with pytest.raises(ValueError, match="step"):
        summaries.selective_step(bad)


def test_weight_matrix_rejects_bad_arguments():
    with pytest.raises(ValueError, match="rate"):
        summaries.weight_matrix([0.5, 1.5])
    with pytest.raises(ValueError, match="writes"):
        summaries.weight_matrix([0.5, 0.5], [1.0, -0.1])
    with pytest.raises(ValueError, match="rates"):
        summaries.weight_matrix([])


# --- the parallel scan's rounds -------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64, 100])
def test_scan_pairs_reproduce_the_walk(n):
    rng = np.random.default_rng(n)
    rates, inputs = rng.uniform(0.3, 1, n), rng.normal(size=n)
    a, b = list(rates), list(inputs)
    for round_ in summaries.scan_pairs(n):          # apply the combine rule pair by pair
        old_a, old_b = a[:], b[:]
        for earlier, later in round_:
            a[later] = old_a[earlier] * old_a[later]
            b[later] = old_a[later] * old_b[earlier] + old_b[later]
    walk, h = [], 0.0                               # the plain walk, one step after another
    for t in range(n):
        h = rates[t] * h + inputs[t]
        walk.append(h)
    np.testing.assert_allclose(b, walk, rtol=1e-12, atol=1e-12)
    assert summaries.scan_rounds(n) == len(summaries.scan_pairs(n)) == math.ceil(math.log2(n))
    assert summaries.scan_combines(n) == sum(len(p) for p in summaries.scan_pairs(n))


def test_scan_counts_for_long_rows():
    assert summaries.scan_rounds(8192) == 13 and summaries.scan_rounds(8193) == 14
    assert summaries.scan_combines(8) == 7 + 6 + 4
    with pytest.raises(ValueError, match="n"):
        summaries.scan_rounds(0)


# --- what cuts one user's wait --------------------------------------------------------------

def test_answer_limits_sum_the_steps():
    arithmetic, reading = timing.answer_limits(M, A, 8192, 16)
    by_hand = [step_limits(M, A, 8192 + k) for k in range(16)]
    assert arithmetic == pytest.approx(sum(p[0] for p in by_hand))
    assert reading == pytest.approx(sum(p[1] for p in by_hand))
    assert timing.answer_time(M, A, 8192, 16) == pytest.approx(sum(max(p) for p in by_hand))
    assert timing.answer_limits(M, A, 10, 0) == (0, 0)


def expected_tokens_by_enumeration(k, alpha):
    """Average tokens a checking step yields: every accept/reject pattern of the k drafts, weighted."""
    total = 0.0
    for pattern in itertools.product([True, False], repeat=k):
        p = math.prod(alpha if ok else 1 - alpha for ok in pattern)
        accepted = next((i for i, ok in enumerate(pattern) if not ok), k)
        total += p * (accepted + 1)   # the accepted drafts, plus one token from the large model
    return total


@pytest.mark.parametrize("k, alpha", [(0, 0.5), (1, 0.0), (3, 0.6), (4, 0.8), (6, 0.95), (5, 1.0)])
def test_speculative_tokens_per_step_by_enumeration(k, alpha):
    assert timing.speculative_tokens_per_step(k, alpha) == pytest.approx(expected_tokens_by_enumeration(k, alpha))


def test_speculative_time_per_token():
    draft = dataclasses.replace(M, layers=3)
    assert timing.verify_step_time(M, A, 8192, 1) == max(step_limits(M, A, 8192))
    assert timing.verify_step_time(M, A, 8192, 5) == max(step_limits(M, A, 8192, positions=5))
    t = timing.speculative_time_per_token(M, draft, A, 8192, 4, 0.8)
    # four draft steps and one check of five positions, shared by 1 + .8 + .8**2 + .8**3 + .8**4 tokens
    by_hand = (4 * max(step_limits(draft, A, 8192)) + max(step_limits(M, A, 8192, positions=5))) / 3.3616
    assert expected_tokens_by_enumeration(4, 0.8) == pytest.approx(3.3616)
    assert t == pytest.approx(by_hand)
    assert t < max(step_limits(M, A, 8192))
    with pytest.raises(ValueError, match="acceptance"):
        timing.speculative_tokens_per_step(3, 1.2)
    with pytest.raises(ValueError, match="positions"):
        timing.verify_step_time(M, A, 10, 0)


def test_step_time_at_bits_reads_fewer_weight_bytes():
    assert timing.step_time_at_bits(M, A, 2048, 8 * M.bytes_per_number) == max(step_limits(M, A, 2048))
    arithmetic, reading = step_limits(M, A, 2048, weight_bytes=R.parameters(M) * 4 / 8)
    assert reading > arithmetic
    assert timing.step_time_at_bits(M, A, 2048, 4) == pytest.approx(reading)
    with pytest.raises(ValueError, match="weight_bits"):
        timing.step_time_at_bits(M, A, 2048, 0)


# --- the designs compared -------------------------------------------------------------------

FULL = designs.Design("full attention", "attention", kv_heads=M.heads)
WINDOW = designs.Design("window", "attention", window=1024, kv_heads=M.heads)
SUMMARY = designs.Design("running summary", "summary")
HYBRID = designs.Design("hybrid", "hybrid", attention_layers=3, kv_heads=M.heads)
CONV = designs.Design("convolution", "convolution", kernel=3)
RNN = designs.Design("recurrent", "recurrent")


def test_full_attention_is_the_books_decode_step():
    for n in (0, 8192, 131072):
        assert designs.token_time(FULL, M, A, n) == max(step_limits(M, A, n)) == timing.decode_step_time(M, A, n)
    assert designs.held_bytes(FULL, M, 32768) == 32768 * R.cache_bytes_per_token(M)


def test_held_bytes_against_real_tensors():
    grouped = designs.Design("grouped", "attention", kv_heads=4)
    assert designs.held_bytes(grouped, M, 100) == 100 * R.cache_bytes_per_token(dataclasses.replace(M, kv_heads=4))
    assert designs.held_bytes(WINDOW, M, 32768) == designs.held_bytes(WINDOW, M, 2000) \
        == 1023 * R.cache_bytes_per_token(M)           # transformers' layer: the test below
    state = torch.zeros(M.layers, M.width, 16, dtype=torch.bfloat16)
    assert designs.held_bytes(SUMMARY, M, 32768) == state.numel() * state.element_size()
    last_inputs = torch.zeros(M.layers, 2, M.width, dtype=torch.bfloat16)
    assert designs.held_bytes(CONV, M, 32768) == last_inputs.numel() * last_inputs.element_size()
    per_layer = R.cache_bytes_per_token(M) // M.layers
    assert designs.held_bytes(HYBRID, M, 32768) == 3 * 32768 * per_layer + 21 * state[0].numel() * 2


@pytest.mark.transformers  # importing transformers takes about 1.7 s: not in make check
def test_window_held_bytes_against_transformers_cache():
    # transformers' sliding-window cache layer, fed a prompt past its window, keeps W - 1
    from transformers.cache_utils import DynamicSlidingWindowLayer
    layer = DynamicSlidingWindowLayer(sliding_window=WINDOW.window)
    keys = torch.zeros(1, M.kv_heads, 2000, M.head_dim, dtype=torch.bfloat16)
    layer.update(keys, keys.clone())
    kept = layer.keys.numel() * layer.keys.element_size() * 2          # keys and values
    assert designs.held_bytes(WINDOW, M, 32768) == designs.held_bytes(WINDOW, M, 2000) \
        == M.layers * kept == 1023 * R.cache_bytes_per_token(M)


def test_reach_and_exact_recall_against_masks():
    narrow = designs.Design("window of 16", "attention", window=16)  # small masks: the window's edges all the same
    for n in (1, 5, 16, 17, 60):
        row = masks.window_mask(n, 16)[-1]             # what the newest position may read
        assert designs.exact_recall(narrow, n) == int(row.sum())
        assert designs.reach(narrow, n) == n - 1 - int(np.argmax(row))
        assert designs.exact_recall(FULL, n) == int(masks.causal_mask(n)[-1].sum())
        assert designs.reach(CONV, n) == min(n - 1, 2) and designs.reach(RNN, n) == n - 1
        assert designs.exact_recall(SUMMARY, n) == min(n, 16) and designs.exact_recall(RNN, n) == 1
    assert (designs.exact_recall(WINDOW, 4000), designs.reach(WINDOW, 4000)) == (1024, 1023)


def test_dependent_steps():
    assert designs.dependent_steps(RNN, 32768) == 32768
    # a scan's rounds: each round doubles the span a position has combined (1, 2, 4, ...)
    assert designs.dependent_steps(SUMMARY, 32768) == math.ceil(math.log2(32768)) == 15
    assert designs.dependent_steps(SUMMARY, 1000) == designs.dependent_steps(HYBRID, 1000) == 10
    assert designs.dependent_steps(FULL, 32768) == designs.dependent_steps(CONV, 32768) == 1


def test_token_work_and_time():
    # on a chip that reads for free, a token's time is its operations over the chip's rate
    free_reading = ta.Accelerator(flops_per_s=A.flops_per_s, bytes_per_s=1e30, memory_bytes=A.memory_bytes)
    def flops(d):
        return designs.token_time(d, M, free_reading, 8192) * A.flops_per_s
    assert flops(SUMMARY) == pytest.approx(2 * R.parameters(M) + 4 * M.layers * M.width * 16, rel=1e-12)
    hybrid = 2 * R.parameters(M) + 3 * 4 * M.heads * M.head_dim * 8192 + 21 * 4 * M.width * 16
    assert flops(HYBRID) == pytest.approx(hybrid, rel=1e-12)
    flat = [designs.token_time(SUMMARY, M, A, n) for n in (1, 8192, 131072)]
    assert flat[0] == flat[1] == flat[2] == pytest.approx((R.parameters(M) * 2 + 24 * 1024 * 16 * 2) / 1e12)
    assert designs.token_time(WINDOW, M, A, 131072) == designs.token_time(WINDOW, M, A, 1024)


def test_grouped_kv_heads():
    assert designs.grouped_kv_heads(M) == 4
    assert designs.grouped_kv_heads(dataclasses.replace(M, kv_heads=2)) == 2        # already shared
    assert designs.grouped_kv_heads(dataclasses.replace(M, heads=12, kv_heads=None)) == 4  # as section 4
    assert designs.grouped_kv_heads(dataclasses.replace(M, heads=7, kv_heads=None)) == 1   # no middle
    assert designs.grouped_kv_heads(dataclasses.replace(M, heads=2, kv_heads=None)) == 1


def test_designs_reject_bad_arguments():
    with pytest.raises(ValueError, match="kind"):
        designs.Design("x", "lstm")
    with pytest.raises(ValueError, match="attention_layers"):
        designs.Design("x", "hybrid")
    with pytest.raises(ValueError, match="attention_layers"):
        designs.held_bytes(designs.Design("x", "hybrid", attention_layers=99), M, 10)
    with pytest.raises(ValueError, match="window"):
        designs.Design("x", "attention", window=0)
    with pytest.raises(ValueError, match="tokens"):
        designs.reach(FULL, 0)


def test_prefill_time_against_a_real_decoder_and_masks():
    """Full attention's pass is the real decoder's; a window's pairs are the window mask's
    cells; a summary's pass is its weights' plus two multiply-adds per state number."""
    for tokens in (1, 512, 4096):
        flops, nbytes = R.prefill_work(M, tokens)
        assert designs.prefill_time(FULL, M, A, tokens) == max(flops / A.flops_per_s,
                                                               nbytes / A.bytes_per_s)
    narrow = designs.Design("window of 16", "attention", window=16, kv_heads=M.heads)
    pairs = int(masks.window_mask(300, 16).sum())
    flops = R.prefill_work(M, 300)[0] - 4 * R.query_channels(M) * (300 * 301 // 2) \
        + M.layers * 4 * M.heads * M.head_dim * pairs
    assert designs.prefill_time(narrow, M, A, 300) == pytest.approx(flops / A.flops_per_s)
    mamba = designs.Design("Mamba-1 sizes", "summary", expand=2, blocks=2, state_bytes=4)
    state = torch.zeros(2 * M.layers, 2 * M.width, 16, dtype=torch.float32)
    assert designs.held_bytes(mamba, M, 10**6) == state.numel() * state.element_size()
    updates = 4 * state.numel()
    assert designs.prefill_time(mamba, M, A, 1000) == pytest.approx(
        (2 * R.parameters(M) + updates) * 1000 / A.flops_per_s, rel=1e-12)


def test_a_hybrid_with_shared_heads_keeps_the_weights_and_shrinks_the_cache():
    kv = designs.hybrid_kv_heads(M)
    assert kv == 8 and M.heads % kv == 0
    assert designs.hybrid_kv_heads(dataclasses.replace(M, heads=12, kv_heads=None)) == 4
    assert designs.hybrid_kv_heads(dataclasses.replace(M, heads=8, kv_heads=1)) == 1
    shared = designs.Design("hybrid", "hybrid", attention_layers=3, kv_heads=kv)
    cache = 3 * 32768 * R.cache_bytes_per_token(dataclasses.replace(M, kv_heads=kv)) // M.layers
    state = torch.zeros(21, M.width, 16, dtype=torch.bfloat16)
    assert designs.held_bytes(shared, M, 32768) == cache + state.numel() * state.element_size()
    for n in (0, 8192):
        gap = designs.token_time(HYBRID, M, A, n) - designs.token_time(shared, M, A, n)
        assert gap == pytest.approx((designs.held_bytes(HYBRID, M, n)
                                     - designs.held_bytes(shared, M, n)) / A.bytes_per_s)
