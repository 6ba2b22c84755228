"""Beam search and the mean chance of a drawn word (sampling), and arithmetic intensity (timing),
each checked against an independent reference: brute-force enumeration of every path, torch's
own softmax, a real PyTorch decoder's matrices and cache, and plain search over batches and
prompt lengths."""
import dataclasses
import itertools
import math

import numpy as np
import pytest
import torch

import decoder_reference as R
from decoder_reference import CHIP_24GIB, PLAIN_335M
import transformer_arithmetic as ta
from transformer_arithmetic import intensity, sampling, timing
from transformer_arithmetic.examples import simulated

pytestmark = pytest.mark.torch_kernels

M, A = PLAIN_335M, CHIP_24GIB
SEED = 20240611


# ---------------------------------------------------------------- beam search


def random_tree(vocab: int, seed: int):
    """A next-token rule over a vocabulary of ``vocab``: seeded chances for every prefix."""
    rng = np.random.default_rng(seed)
    table = {}

    def next_chances(prefix):
        if prefix not in table:
            table[prefix] = torch.softmax(torch.tensor(rng.normal(0, 2, vocab)), -1).numpy()
        return table[prefix]

    return next_chances


def brute_force(next_chances, vocab: int, steps: int):
    """Every sequence of ``steps`` tokens with its chance (torch.prod of its tokens' chances)."""
    out = []
    for seq in itertools.product(range(vocab), repeat=steps):
        chances = [next_chances(seq[:k])[seq[k]] for k in range(steps)]
        out.append((seq, float(torch.prod(torch.tensor(chances, dtype=torch.float64)))))
    return out


@pytest.mark.parametrize("vocab, steps", [(3, 2), (4, 3), (5, 3), (2, 6)])
def test_a_beam_wide_enough_finds_the_most_likely_sequence(vocab, steps):
    for seed in range(10):
        rule = random_tree(vocab, SEED + seed)
        every = brute_force(rule, vocab, steps)
        rounds = sampling.beam_search(rule, steps, width=vocab ** (steps - 1))
        best_seq, best = max(every, key=lambda s: s[1])
        assert rounds[-1][0][0] == best_seq and math.isclose(rounds[-1][0][1], best, rel_tol=1e-12)
        # the last round of an exhaustive beam lists every sequence, with its chance
        assert sorted(s for s, _ in rounds[-1]) == sorted(s for s, _ in every)


@pytest.mark.parametrize("vocab, steps", [(4, 3), (6, 4)])
def test_width_one_is_greedy_decoding(vocab, steps):
    for seed in range(10):
        rule = random_tree(vocab, SEED + 100 + seed)
        seq = ()
        for _ in range(steps):
            seq += (int(torch.argmax(torch.tensor(rule(seq)))),)
        assert sampling.beam_search(rule, steps, width=1)[-1][0][0] == seq


@pytest.mark.parametrize("width", [1, 2, 3])
def test_each_round_keeps_the_likeliest_extensions_of_the_last(width):
    rule = random_tree(5, SEED + 7)
    rounds = sampling.beam_search(rule, 4, width)
    chance = dict(brute_force(rule, 5, 4))
    kept = [()]
    for r, candidates in enumerate(rounds, start=1):
        extensions = {p + (t,) for p in kept for t in range(5)}
        assert {s for s, _ in candidates} == extensions
        # a candidate's chance is the total over every full sequence that starts with it
        for s, c in candidates:
            assert math.isclose(c, sum(v for full, v in chance.items() if full[:r] == s), rel_tol=1e-9)
        chances = [c for _, c in candidates]
        assert chances == sorted(chances, reverse=True)
        kept = [s for s, _ in candidates[:width]]


