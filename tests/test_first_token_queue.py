"""The first token's wait (``estimate.serving``): Schweitzer's closed form against the
fixed point of his equations iterated, exact mean value analysis of the same closed
loop, its limits; the first round's burst against a brute-force queue; the steps an
engine's prompt rides."""

from __future__ import annotations

import pytest

from transformer_calculator.counting.chips import chip
from transformer_calculator.estimate.serving import (ROUNDS, burst_wait, queue_wait,
                                                     step_tokens)
from transformer_calculator.measured_runs import fit

LOOPS = [(1, 0.1, 2.0), (4, 0.05, 1.0), (32, 0.2, 3.0), (64, 0.1, 2.0),
         (256, 0.05, 4.0), (1000, 0.01, 0.5)]


def schweitzer_iterated(n: int, s: float, z: float) -> float:
    """Schweitzer's equations R = S (1 + Q (N - 1) / N), Q = N R / (R + Z), iterated
    to their fixed point: the wait R - S."""
    q = n / 2
    for _ in range(100_000):
        r = s * (1 + q * (n - 1) / n)
        q_new = n * r / (r + z)
        if abs(q_new - q) < 1e-13 * max(q, 1):
            break
        q = q_new
    return r - s


def exact_mva(n: int, s: float, z: float) -> float:
    """Exact mean value analysis of one queueing server and a delay of Z (Reiser and
    Lavenberg): R(k) = S (1 + Q(k - 1)), X(k) = k / (R(k) + Z), Q(k) = X(k) R(k)."""
    q = 0.0
    for k in range(1, n + 1):
        r = s * (1 + q)
        q = k / (r + z) * r
    return r - s


@pytest.mark.parametrize("n,s,z", LOOPS)
def test_the_closed_form_is_schweitzers_fixed_point(n, s, z):
    assert queue_wait(n, s, z) == pytest.approx(schweitzer_iterated(n, s, z),
                                                rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("n,s,z", LOOPS)
def test_the_approximation_stays_near_exact_mean_value_analysis(n, s, z):
    """Schweitzer's wait is within a tenth of the response time the exact analysis
    gives (the approximation's known accuracy for one server is a few per cent)."""
    assert queue_wait(n, s, z) + s == pytest.approx(exact_mva(n, s, z) + s, rel=0.1)


def test_its_limits():
    assert queue_wait(1, 0.3, 5.0) == pytest.approx(0.0, abs=1e-12)
    assert queue_wait(50, 0.1, 0.0) == pytest.approx(49 * 0.1)  # no one away: all wait
    # saturated: the server takes N S a cycle, the clients are away Z of it
    assert queue_wait(10_000, 0.1, 2.0) == pytest.approx(10_000 * 0.1 - 2.0 - 0.1,
                                                         rel=1e-3)
    assert queue_wait(8, 0.001, 1e6) == pytest.approx(0.0, abs=1e-6)  # rare prompts


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="clients"):
        queue_wait(0, 0.1, 1.0)
    with pytest.raises(ValueError, match="times"):
        queue_wait(3, -0.1, 1.0)


def test_the_first_rounds_burst_is_a_queue_served_one_at_a_time():
    """N prompts arriving at once and served one after another wait (N - 1) S / 2 on
    average; spread over the run's rounds, the later ones waiting none."""
    n, s = 37, 0.25
    brute = sum(i * s for i in range(n)) / n / ROUNDS
    assert burst_wait(n, s) == pytest.approx(brute)


def test_the_vectors_wait_is_the_estimates():
    import numpy as np

    loops = np.array(LOOPS, dtype=float)
    got = fit._queue_wait(loops[:, 0], loops[:, 1], loops[:, 2])
    assert got.tolist() == pytest.approx([queue_wait(*row) for row in LOOPS],
                                         rel=1e-12, abs=1e-15)


def test_an_engines_step_carries_its_default_prompt_tokens():
    assert step_tokens("vllm", chip("h100-sxm")) == 8192
    assert step_tokens("trtllm", chip("b200")) == 8192
    assert step_tokens("sglang", chip("h200")) == 8192  # 141 GB: below SGLang's 160 GiB
    assert step_tokens("sglang", chip("b200")) == 16384
