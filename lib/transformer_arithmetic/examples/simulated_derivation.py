"""How the simulated example's tables were made (provenance; the book does not run
this).

    # prints the three tables
    python -m transformer_arithmetic.examples.simulated_derivation

``tests/test_simulated.py`` checks that these functions give back the stored tables
exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..sampling import entropy as _entropy
from ..sampling import softmax as _softmax
from .simulated import LOGITS, TARGETS, VOCAB
from .simulated_fit import (Figure, top_p_count, yes, no_ties, polish, to_units,
                            as_tuple, quoted_chances, row_from_chances, least_squares)

# --------------------------------------------------------------------------
# How the tables were made
# --------------------------------------------------------------------------
#
# Working idea. Softmax only cares about differences between logits, so a
# row of chances p fixes a row of logits up to one shared constant:
# logit = ln(p) + c. We write down the chances we want (the quoted ones, plus
# sensible made-up chances for the words the text never mentions), take
# logarithms, pick the constant (each row's logits average 0), and round to
# the table's grid (0.01 for logits). Rounding nudges every chance a little,
# so a short search then moves one or two entries by one grid step at a time
# until every quoted figure rounds to the quoted digits again. The search is
# plain hill climbing: it always takes the best move, so it gives the same
# answer on every run.
#
# Position 4 is different: the text quotes seven of its logits directly, and
# the others are pinned only indirectly (through temperatures, entropies and
# a top-p running total), so those are first fitted by least squares and
# then rounded and polished in the same way.

_W = {w: i for i, w in enumerate(VOCAB)}
_CENT = 100  # logits are kept to 0.01, i.e. whole hundredths

# Position 4 (reads "lifts", should say "the"). The text quotes seven of its logits.
# "table" gets a made-up low value; the four words left are fitted to the quoted
# temperature, entropy and top-p figures.
_P4_QUOTED = {
    "lifts": 2.59,
    "the": 1.97,
    "a": 1.69,
    "blue": 1.37,
    "red": 0.74,
    "cup": 0.64,
    "block": -2.61,
}
_P4_MADE_UP = {"table": -2.2}
_P4_FREE = ("gripper", "arm", "drops", "moves")
_P4_START = (0.5, -1.0, -0.5, 0.0)  # starting guess for the fit
_P4_LOW, _P4_HIGH = -2.61, 0.64  # free logits stay strictly between "block" and "cup"


def _p4_figures(row: np.ndarray) -> list[Figure]:
    """Every figure the text quotes about position 4 (the first nine are numbers, the
    rest yes/no)."""
    p, cold, hot = _softmax(row), _softmax(row, 0.5), _softmax(row, 1.5)
    ranked = np.sort(p)[::-1]
    free = np.array([row[_W[w]] for w in _P4_FREE])
    return [
        (p[_W["lifts"]], 0.352, 3),
        (p[_W["the"]], 0.189, 3),
        (-math.log(p[_W["the"]]), 1.67, 2),
        (ranked[:7].sum(), 0.936, 3),
        (cold.max(), 0.620, 3),
        (hot.max(), 0.253, 3),
        (_entropy(cold), 1.20, 2),
        (_entropy(hot), 2.14, 2),
        (hot.min(), 0.0079, 4),
        yes(ranked[:6].sum() < 0.9 <= ranked[:7].sum()),
        # the quoted six largest and the quoted smallest keep their places
        yes(bool(np.all((free > _P4_LOW) & (free < _P4_HIGH)))),
        no_ties(row),
    ]


def _p4_row(free_values: Sequence[float]) -> np.ndarray:
    """Position 4's logits from the quoted and made-up ones plus values for the free
    words."""
    row = np.zeros(len(VOCAB))
    for w, v in {
        **_P4_QUOTED,
        **_P4_MADE_UP,
        **dict(zip(_P4_FREE, free_values)),
    }.items():
        row[_W[w]] = v
    return row


def _derive_p4() -> np.ndarray:
    """Position 4 in hundredths: fit the four free logits, round, then polish."""
    width = _P4_HIGH - _P4_LOW

    def free_values(y: np.ndarray) -> np.ndarray:
        # y can be any real number; the S-curve keeps each logit inside (_P4_LOW,
        # _P4_HIGH).
        return _P4_LOW + width / (1 + np.exp(-y))

    def residuals(y: np.ndarray) -> np.ndarray:
        misses = [
            (v - t) / (0.5 * 10.0**-d)
            for v, t, d in _p4_figures(_p4_row(free_values(y)))[:9]
        ]
        # The fifth power makes the fit care mostly about the worst miss, which is
        # what "every figure rounds to its quoted digits" asks for.
        return np.array(misses) ** 5

    start = np.array(_P4_START)
    y = least_squares(residuals, -np.log(width / (start - _P4_LOW) - 1))
    units = to_units(_p4_row(free_values(y)), _CENT)
    return polish(units, [_W[w] for w in _P4_FREE], _p4_figures, _CENT)


# The other five positions: the quoted chances are pinned, the words the text never
# mentions get made-up chances that suit a part-trained model.
_P1 = (  # reads "<start>", should say "the"; the model prefers "a"
    {"the": 0.101, "a": 0.189},
    {
        "gripper": 13,
        "arm": 11.5,
        "blue": 9.5,
        "red": 9,
        "cup": 8,
        "moves": 7,
        "block": 4.5,
        "table": 4,
        "drops": 2.5,
        "lifts": 2,
    },
)
_P2 = (  # reads "the", should say "arm": a correct, fairly sure guess
    {"arm": 0.675},
    {
        "gripper": 10,
        "block": 6,
        "cup": 4,
        "table": 3,
        "red": 2.5,
        "blue": 2,
        "a": 1.5,
        "the": 1.2,
        "drops": 0.9,
        "moves": 0.8,
        "lifts": 0.6,
    },
)
_P3 = (  # reads "arm", should say "lifts"; the model prefers "moves"
    {"lifts": 0.053},
    {
        "moves": 34,
        "drops": 17,
        "gripper": 8,
        "the": 7,
        "a": 6,
        "block": 5,
        "table": 4.5,
        "cup": 4,
        "red": 3.5,
        "blue": 3,
        "arm": 2.7,
    },
)
_P5_OTHERS = {  # reads "the", should say "red": correct
    "blue": 15,
    "block": 8,
    "cup": 5,
    "arm": 3,
    "gripper": 2.2,
    "table": 1.8,
    "a": 1.2,
    "the": 1,
    "drops": 0.9,
    "moves": 0.8,
    "lifts": 0.7,
}
_P6 = (  # reads "red", should say "block": correct and very sure
    {"block": 0.933},
    {
        "cup": 2.5,
        "table": 1.1,
        "gripper": 0.8,
        "arm": 0.55,
        "the": 0.45,
        "red": 0.35,
        "blue": 0.3,
        "a": 0.25,
        "lifts": 0.22,
        "moves": 0.2,
        "drops": 0.18,
    },
)

# The greedy tree: first word chosen at position 4 -> (joint chance quoted, best second
# word).
_TREE_TARGETS = {"lifts": (0.0647, "the"), "the": (0.1141, "red")}


def _row_figures(
    position: int, p4: np.ndarray
) -> Callable[[np.ndarray], list[Figure]]:
    """The figures quoted for one position (1, 2, 3, 5 or 6), as a function of that
    row."""

    def figures(row: np.ndarray) -> list[Figure]:
        p = _softmax(row)
        best = VOCAB[int(np.argmax(p))]
        if position == 1:
            quoted = [
                (p[_W["the"]], 0.101, 3),
                (p.max(), 0.189, 3),
                yes(best == "a"),
                yes(top_p_count(p) == 9),
            ]
        elif position == 2:
            quoted = [yes(best == "arm")]
        elif position == 3:
            quoted = [
                (p[_W["lifts"]], 0.053, 3),
                (-math.log(p[_W["lifts"]]), 2.94, 2),
                yes(best == "moves"),
            ]
        elif position == 5:  # the tree's path "the" -> "red" runs through this very row
            joint = _softmax(p4)[_W["the"]] * p[_W["red"]]
            quoted = [(joint, _TREE_TARGETS["the"][0], 4), yes(best == "red")]
        else:
            quoted = [
                (p[_W["block"]], 0.933, 3),
                (-math.log(p[_W["block"]]), 0.07, 2),
                yes(top_p_count(p) == 1),
            ]
        return [*quoted, no_ties(row)]

    return figures


def derive_logits() -> tuple[tuple[float, ...], ...]:
    """Rebuild LOGITS (already rounded to 0.01) from the quoted figures."""
    p4_units = _derive_p4()
    p4 = p4_units / _CENT
    # Position 5's chance of "red" is fixed by the tree: 0.1141 / chance of "the" at
    # position 4.
    p5 = ({"red": _TREE_TARGETS["the"][0] / _softmax(p4)[_W["the"]]}, _P5_OTHERS)
    rows: list[np.ndarray] = []
    for position, spec in ((1, _P1), (2, _P2), (3, _P3), (4, None), (5, p5), (6, _P6)):
        if spec is None:
            rows.append(p4_units)
            continue
        start = to_units(row_from_chances(quoted_chances(*spec)), _CENT)
        rows.append(
            polish(start, range(len(VOCAB)), _row_figures(position, p4), _CENT)
        )
    table = np.array(rows) / _CENT
    # Whole-sentence figures: they are not searched for, only checked.
    chances = np.array([_softmax(r) for r in table])
    losses = -np.log(chances[np.arange(6), [_W[w] for w in TARGETS]])
    right = [VOCAB[int(i)] == t for i, t in zip(chances.argmax(1), TARGETS)]
    if round(float(losses.mean()), 2) != 1.31 or right != [
        False,
        True,
        False,
        False,
        True,
        True,
    ]:
        raise RuntimeError(
            "the sentence-wide figures (mean loss 1.31, three right "
            "guesses) do not hold"
        )
    return tuple(as_tuple(r, _CENT) for r in rows)


# After "the arm lifts lifts" the model is lost: a flat spread, "the" only just ahead.
_NEXT_AFTER_LIFTS = {
    "a": 15,
    "block": 11,
    "red": 10,
    "cup": 9,
    "blue": 8,
    "gripper": 7,
    "table": 6,
    "lifts": 5,
    "arm": 4,
    "moves": 3.5,
    "drops": 3.1,
}
# After "the arm lifts a": "red" is likely, but less so than after "the".
_NEXT_AFTER_A = (
    {"red": 0.50},
    {
        "blue": 25,
        "block": 8,
        "cup": 6,
        "arm": 3,
        "gripper": 2.4,
        "table": 1.8,
        "the": 1.2,
        "a": 0.9,
        "lifts": 0.8,
        "moves": 0.7,
        "drops": 0.6,
    },
)


def derive_next_logits() -> dict[str, tuple[float, ...]]:
    """Rebuild NEXT_LOGITS (already rounded to 0.01) from the quoted tree figures and
    LOGITS.

    After "the" the model has read exactly "<start> the arm lifts the", the same as at
    position 5, so that row is copied from LOGITS instead of being invented twice."""
    p4 = np.array(LOGITS[3])
    joint, second = _TREE_TARGETS["lifts"]
    q = joint / _softmax(p4)[_W["lifts"]]  # chance the best second word needs

    def after_lifts(row: np.ndarray) -> list[Figure]:
        p = _softmax(row)
        return [
            (_softmax(p4)[_W["lifts"]] * p.max(), joint, 4),
            yes(VOCAB[int(np.argmax(p))] == second),
            no_ties(row),
        ]

    start = to_units(
        row_from_chances(quoted_chances({second: q}, _NEXT_AFTER_LIFTS)), _CENT
    )
    lifts_row = polish(start, range(len(VOCAB)), after_lifts, _CENT)
    start = to_units(row_from_chances(quoted_chances(*_NEXT_AFTER_A)), _CENT)
    a_row = polish(start, range(len(VOCAB)), lambda row: [no_ties(row)], _CENT)
    return {
        "lifts": as_tuple(lifts_row, _CENT),
        "the": LOGITS[4],
        "a": as_tuple(a_row, _CENT),
    }


# Attention scores. Row 3 is kept to 0.001, all other rows to 0.01.
# the text leaves columns 5 and 6 of row 3 free apart from their total
_ROW3_FREE_SCORE5 = -0.5
# quoted: 0.094 first, 0.412 last
_ROW6_WEIGHTS = (0.094, 0.15, 0.11, 0.13, 0.104, 0.412)


def _row3_figures(row: np.ndarray) -> list[Figure]:
    """Row 3's quoted attention weights under a proper mask, a zero 'mask', and no
    mask."""
    causal = _softmax(row[:3])
    zeroed = _softmax(np.concatenate([row[:3], np.zeros(3)]))
    unmasked = _softmax(row)
    return [
        (causal[0], 0.398, 3),
        (causal[1], 0.253, 3),
        (causal[2], 0.349, 3),
        (zeroed[3:].sum(), 0.452, 3),
        (unmasked[3], 0.197, 3),
        (unmasked[3:].sum(), 0.503, 3),
    ]


def _row6_figures(row: np.ndarray) -> list[Figure]:
    """Row 6's quoted weights: smallest on column 1, largest on column 6."""
    w = _softmax(row)
    return [
        (w[0], 0.094, 3),
        (w[5], 0.412, 3),
        yes(bool(np.all(w[1:5] > w[0]) and np.all(w[1:5] < w[5]))),
    ]