def test_on_the_simulated_tree_a_beam_of_two_finds_what_greedy_misses():
    v = simulated.VOCAB
    first = torch.softmax(torch.tensor(simulated.logits_array()[3]), -1).numpy()
    second = {v.index(w): torch.softmax(torch.tensor(simulated.next_logits_array(w)), -1).numpy()
              for w in simulated.NEXT_LOGITS}

    def rule(prefix):
        return first if not prefix else second[prefix[0]]

    # brute force over every path the tree holds
    paths = [((a, b), first[a] * second[a][b]) for a in second for b in range(len(v))]
    best_pair, best = max(paths, key=lambda p: p[1])
    greedy = sampling.beam_search(rule, 2, width=1)[-1][0]
    beam = sampling.beam_search(rule, 2, width=2)[-1][0]
    assert [v[t] for t in greedy[0]] == ["lifts", "the"] and round(greedy[1], 4) == 0.0647
    assert beam[0] == best_pair and math.isclose(beam[1], best) and [v[t] for t in beam[0]] == ["the", "red"]


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: sampling.beam_search(lambda p: [1.0], 0, 1), "steps must be at least 1, got 0"),
        (lambda: sampling.beam_search(lambda p: [1.0], 2, 0), "width must be at least 1, got 0"),
        (lambda: sampling.mean_chance_drawn([0.5, 0.5], [1.0]), "probs and drawn must have the same shape"),
        (lambda: sampling.mean_chance_drawn([0.5, 0.6], [0.5, 0.5]), "probs must be non-negative"),
        (lambda: sampling.mean_chance_drawn([0.5, 0.5], [1.5, -0.5]), "drawn must be non-negative"),
    ],
)
def test_bad_inputs(call, words):
    with pytest.raises(ValueError, match=words):
        call()


# ---------------------------------------------------------------- the mean chance of a drawn word


def test_mean_chance_drawn_against_torch_and_its_limits():
    rng = np.random.default_rng(SEED)
    for _ in range(50):
        row = rng.normal(0, rng.uniform(0.2, 4), int(rng.integers(2, 30)))
        p = sampling.softmax(row)
        for t in (0.5, 1.0, 2.0):
            q = torch.softmax(torch.tensor(row) / t, -1)
            expected = float(torch.distributions.Categorical(probs=q).probs @ torch.tensor(p))
            assert math.isclose(sampling.mean_chance_drawn(p, q.numpy()), expected, rel_tol=1e-12)
        greedy = np.eye(len(p))[int(p.argmax())]
        assert sampling.mean_chance_drawn(p, greedy) == p.max()
        assert sampling.mean_chance_drawn(p, p) <= p.max()  # a draw never beats greedy on average


# ---------------------------------------------------------------- arithmetic intensity


SHAPES = [M, dataclasses.replace(M, kv_heads=4), ta.ModelShape(layers=3, heads=4, head_dim=8, ffn_width=64,
                                                            vocab=50, kv_heads=1, bytes_per_number=4)]


@pytest.mark.parametrize("m", SHAPES, ids=["plain", "grouped", "tiny-mqa"])
@pytest.mark.parametrize("context, batch", [(0, 1), (2048, 1), (2048, 64), (100, 7)])
def test_decode_intensity_against_a_real_decoder(m, context, batch):
    flops, nbytes = R.decode_work(m, context, batch)
    assert math.isclose(intensity.decode_intensity(m, context, batch), flops / nbytes, rel_tol=1e-12)


@pytest.mark.parametrize("m", SHAPES, ids=["plain", "grouped", "tiny-mqa"])
def test_prefill_intensity_against_a_real_decoder(m):
    for tokens in (1, 50, 2048, 8192):
        flops, nbytes = R.prefill_work(m, tokens)
        assert math.isclose(intensity.prefill_intensity(m, tokens), flops / nbytes, rel_tol=1e-12)


def test_intensity_facts_of_a_plain_two_byte_model():
    assert intensity.ridge_intensity(A) == 100.0
    for context in (0, 512, 2048, 8192):   # two-byte numbers, one key-value head per query head
        assert intensity.decode_intensity(M, context) == 1.0
    assert intensity.decode_intensity(M, 0, 64) == 64.0


@pytest.mark.parametrize("context, batch", [(0, 1), (0, 300), (2048, 1), (2048, 64), (8192, 16)])
def test_the_roofline_gives_the_step_time(context, batch):
    rate = intensity.attainable_flops(A, intensity.decode_intensity(M, context, batch))
    work, nbytes = R.decode_work(M, context, batch)
    step = max(work / A.flops_per_s, nbytes / A.bytes_per_s)
    assert math.isclose(work / rate, step, rel_tol=1e-12)
    assert math.isclose(work / rate, timing.decode_step_time(M, A, context, batch), rel_tol=1e-12)
    assert rate <= A.flops_per_s


