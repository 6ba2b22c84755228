"""The roofline per operation, timed on this machine: two kernels run one after the other
take the sum of their own times, not the slower of their arithmetic and their reading taken
over both.

The kernels are a decode step's two kinds, in numpy (float32):
- a wide matrix product (many tokens through one matrix), which waits on arithmetic;
- a product of one query with a long cache (the cache read once for a little arithmetic),
  which waits on reading.
Each is timed alone (the best of several runs), which measures this processor's arithmetic
rate R and reading rate S for it, and then the two are timed in turn. With the sizes chosen so
that each takes about as long as the other, the whole-step floor max(sum F / R, sum D / S) is
about half of what the pair takes, while the per-operation sum is about all of it. The times are
this machine's and are asserted only as lower bounds on ratios, which a busy machine (another
process slowing a kernel down) cannot break."""
from __future__ import annotations

import time

import numpy as np
import pytest

import transformer_arithmetic as ta
from transformer_arithmetic import timing

pytestmark = pytest.mark.slow(seconds=6)


def best_of(run, repeats: int = 7) -> float:
    """The shortest of ``repeats`` timed runs of ``run``, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def test_two_kernels_in_turn_take_the_sum_of_their_times():
    rng = np.random.default_rng(0)
    d = 512
    x, w = rng.standard_normal((2, 768, d), dtype=np.float32)[0], rng.standard_normal(
        (d, d), dtype=np.float32)
    out = np.empty((768, d), dtype=np.float32)

    def matmul():                               # arithmetic-bound: 768 tokens through W
        np.matmul(x, w, out=out)

    f_mm = 2 * x.shape[0] * d * d
    t_mm = best_of(matmul)
    rate = f_mm / t_mm                           # this machine's R for this kernel

    def cache_of(n: int):
        return rng.standard_normal((n, d), dtype=np.float32), np.empty(n, dtype=np.float32)

    q = rng.standard_normal(d, dtype=np.float32)
    cache, scores = cache_of(65536)              # a first cache, to learn the reading rate

    def attention():                             # reading-bound: the whole cache, once
        np.matmul(cache, q, out=scores)

    first = cache.nbytes / best_of(attention)
    n = int(np.clip(t_mm * first / (4 * d), 4096, 4_000_000))   # read in about t_mm
    cache, scores = cache_of(n)
    t_at = best_of(attention)
    d_at = cache.nbytes + q.nbytes + scores.nbytes
    speed = d_at / t_at                          # this machine's S for this kernel
    d_mm = x.nbytes + w.nbytes + out.nbytes
    f_at = 2 * n * d
    here = ta.Accelerator(flops_per_s=rate, bytes_per_s=speed, memory_bytes=2**34,
                          name="this machine, as these kernels measure it")

    def both():
        matmul()
        attention()

    t_both = best_of(both)
    floor = timing.roofline_time(f_mm + f_at, d_mm + d_at, here)
    by_kernel = (timing.roofline_time(f_mm, d_mm, here)
                 + timing.roofline_time(f_at, d_at, here))
    assert by_kernel >= floor
    # each kernel is bound by the limit it was timed by, so its roof gives its own time back
    assert by_kernel == pytest.approx(t_mm + t_at, rel=0.05)
    # the pair takes at least the sum of the kernels' times, as the rule per operation says (no
    # kernel's arithmetic hides under another's reading), and clearly more than the whole-step
    # floor, which assumes it does; a busy machine only makes the pair slower
    assert t_both >= 0.85 * by_kernel, (t_both, by_kernel, floor)
    assert t_both > 1.25 * floor, (t_both, floor)
