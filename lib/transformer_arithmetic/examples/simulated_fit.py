"""The small, deterministic search that fits the simulated example's tables to the
figures the text quotes (used by ``simulated_derivation``; provenance, not what the book
teaches)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..sampling import top_p_keep
from .simulated import VOCAB

__all__ = [
    "Figure", "FAIL", "top_p_count", "figure_misses", "yes", "no_ties", "polish",
    "to_units", "as_tuple", "quoted_chances", "row_from_chances", "least_squares",
]

Figure = tuple[float, float, int]
"""(value computed from the table, value quoted in the text, decimals quoted)."""

FAIL = 1e3  # miss reported for a yes/no condition that does not hold


def top_p_count(p: np.ndarray, cut: float = 0.9) -> int:
    """How many of the most likely words top-p keeps at ``cut``."""
    return len(top_p_keep(p, cut))


def figure_misses(figures: Sequence[Figure]) -> np.ndarray:
    """Each figure's distance from its quoted value, in units of half its last digit.

    A value below 1 means the computed number rounds to the quoted one."""
    return np.array([abs(v - t) / (0.5 * 10.0**-d) for v, t, d in figures])


def yes(condition: bool) -> Figure:
    """A yes/no condition written as a figure: a miss of 0 if it holds, a huge miss if
    not."""
    return (0.0 if condition else FAIL, 0.0, 0)


def no_ties(row: np.ndarray) -> Figure:
    """Yes/no: all entries differ, so every 'most likely' or 'least likely' word is
    clear."""
    return yes(len(set(row.tolist())) == len(row))


def polish(
    units: np.ndarray,
    free: Sequence[int],
    figures: Callable[[np.ndarray], Sequence[Figure]],
    per_unit: int,
    good_enough: float = 0.9,
) -> np.ndarray:
    """Move entries one grid step at a time until every figure rounds right.

    ``units`` holds whole grid steps (the table is ``units / per_unit``). A move
    shifts one entry of ``free``, or two of them, by one step up or down. Each
    round takes the move that best lowers the worst miss (then the sum of squared
    misses). Stops once the worst miss is below ``good_enough`` (a little room to
    spare) or no move helps, and fails loudly if a figure is still off."""
    units = units.copy()

    def badness(u: np.ndarray) -> tuple[float, float]:
        m = figure_misses(figures(u / per_unit))
        if not np.all(np.isfinite(m)):
            return math.inf, math.inf
        return float(m.max()), float((m**2).sum())

    free = list(free)
    moves: list[tuple[tuple[int, ...], tuple[int, ...]]] = [
        ((i,), (s,)) for i in free for s in (1, -1)
    ]
    moves += [
        ((i, j), (s, t))
        for i, j in itertools.combinations(free, 2)
        for s in (1, -1)
        for t in (1, -1)
    ]
    current = badness(units)
    while current[0] >= good_enough:
        best, best_units = current, None
        for move in moves:
            trial = units.copy()
            trial[list(move[0])] += move[1]
            b = badness(trial)
            if b < best:
                best, best_units = b, trial
        if best_units is None:
            break
        current, units = best, best_units
    if current[0] >= 1.0:
        raise RuntimeError(
            f"could not fit the quoted figures (worst miss {current[0]:.3f})"
        )
    return units


def to_units(x: np.ndarray, per_unit: int) -> np.ndarray:
    """Round to the nearest grid step (1 / per_unit); returns whole numbers of steps."""
    return np.rint(np.asarray(x) * per_unit).astype(np.int64)


def as_tuple(units: np.ndarray, per_unit: int) -> tuple[float, ...]:
    """Grid steps back to plain floats (k / 100 is the same float as the literal, e.g.
    2.59)."""
    return tuple(int(k) / per_unit for k in units)


def quoted_chances(
    pinned: Mapping[str, float], others: Mapping[str, float]
) -> np.ndarray:
    """A row of chances in VOCAB order: ``pinned`` words get exactly their value and the
    remaining words share what is left in proportion to ``others``."""
    assert set(pinned) | set(others) == set(VOCAB) and not set(pinned) & set(others)
    rest = 1.0 - sum(pinned.values())
    total = sum(others.values())
    return np.array(
        [pinned[w] if w in pinned else rest * others[w] / total for w in VOCAB]
    )


def row_from_chances(p: np.ndarray) -> np.ndarray:
    """Undo softmax: logits = ln(p) minus their mean, so each row's logits average 0."""
    z = np.log(p)
    return z - z.mean()


def least_squares(
    residuals: Callable[[np.ndarray], np.ndarray], x0: Sequence[float]
) -> np.ndarray:
    """Levenberg-Marquardt: Gauss-Newton steps, shortened whenever a step would not
    help."""
    x = np.array(x0, dtype=np.float64)
    cost = float((residuals(x) ** 2).sum())
    h, damping = 1e-6, 1.0
    for _ in range(200):
        r = residuals(x)
        jac = np.empty((len(r), len(x)))
        for k in range(len(x)):
            dx = np.zeros_like(x)
            dx[k] = h
            jac[:, k] = (residuals(x + dx) - residuals(x - dx)) / (2 * h)
        jtj = jac.T @ jac
        step = np.linalg.solve(
            jtj + damping * np.trace(jtj) / len(x) * np.eye(len(x)), -jac.T @ r
        )
        new_cost = float((residuals(x + step) ** 2).sum())
        if new_cost < cost:
            x, cost, damping = x + step, new_cost, damping / 3
            if np.abs(step).max() < 1e-9:
                break
        else:
            damping *= 4
    return x


