"""The roofline per operation, timed on this machine: two kernels run one after the other
take the sum of their own times, not the slower of their arithmetic and their reading taken
over both.

The kernels are a decode step's two kinds, in PyTorch (float32, on one processor thread):
- a wide matrix product (many tokens through one matrix), which waits on arithmetic;
- a product of one query with a long cache (the cache read once for a little arithmetic),
  which waits on reading.
Each is timed alone (the best of several rounds), which measures this processor's arithmetic
rate R and reading rate S for it, and the two are timed in turn. With the sizes chosen so that
each takes about as long as the other, the whole-step floor max(sum F / R, sum D / S) is about
half of what the pair takes, while the per-operation sum is about all of it.

The times are this machine's and are asserted only as bounds on ratios. Two things keep a
loaded machine (the other test worker, on two cores) from breaking them: the kernels run on one
thread, so a descheduled helper thread cannot stall a product at a barrier; and the three
timings are taken in turn, round after round, each keeping its best round, so a busy spell slows
all three alike. (Timed separately, on several threads, the parts once looked three times slower
than the pair on a loaded CI machine.)"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import torch

import transformer_arithmetic as ta
from transformer_arithmetic import timing

pytestmark = [pytest.mark.torch_kernels, pytest.mark.slow(seconds=6)]


@contextmanager
def one_thread() -> Iterator[None]:
    """Run PyTorch's kernels on one processor thread inside the block."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def best_in_turn(runs: list[Callable[[], object]], rounds: int) -> list[float]:
    """Each run's shortest time in seconds, the runs timed one after another each round."""
    best = [float("inf")] * len(runs)
    for _ in range(rounds):
        for i, run in enumerate(runs):
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def test_two_kernels_in_turn_take_the_sum_of_their_times():
    gen = torch.Generator().manual_seed(0)
    d = 512
    x = torch.randn(384, d, generator=gen)
    w = torch.randn(d, d, generator=gen)
    out = torch.empty(384, d)
    q = torch.randn(d, generator=gen)

    def matmul():                               # arithmetic-bound: 384 tokens through W
        torch.matmul(x, w, out=out)

    def cache_of(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(n, d, generator=gen), torch.empty(n)

    with one_thread():
        cache, scores = cache_of(65536)         # a first cache, to learn the reading rate

        def attention():                        # reading-bound: the whole cache, once
            torch.mv(cache, q, out=scores)

        n = cache.shape[0]
        for _ in range(3):                      # size the cache to be read in about t_mm
            t_mm, t_at = best_in_turn([matmul, attention], rounds=5)
            n = int(min(max(n * t_mm / t_at, 4096), 4_000_000))
            cache, scores = cache_of(n)         # (a cache that fits the last-level cache
                                                # is read faster: hence the repeats)

        def both():
            matmul()
            attention()

        t_mm, t_at, t_both = best_in_turn([matmul, attention, both], rounds=15)

    f_mm = 2 * x.shape[0] * d * d
    d_mm = x.nbytes + w.nbytes + out.nbytes
    f_at = 2 * n * d
    d_at = cache.nbytes + q.nbytes + scores.nbytes
    here = ta.Accelerator(flops_per_s=f_mm / t_mm, bytes_per_s=d_at / t_at,
                          memory_bytes=2**34,
                          name="this machine, as these kernels measure it")
    floor = timing.roofline_time(f_mm + f_at, d_mm + d_at, here)
    by_kernel = (timing.roofline_time(f_mm, d_mm, here)
                 + timing.roofline_time(f_at, d_at, here))
    assert by_kernel >= floor
    # each kernel is bound by the limit it was timed by, so its roof gives its own time back
    assert by_kernel == pytest.approx(t_mm + t_at, rel=0.05)
    # the pair takes at least the sum of the kernels' times, as the rule per operation says
    # (no kernel's arithmetic hides under another's reading), and clearly more than the
    # whole-step floor, which assumes it does: by at least half the shorter kernel's time
    # (all of it, were the floor exactly the longer kernel's time)
    assert t_both >= 0.85 * by_kernel, (t_both, by_kernel, floor)
    assert t_both > floor + 0.5 * min(t_mm, t_at), (t_both, floor, t_mm, t_at)