def first_bound_batch(m, acc, context, limit=5000):
    """The smallest batch whose arithmetic time reaches its reading time, by trying each in turn."""
    for b in range(1, limit + 1):
        flops, nbytes = R.decode_work(m, context, b)
        if flops / acc.flops_per_s >= nbytes / acc.bytes_per_s:
            return b
    return None


FAST = ta.Accelerator(flops_per_s=400e12, bytes_per_s=3.35e12, memory_bytes=80 * ta.GIB)


@pytest.mark.parametrize("acc", [A, FAST], ids=["chip-24gib", "fast"])
@pytest.mark.parametrize("m", SHAPES, ids=["plain", "grouped", "tiny-mqa"])
@pytest.mark.parametrize("context", [0, 1, 16, 64])
def test_arithmetic_bound_batch_against_trying_every_batch(acc, m, context):
    assert intensity.arithmetic_bound_batch(m, acc, context) == first_bound_batch(m, acc, context)


def test_no_batch_is_arithmetic_bound_when_each_cache_brings_too_little_work():
    assert intensity.arithmetic_bound_batch(M, A, 2048) is None
    assert first_bound_batch(M, A, 2048, limit=20000) is None
    # the intensity levels off below the ridge as the batch grows
    assert intensity.decode_intensity(M, 2048, 10**9) < intensity.ridge_intensity(A)


@pytest.mark.parametrize("acc", [A, FAST], ids=["chip-24gib", "fast"])
@pytest.mark.parametrize("m", SHAPES, ids=["plain", "grouped", "tiny-mqa"])
def test_arithmetic_bound_prompt_against_trying_every_length(acc, m):
    def bound(n):
        flops, nbytes = R.prefill_work(m, n)
        return flops / acc.flops_per_s >= nbytes / acc.bytes_per_s

    first = next(n for n in range(1, 100000) if bound(n))
    assert intensity.arithmetic_bound_prompt(m, acc) == first


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: intensity.decode_intensity(M, 10, batch=0), "batch must be at least 1, got 0"),
        (lambda: intensity.decode_intensity(M, -1), "context must be at least 0, got -1"),
        (lambda: intensity.prefill_intensity(M, 0), "tokens must be at least 1, got 0"),
        (lambda: intensity.attainable_flops(A, 0), "intensity must be positive"),
    ],
)
def test_intensity_bad_inputs(call, words):
    with pytest.raises(ValueError, match=words):
        call()


# ---------------------------------------------------------------- top-k and the cache's intensity


def test_top_k_keep_matches_torch_topk():
    rng = np.random.default_rng(SEED + 3)
    for _ in range(40):
        p = sampling.softmax(rng.normal(0, 2, int(rng.integers(3, 30))))
        for k in (1, 2, len(p) // 2, len(p)):
            ours = sampling.top_k_keep(p, k)
            theirs = torch.topk(torch.tensor(p), k).indices.numpy()
            assert list(ours) == list(theirs)
    with pytest.raises(ValueError, match="k must be at least 1, got 0"):
        sampling.top_k_keep([0.5, 0.5], 0)
    with pytest.raises(ValueError, match="k=3 is more than the 2 words"):
        sampling.top_k_keep([0.5, 0.5], 3)


@pytest.mark.parametrize("m", SHAPES, ids=["plain", "grouped", "tiny-mqa"])
def test_cache_intensity_against_a_real_cache(m):
    pair_work = 4 * R.query_channels(m)     # a new query meets one cached key and value in every layer
    assert math.isclose(intensity.cache_intensity(m), pair_work / R.cache_bytes_per_token(m), rel_tol=1e-12)
    # the limit of a decode step's intensity, as the batch grows, is set by the cache
    flops, nbytes = R.decode_work(m, 512, 1)
    assert math.isclose(intensity.decode_intensity(m, 512, 10**9), flops / (nbytes - R.weight_bytes(m)), rel_tol=1e-6)