def derive_scores() -> tuple[tuple[float, ...], ...]:
    """Rebuild SCORES (already rounded: row 3 to 0.001, the rest to 0.01) from the
    quoted weights."""
    # Row 3 in closed form. Let E be the sum of exp(score) over columns 1..3.
    # With the blocked columns set to 0 they weigh 3 / (E + 3) = 0.452, so E = 3 * 0.548
    # / 0.452.
    e_visible = 3 * (1 - 0.452) / 0.452
    s = np.log(e_visible * np.array([0.398, 0.253, 0.349]))  # exp(s_j) = weight_j * E
    # Unmasked, columns 4..6 take 0.503 of everything: their exp-sum F = E * 0.503 /
    # 0.497.
    e_blocked = e_visible * 0.503 / 0.497
    # column 4 alone takes 0.197 of everything
    s4 = math.log(0.197 * (e_visible + e_blocked))
    s6 = math.log(e_blocked - math.exp(s4) - math.exp(_ROW3_FREE_SCORE5))
    row3 = np.array([*s, s4, _ROW3_FREE_SCORE5, s6])
    row3_units = polish(to_units(row3, 1000), range(6), _row3_figures, 1000)
    # Row 6 from its chosen weights (logs, centred on 0).
    row6_units = polish(
        to_units(row_from_chances(np.array(_ROW6_WEIGHTS)), 100),
        range(6),
        _row6_figures,
        100,
    )
    # Rows 1, 2, 4, 5: filler from a fixed wave pattern (mixed signs, size at most 1.6),
    # so that no hidden random draws are involved.
    rows: list[tuple[float, ...]] = []
    for i in range(1, 7):
        if i == 3:
            rows.append(as_tuple(row3_units, 1000))
        elif i == 6:
            rows.append(as_tuple(row6_units, 100))
        else:
            filler = [
                1.6 * math.sin(2.4 * i + 1.3 * j + 0.5 * i * j) for j in range(1, 7)
            ]
            rows.append(as_tuple(to_units(np.array(filler), 100), 100))
    return tuple(rows)


if __name__ == "__main__":
    import pprint

    pprint.pprint(
        {
            "LOGITS": derive_logits(),
            "NEXT_LOGITS": derive_next_logits(),
            "SCORES": derive_scores(),
        },
        width=120,
    )
