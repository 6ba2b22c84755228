"""Turning raw outputs (logits) into chances, and chances into a chosen token."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ._checks import fraction, positive

__all__ = ["softmax", "entropy", "top_p_keep", "top_p_filter", "two_step_paths"]


def softmax(logits: Sequence[float] | np.ndarray, temperature: float = 1.0, axis: int = -1) -> np.ndarray:
    """Chances (summing to 1 along ``axis``) from raw outputs divided by ``temperature``.

    Minus-infinity entries get a chance of exactly 0."""
    t = positive("temperature", temperature)
    z = np.asarray(logits, dtype=float) / t
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def entropy(probs: Sequence[float] | np.ndarray) -> float:
    """Spread of a set of chances in nats: 0 when one word is certain, ln(n) when all n are equal."""
    p = np.asarray(probs, dtype=float)
    if np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, rel_tol=1e-9):
        raise ValueError(f"chances must be non-negative and sum to 1, got a sum of {p.sum()!r}")
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def top_p_keep(probs: Sequence[float] | np.ndarray, top_p: float) -> np.ndarray:
    """Indices of the words top-p keeps, most likely first: the fewest whose chances reach ``top_p``."""
    p = fraction("top_p", top_p)
    probs = np.asarray(probs, dtype=float)
    order = np.argsort(-probs, kind="stable")
    running = np.cumsum(probs[order])
    k = int(np.searchsorted(running, p - 1e-12)) + 1  # tolerate round-off at p = 1
    return order[: min(k, len(order))]


def top_p_filter(probs: Sequence[float] | np.ndarray, top_p: float) -> np.ndarray:
    """The chances after the top-p cut: kept words share the whole chance, the rest get 0."""
    probs = np.asarray(probs, dtype=float)
    kept = top_p_keep(probs, top_p)
    out = np.zeros_like(probs)
    out[kept] = probs[kept] / probs[kept].sum()
    return out


def two_step_paths(
    first: Sequence[float] | np.ndarray, second: Mapping[int, Sequence[float] | np.ndarray]
) -> list[tuple[int, int, float]]:
    """Every two-word path (first word, second word, joint chance) for the first words in
    ``second``, best path first. The joint chance is the product of the two chances."""
    first = np.asarray(first, dtype=float)
    paths = [
        (int(a), int(b), float(first[a] * pb))
        for a, nxt in second.items()
        for b, pb in enumerate(np.asarray(nxt, dtype=float))
    ]
    return sorted(paths, key=lambda path: -path[2])
