"""Choosing the next token (sampling) and the context window's limits (truncation, speed).

Sampling is checked against torch's own softmax and Categorical entropy, and against a
plain torch top-p, on many seeded random rows (property checks without hypothesis)."""
import math

import numpy as np
import pytest
import torch

import transformer_arithmetic as ta
from transformer_arithmetic import masks, memory, sampling, simulated, timing

M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR
RNG_SEED = 20240501


def _random_rows(n_rows: int = 60):
    """Seeded random logit rows of varied length and spread."""
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(n_rows):
        size = int(rng.integers(2, 40))
        yield rng.normal(0.0, float(rng.uniform(0.1, 5.0)), size)


# ---------------------------------------------------------------- sampling against torch


@pytest.mark.parametrize("temperature", [0.25, 0.5, 1.0, 1.5, 3.0])
def test_softmax_matches_torch(temperature):
    for row in _random_rows():
        ours = sampling.softmax(row, temperature)
        theirs = torch.softmax(torch.tensor(row, dtype=torch.float64) / temperature, dim=-1).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
        assert math.isclose(ours.sum(), 1.0, rel_tol=1e-12)


def test_softmax_sends_minus_infinity_to_exactly_zero():
    p = sampling.softmax([1.0, -np.inf, 0.5])
    assert p[1] == 0.0
    np.testing.assert_allclose(p, torch.softmax(torch.tensor([1.0, -math.inf, 0.5], dtype=torch.float64), -1))


def test_entropy_matches_torch_categorical():
    for row in _random_rows():
        for t in (0.5, 1.0, 1.5):
            p = sampling.softmax(row, t)
            theirs = float(torch.distributions.Categorical(probs=torch.tensor(p)).entropy())
            assert math.isclose(sampling.entropy(p), theirs, rel_tol=1e-10, abs_tol=1e-12)


def test_entropy_limits():
    assert sampling.entropy([1.0, 0.0, 0.0]) == 0.0
    assert math.isclose(sampling.entropy(np.full(12, 1 / 12)), math.log(12))


def test_higher_temperature_never_lowers_entropy_or_raises_the_favourite():
    for row in _random_rows():
        ps = [sampling.softmax(row, t) for t in (0.5, 1.0, 1.5, 3.0)]
        ents = [sampling.entropy(p) for p in ps]
        tops = [p.max() for p in ps]
        assert all(a <= b + 1e-12 for a, b in zip(ents, ents[1:]))
        assert all(a >= b - 1e-12 for a, b in zip(tops, tops[1:]))


