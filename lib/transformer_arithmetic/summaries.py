"""Running summaries: a state carried along the sequence, shrunk at each step and added to.

A running summary (the simplest state-space layer, or a recurrent network's memory)
does h_t = a_t * h_{t-1} + x_t. Whatever entered at step s is still present at step t
with weight a_{s+1} * ... * a_t. With a fixed rate a, that is a ** (t - s).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._checks import count, fraction

__all__ = ["surviving_weight", "run_summary", "token_weight", "neighbour_gap", "parallel_scan",
           "rate_to_keep", "steps_until"]


def surviving_weight(rate: float, steps: int) -> float:
    """Share of a signal left after ``steps`` steps that each keep ``rate`` of it."""
    return fraction("rate", rate) ** count("steps", steps)


def _check_rates(rates: np.ndarray) -> None:
    for r in np.unique(rates):
        fraction("rate", r)


def run_summary(inputs: Sequence[float], rates: Sequence[float] | float) -> np.ndarray:
    """The summary after each step, h_t = rate_t * h_(t-1) + input_t, starting from 0."""
    x = np.asarray(inputs, dtype=float)
    a = np.broadcast_to(np.asarray(rates, dtype=float), x.shape)
    _check_rates(a)
    h = np.zeros_like(x)
    state = 0.0
    for t in range(len(x)):
        state = a[t] * state + x[t]
        h[t] = state
    return h


def token_weight(rates: Sequence[float] | float, delivered: int, steps: int) -> np.ndarray:
    """Weight of the token delivered at step ``delivered`` at each of steps 0..steps-1 (0 before it).

    ``rates`` is one rate for every step or a sequence of ``steps`` rates."""
    impulse = np.zeros(count("steps", steps, minimum=1))
    if not 0 <= count("delivered", delivered) < steps:
        raise ValueError(f"delivered={delivered} lies outside steps 0..{steps - 1}")
    impulse[delivered] = 1.0
    return run_summary(impulse, rates)


def neighbour_gap(rate: float) -> float:
    """How much the weights of two neighbouring tokens differ at the front of the summary (1 - rate)."""
    return 1.0 - fraction("rate", rate)


def parallel_scan(inputs: Sequence[float], rates: Sequence[float] | float) -> tuple[np.ndarray, int]:
    """The same summaries as ``run_summary``, by a parallel scan: (summary after each step, rounds).

    Each step is the pair (rate, input); an earlier stretch (a1, b1) followed by a later one
    (a2, b2) combines to (a1 * a2, a2 * b1 + b2). In round r every position combines with the
    one 2**r places back, all at once, so n steps take ceil(log2 n) rounds instead of n."""
    b = np.asarray(inputs, dtype=float).copy()
    a = np.broadcast_to(np.asarray(rates, dtype=float), b.shape).copy()
    _check_rates(a)
    rounds, gap = 0, 1
    while gap < len(b):
        a_back, b_back = a[:-gap].copy(), b[:-gap].copy()  # every position reads before any writes
        b[gap:] = a[gap:] * b_back + b[gap:]
        a[gap:] = a[gap:] * a_back
        rounds, gap = rounds + 1, gap * 2
    return b, rounds


def rate_to_keep(share: float, steps: int) -> float:
    """Rate each step must keep so that ``share`` of a signal is left after ``steps`` steps."""
    return fraction("share", share) ** (1 / count("steps", steps, minimum=1))


def steps_until(rate: float, share: float) -> int:
    """Fewest steps, each keeping ``rate``, after which less than ``share`` of a signal is left."""
    r, p = fraction("rate", rate, high_closed=False), fraction("share", share)
    steps = max(0, math.ceil(math.log(p) / math.log(r)))
    while r**steps >= p:                      # round-off may leave the estimate one short ...
        steps += 1
    while steps > 0 and r ** (steps - 1) < p:  # ... or one over
        steps -= 1
    return steps
