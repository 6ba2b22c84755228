"""Running summaries: a state carried along the sequence, shrunk at each step and added
to.

A running summary (the simplest state-space layer, or a recurrent network's memory)
does c_t = gamma_t * c_{t-1} + x_t. Whatever entered at step s is still present at step
t with weight gamma_{s+1} * ... * gamma_t. With a fixed rate gamma, that is
gamma ** (t - s).

Two parallel scans compute every c_t at once from the pairs (gamma_t, x_t), combining
an earlier stretch (g1, x1) with a later one (g2, x2) into (g1 g2, g2 x1 + x2): the
Hillis-Steele scan (every position takes in the one 2**r back in round r: log2 n rounds,
about n log2 n combines) and Blelloch's work-efficient scan (a tree up, then down:
about 2 log2 n rounds and 2n combines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .checks import checked_whole, checked_fraction

__all__ = [
    "surviving_weight",
    "run_summary",
    "token_weight",
    "parallel_scan",
    "selective_step",
    "weight_matrix",
    "scan_pairs",
    "scan_rounds",
    "scan_combines",
    "tree_scan_pairs",
    "tree_scan_combines",
    "tree_scan_rounds",
    "rate_to_keep",
    "steps_until",
]


def surviving_weight(rate: float, steps: int) -> float:
    """Share of a signal left after ``steps`` steps that each keep ``rate`` of it."""
    rate = checked_fraction("rate", rate)
    steps = checked_whole("steps", steps)
    return rate**steps


def _check_rates(rates: np.ndarray) -> None:
    for r in np.unique(rates):
        checked_fraction("rate", r)


def run_summary(inputs: Sequence[float], rates: Sequence[float] | float) -> np.ndarray:
    """The summary after each step, h_t = rate_t * h_(t-1) + input_t, starting from
    0."""
    x = np.asarray(inputs, dtype=float)
    a = np.broadcast_to(np.asarray(rates, dtype=float), x.shape)
    _check_rates(a)
    h = np.zeros_like(x)
    state = 0.0
    for t in range(len(x)):
        state = a[t] * state + x[t]
        h[t] = state
    return h


def token_weight(
    rates: Sequence[float] | float, delivered: int, steps: int
) -> np.ndarray:
    """Weight of the token delivered at step ``delivered`` at each of steps 0..steps-1
    (0 before it).

    ``rates`` is one rate for every step or a sequence of ``steps`` rates."""
    steps = checked_whole("steps", steps, minimum=1)
    delivered = checked_whole("delivered", delivered)
    impulse = np.zeros(steps)
    if not 0 <= delivered < steps:
        raise ValueError(f"delivered={delivered} lies outside steps 0..{steps - 1}")
    impulse[delivered] = 1.0
    return run_summary(impulse, rates)


def parallel_scan(
    inputs: Sequence[float], rates: Sequence[float] | float
) -> tuple[np.ndarray, int]:
    """The same summaries as ``run_summary``, by the Hillis-Steele parallel scan:
    (summary after each step, rounds).

    Each step is the pair (rate, input); an earlier stretch (a1, b1) followed by a later
    one (a2, b2) combines to (a1 * a2, a2 * b1 + b2). In round r every position combines
    with the one 2**r places back, all at once, so n steps take ceil(log2 n) rounds
    instead of n."""
    b = np.asarray(inputs, dtype=float).copy()
    a = np.broadcast_to(np.asarray(rates, dtype=float), b.shape).copy()
    _check_rates(a)
    rounds, gap = 0, 1
    while gap < len(b):
        a_back, b_back = (
            a[:-gap].copy(),
            b[:-gap].copy(),
        )  # every position reads before any writes
        b[gap:] = a[gap:] * b_back + b[gap:]
        a[gap:] = a[gap:] * a_back
        rounds, gap = rounds + 1, gap * 2
    return b, rounds


def rate_to_keep(share: float, steps: int) -> float:
    """Rate each step must keep so that ``share`` of a signal is left after ``steps``
    steps."""
    share = checked_fraction("share", share)
    steps = checked_whole("steps", steps, minimum=1)
    return share ** (1 / steps)


def steps_until(rate: float, share: float) -> int:
    """Fewest steps, each keeping ``rate``, after which less than ``share`` of a signal
    is left."""
    r, p = (
        checked_fraction("rate", rate, high_closed=False),
        checked_fraction("share", share),
    )
    steps = max(0, math.ceil(math.log(p) / math.log(r)))
    while r**steps >= p:  # round-off may leave the estimate one short ...
        steps += 1
    while steps > 0 and r ** (steps - 1) < p:  # ... or one over
        steps -= 1
    return steps


def selective_step(step: float) -> tuple[float, float]:
    """(rate kept, share written) for a content-chosen step size ``step`` >= 0, as a
    selective state-space layer discretises it (decay exp(-step), write 1 - exp(-step)):
    a large step forgets the summary and writes the token in full, a small one keeps the
    summary and ignores the token."""
    try:
        s = float(step)
    except (TypeError, ValueError):
        raise ValueError(f"step must be a number, got {step!r}") from None
    if not (s >= 0 and np.isfinite(s)):
        raise ValueError(f"step must be a finite number >= 0, got {step!r}")
    kept = float(np.exp(-s))
    return kept, 1.0 - kept


def weight_matrix(
    rates: Sequence[float], writes: Sequence[float] | float = 1.0
) -> np.ndarray:
    """Weight of token s (column) in the summary after step t (row): writes[s] times
    rates[s+1] * ... * rates[t] for s <= t, and 0 for s > t. Rates may be 0 (forget
    all)."""
    a = np.asarray(rates, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"rates must be a non-empty sequence, got {rates!r}")
    b = np.broadcast_to(np.asarray(writes, dtype=float), a.shape)
    for r in np.unique(a):
        checked_fraction("rate", r, low_open=False)
    for w in np.unique(b):
        checked_fraction("writes", w, low_open=False)
    n = a.size
    out = np.zeros((n, n))
    out[0, 0] = b[0]
    for t in range(
        1, n
    ):  # row t: row t-1 kept at rate a_t, and the new token written at b_t
        out[t, :t] = out[t - 1, :t] * a[t]
        out[t, t] = b[t]
    return out


def scan_pairs(n: int) -> list[list[tuple[int, int]]]:
    """For each round of the parallel scan of ``n`` steps, the (earlier, later)
    positions that combine: in round r every position i >= 2**r takes in position i -
    2**r."""
    n = checked_whole("n", n, minimum=1)
    rounds, gap = [], 1
    while gap < n:
        rounds.append([(i - gap, i) for i in range(gap, n)])
        gap *= 2
    return rounds


def scan_rounds(n: int) -> int:
    """Rounds the parallel scan needs for ``n`` steps: ceil(log2 n), 0 for a single
    step."""
    n = checked_whole("n", n, minimum=1)
    return (n - 1).bit_length()


def scan_combines(n: int) -> int:
    """Combining operations the parallel scan does over all its rounds for ``n`` steps
    (the walk does n - 1)."""
    n = checked_whole("n", n, minimum=1)
    return sum(n - 2**r for r in range(scan_rounds(n)))


def tree_scan_pairs(n: int) -> list[list[tuple[int, int]]]:
    """For each round of Blelloch's work-efficient scan of ``n`` steps, the (earlier,
    later) positions that combine: up a tree (round r joins stretches of 2**r), then
    down it, filling in the positions the way up skipped. Rounds with no pair inside
    the ``n`` positions are left out."""
    n = checked_whole("n", n, minimum=1)
    size = 1 << (n - 1).bit_length()
    rounds, gap = [], 1
    while gap < size:  # up: position i takes in the stretch ending gap places back
        rounds.append([(i - gap, i) for i in range(2 * gap - 1, n, 2 * gap)])
        gap *= 2
    gap //= 4
    while gap >= 1:  # down: the positions between the tree's nodes
        rounds.append([(i - gap, i) for i in range(3 * gap - 1, n, 2 * gap)])
        gap //= 2
    return [pairs for pairs in rounds if pairs]


def _tree_round_sizes(n: int) -> list[int]:
    """How many pairs each round of ``tree_scan_pairs(n)`` holds (without listing
    them)."""
    n = checked_whole("n", n, minimum=1)
    size, sizes, gap = 1 << (n - 1).bit_length(), [], 1
    while gap < size:
        sizes.append(len(range(2 * gap - 1, n, 2 * gap)))
        gap *= 2
    gap //= 4
    while gap >= 1:
        sizes.append(len(range(3 * gap - 1, n, 2 * gap)))
        gap //= 2
    return [s for s in sizes if s]


def tree_scan_combines(n: int) -> int:
    """Combining operations Blelloch's scan does for ``n`` steps: 2n - 2 - log2 n when n
    is a power of two, about two a step (the walk does n - 1)."""
    return sum(_tree_round_sizes(n))


def tree_scan_rounds(n: int) -> int:
    """Rounds of Blelloch's scan for ``n`` steps: about 2 log2 n (up the tree, then
    down)."""
    return len(_tree_round_sizes(n))