def _torch_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Top-p written the usual torch way: drop a word once the words above it already reach top_p."""
    sorted_p, order = torch.sort(probs, descending=True, stable=True)
    before = torch.cumsum(sorted_p, 0) - sorted_p  # chance held by the words ranked above
    keep_sorted = before < top_p
    keep = torch.zeros_like(keep_sorted).scatter(0, order, keep_sorted)
    kept = torch.where(keep, probs, torch.zeros_like(probs))
    return kept / kept.sum()


@pytest.mark.parametrize("top_p", [0.3, 0.5, 0.9, 0.95, 1.0])
def test_top_p_filter_matches_a_torch_top_p(top_p):
    for row in _random_rows():
        p = sampling.softmax(row)
        ours = sampling.top_p_filter(p, top_p)
        theirs = _torch_top_p(torch.tensor(p), top_p).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
        kept = sampling.top_p_keep(p, top_p)
        assert p[kept].sum() >= top_p - 1e-12  # the kept words reach the total
        assert p[kept[:-1]].sum() < top_p  # and one fewer would not
        assert math.isclose(ours.sum(), 1.0, rel_tol=1e-12)


def test_two_step_paths_match_a_torch_outer_product():
    rng = np.random.default_rng(RNG_SEED + 1)
    first = sampling.softmax(rng.normal(size=7))
    second = {a: sampling.softmax(rng.normal(size=7)) for a in (0, 3, 5)}
    joint = torch.outer(torch.tensor(first), torch.ones(7, dtype=torch.float64))
    joint = joint * torch.stack([torch.tensor(second.get(a, np.zeros(7))) for a in range(7)])
    best = divmod(int(torch.argmax(joint)), 7)
    a, b, j = sampling.two_step_paths(first, second)[0]
    assert (a, b) == best and math.isclose(j, float(joint.max()))


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: sampling.softmax([1.0, 2.0], temperature=0), "temperature must be a positive"),
        (lambda: sampling.top_p_keep([0.5, 0.5], 0), r"top_p must lie in \(0, 1\]"),
        (lambda: sampling.top_p_keep([0.5, 0.5], 1.2), r"top_p must lie in \(0, 1\]"),
        (lambda: sampling.entropy([0.5, 0.6]), "chances must be non-negative and sum to 1"),
    ],
)
def test_sampling_bad_inputs(call, words):
    with pytest.raises(ValueError, match=words):
        call()


# ---------------------------------------------------------------- the simulated position 4


def test_simulated_position_four_figures():
    row = simulated.logits_array()[3]
    v = simulated.VOCAB
    p = sampling.softmax(row)
    assert (v[int(row.argmax())], row.max(), v[int(row.argmin())], row.min()) == ("lifts", 2.59, "block", -2.61)
    cold, hot = sampling.softmax(row, 0.5), sampling.softmax(row, 1.5)
    assert [round(q.max(), 3) for q in (cold, p, hot)] == [0.620, 0.352, 0.253]
    assert [round(sampling.entropy(q), 2) for q in (cold, hot)] == [1.20, 2.14]
    assert round(hot.min(), 4) == 0.0079 and round(1 / hot.min()) == 127
    kept = sampling.top_p_keep(p, 0.9)
    assert len(kept) == 7 and round(p[kept].sum(), 3) == 0.936
    assert round(sampling.top_p_filter(p, 0.9).max(), 3) == 0.376
    counts = [len(sampling.top_p_keep(sampling.softmax(r), 0.9)) for r in simulated.logits_array()]
    assert counts[0] == 9 and counts[-1] == 1


def test_simulated_greedy_tree():
    v = simulated.VOCAB
    p = sampling.softmax(simulated.logits_array()[3])
    second = {v.index(w): sampling.softmax(simulated.next_logits_array(w)) for w in simulated.NEXT_LOGITS}
    paths = sampling.two_step_paths(p, second)
    best_after = {a: max(j for a2, _, j in paths if a2 == a) for a in second}
    assert round(best_after[v.index("lifts")], 4) == 0.0647
    assert round(best_after[v.index("the")], 4) == 0.1141
    assert (v[paths[0][0]], v[paths[0][1]]) == ("the", "red")  # greedy's first word is not on the best path


# ---------------------------------------------------------------- the context window


def test_window_overflow():
    dropped, share = masks.window_overflow(3000, 2048)
    assert dropped == 952 and round(100 * share) == 32
    assert masks.window_overflow(2048, 2048) == (0, 0.0)
    assert masks.window_overflow(0, 2048) == (0, 0.0)
    for n in range(0, 50):  # matches keeping the newest window of a real list
        row = list(range(n))
        kept = row[-7:] if n else []
        assert masks.window_overflow(n, 7)[0] == len(row) - len(kept)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: masks.window_overflow(-1, 10), "tokens must be at least 0, got -1"),
        (lambda: masks.window_overflow(10, 0), "window must be at least 1, got 0"),
        (lambda: timing.machine_time_per_token(M, A, 2048, batch=0), "batch must be at least 1, got 0"),
        (lambda: timing.cache_reading_time(M, A, -5), "tokens must be at least 0, got -5"),
    ],
)
def test_window_and_timing_bad_inputs(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_pairs_and_cache_at_the_quoted_lengths():
    assert round(masks.causal_pairs(8192) / 1e6, 1) == 33.6
    assert round(masks.causal_pairs(131072) / 1e6) == 8590
    assert memory.kv_cache_bytes(M, 8192) / ta.GIB == 0.75
    assert memory.kv_cache_bytes(M, 131072) / ta.GIB == 12
    assert memory.kv_cache_bytes(M, 16384) == 2 * memory.kv_cache_bytes(M, 8192)
    assert round(masks.causal_pairs(16384) / masks.causal_pairs(8192), 2) == 4.0


def test_each_conversations_wait_against_the_machines_time_per_token():
    batches = [1, 2, 4, 8, 16, 32, 64]
    waits = [timing.decode_step_time(M, A, 2048, b) for b in batches]
    per_token = [timing.machine_time_per_token(M, A, 2048, b) for b in batches]
    floor = timing.cache_reading_time(M, A, 2048)
    assert waits == sorted(waits) and per_token == sorted(per_token, reverse=True)
    assert round(waits[0] * 1e6) == 873 and round(waits[-1] * 1e3, 2) == 13.56
    assert round(per_token[-1] * 1e6) == 212 and round(floor * 1e6) == 201
    assert all(t > floor for t in per_token)  # approached from above, never reached
    for b, t in zip(batches, per_token):
        assert math.isclose(t, 1 / timing.throughput(M, A, 2048, b))
