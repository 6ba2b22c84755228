"""The context window's limits (truncation) and the speed of generation as the batch grows.

The sampling rules are checked against torch in test_references.py; the figures the book
quotes for the simulated example, recomputed with torch, in test_simulated.py."""

import pytest

import decoder_reference as R
from decoder_reference import CHIP_24GIB, PLAIN_335M
import transformer_arithmetic as ta
from transformer_arithmetic import masks, memory, timing

pytestmark = pytest.mark.torch_kernels

M, A = PLAIN_335M, CHIP_24GIB


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
        (lambda: timing.throughput(M, A, 2048, batch=0), "batch must be at least 1, got 0"),
        (lambda: timing.cache_reading_time(M, A, -5), "tokens must be at least 0, got -5"),
    ],
)
def test_window_and_timing_bad_inputs(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_pairs_and_cache_at_long_lengths():
    # the cache at 8,192 tokens: test_memory.py
    assert round(masks.causal_pairs(8192) / 1e6, 1) == 33.6
    assert round(masks.causal_pairs(131072) / 1e6) == 8590
    assert round(masks.causal_pairs(16384) / masks.causal_pairs(8192), 2) == 4.0
    assert memory.kv_cache_bytes(M, 131072) / ta.GIB == 12
    assert memory.kv_cache_bytes(M, 131072) == 131072 * R.cache_bytes_per_token(M)


def test_each_conversations_wait_against_the_machines_time_per_token():
    batches = [1, 2, 4, 8, 16, 32, 64]
    waits = [timing.decode_step_time(M, A, 2048, b) for b in batches]
    per_token = [1 / timing.throughput(M, A, 2048, b) for b in batches]   # the machine's
    floor = timing.cache_reading_time(M, A, 2048)
    assert waits == sorted(waits) and per_token == sorted(per_token, reverse=True)
    assert round(waits[0] * 1e6) == 873 and round(waits[-1] * 1e3, 2) == 13.56
    assert round(per_token[-1] * 1e6) == 212 and round(floor * 1e6) == 201
    assert all(t > floor for t in per_token)  # approached from above, never reached
    for b, wait in zip(batches, waits):   # one step of b conversations, from a real decoder's sizes
        flops, nbytes = R.decode_work(M, 2048, b)
        assert wait == max(flops / A.flops_per_s, nbytes / A.bytes_per_s)
    assert floor == 2048 * R.cache_bytes_per_token(M) / A.bytes_per_s
