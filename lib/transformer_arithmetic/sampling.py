"""Turning raw outputs (logits) into chances, and chances into a chosen token."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .checks import checked_whole, checked_fraction, checked_positive

__all__ = [
    "softmax",
    "entropy",
    "top_p_keep",
    "top_p_filter",
    "mean_chance_drawn",
    "beam_search",
    "top_k_keep",
    "temperature_slope",
    "speculative_rule",
]


def softmax(
    logits: Sequence[float] | np.ndarray, temperature: float = 1.0, axis: int = -1
) -> np.ndarray:
    """Chances (summing to 1 along ``axis``) from raw outputs divided by
    ``temperature``.

    Minus-infinity entries get a chance of exactly 0."""
    t = checked_positive("temperature", temperature)
    z = np.asarray(logits, dtype=float) / t
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def entropy(probs: Sequence[float] | np.ndarray) -> float:
    """Spread of a set of chances in nats: 0 when one word is certain, ln(n) when all n
    are equal."""
    p = np.asarray(probs, dtype=float)
    if np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, rel_tol=1e-9):
        raise ValueError(
            f"chances must be non-negative and sum to 1, got a sum of {p.sum()!r}"
        )
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def top_p_keep(probs: Sequence[float] | np.ndarray, top_p: float) -> np.ndarray:
    """Indices of the words top-p keeps, most likely first: the fewest whose chances
    reach ``top_p``."""
    p = checked_fraction("top_p", top_p)
    probs = np.asarray(probs, dtype=float)
    order = np.argsort(-probs, kind="stable")
    running = np.cumsum(probs[order])
    k = int(np.searchsorted(running, p - 1e-12)) + 1  # tolerate round-off at p = 1
    return order[: min(k, len(order))]


def top_p_filter(probs: Sequence[float] | np.ndarray, top_p: float) -> np.ndarray:
    """The chances after the top-p cut: kept words share the whole chance, the rest get
    0."""
    probs = np.asarray(probs, dtype=float)
    kept = top_p_keep(probs, top_p)
    out = np.zeros_like(probs)
    out[kept] = probs[kept] / probs[kept].sum()
    return out


def mean_chance_drawn(
    probs: Sequence[float] | np.ndarray, drawn: Sequence[float] | np.ndarray
) -> float:
    """Average chance, under the model's ``probs``, of the word a rule draws with
    chances ``drawn`` (a number between 0 and the largest of ``probs``; greedy decoding
    attains the largest)."""
    p, q = np.asarray(probs, dtype=float), np.asarray(drawn, dtype=float)
    if p.shape != q.shape:
        raise ValueError(
            f"probs and drawn must have the same shape, got {p.shape} and {q.shape}"
        )
    for name, v in (("probs", p), ("drawn", q)):
        if np.any(v < 0) or not math.isclose(float(v.sum()), 1.0, rel_tol=1e-9):
            raise ValueError(
                f"{name} must be non-negative and sum to 1, got a sum of {v.sum()!r}"
            )
    return float(p @ q)


def beam_search(
    next_chances: Callable[[tuple[int, ...]], Sequence[float] | np.ndarray],
    steps: int,
    width: int,
) -> list[list[tuple[tuple[int, ...], float]]]:
    """Every candidate beam search weighs, round by round: in round r each sequence kept
    in round r - 1 is extended by every token, and the candidates are listed with their
    chances (the product of their tokens' chances), best first. The first ``width`` of a
    round are kept; the answer is the first candidate of the last round.
    ``next_chances(prefix)`` gives the chances of every token after ``prefix``. Width 1
    is greedy decoding."""
    checked_whole("steps", steps, minimum=1)
    checked_whole("width", width, minimum=1)
    kept: list[tuple[tuple[int, ...], float]] = [((), 1.0)]
    rounds = []
    for _ in range(steps):
        candidates = [
            (prefix + (token,), chance * float(p))
            for prefix, chance in kept
            for token, p in enumerate(np.asarray(next_chances(prefix), dtype=float))
        ]
        candidates.sort(
            key=lambda c: -c[1]
        )  # stable: ties keep the order of their prefixes
        rounds.append(candidates)
        kept = candidates[:width]
    return rounds


def top_k_keep(probs: Sequence[float] | np.ndarray, k: int) -> np.ndarray:
    """Indices of the words top-k keeps, most likely first: the ``k`` most likely,
    whatever their chances."""
    probs = np.asarray(probs, dtype=float)
    checked_whole("k", k, minimum=1)
    if k > probs.size:
        raise ValueError(f"k={k} is more than the {probs.size} words there are")
    return np.argsort(-probs, kind="stable")[:k]


def temperature_slope(
    logits: Sequence[float] | np.ndarray, temperature: float = 1.0
) -> np.ndarray:
    """How fast each word's log-chance grows as the chances are cooled, d ln p_i /
    d(1/T) = z_i - sum_j p_j z_j at ``temperature``: positive for every word whose raw
    output is above the chance-weighted mean, so that word gains as T falls."""
    z = np.asarray(logits, dtype=float)
    return z - (softmax(z, temperature) * z).sum()


def speculative_rule(
    target: Sequence[float] | np.ndarray, draft: Sequence[float] | np.ndarray
) -> tuple[float, np.ndarray]:
    """The chance a drafted token is accepted, and the chances of the token the check
    writes, when the draft proposes x with chance q(x), the check keeps it with chance
    min(1, p(x) / q(x)) and otherwise draws from max(0, p - q), renormalised: (the sum
    of min(p, q), the output's chances, which are p's exactly)."""
    p = np.asarray(target, dtype=float)
    q = np.asarray(draft, dtype=float)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError(f"target and draft must be two rows of one length, got "
                         f"{p.shape} and {q.shape}")
    kept = np.minimum(p, q)                 # q(x) min(1, p(x) / q(x))
    accepted = float(kept.sum())
    rest = np.maximum(p - q, 0.0)
    if accepted >= 1.0 or rest.sum() == 0.0:
        return min(accepted, 1.0), kept
    return accepted, kept + (1.0 - accepted) * rest / rest.sum()
