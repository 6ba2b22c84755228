"""The simulated example: one short sentence and a part-trained model's raw outputs on
it.

Several pages of the book follow one made-up example. A robot-arm sentence,
"the arm lifts the red block", is fed to a small language model that has had
some training but not much. At each of the six positions the model sees the
words so far and gives one raw score (a *logit*) to every word of a
twelve-word vocabulary; softmax turns those scores into chances. There is
also a 6 x 6 table of attention scores (how much each position wants to look
at each other position) before any mask is applied.

No model was trained to produce these numbers: they are SIMULATED, written out
here as plain numbers so a reader can see exactly what goes in. They were chosen
so that the figures the text quotes come out of them (the chance of the right
word, losses, temperatures, top-p cuts, a two-step greedy tree, attention
weights): undo softmax (a logit is the logarithm of a chance plus a shared
constant), fix the entries the text leaves free by a small deterministic search,
round. That derivation is provenance, not what the book teaches; it lives in
``simulated_derivation.py``, and a test checks that it rebuilds these tables.

Only the tables are invented. Everything the book computes from them afterwards
(chances, losses, entropies, top-p sets, attention weights) is real arithmetic on
these numbers, done at build time.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..sampling import softmax as _softmax

__all__ = [
    "VOCAB",
    "SENTENCE",
    "INPUTS",
    "TARGETS",
    "LOGITS",
    "NEXT_LOGITS",
    "SCORES",
    "logits_array",
    "next_logits_array",
    "scores_array",
    "TOY_FEATURES",
    "TOY_KEYS",
    "TOY_QUERY",
    "TOY_SENTENCES",
    "toy_keys",
    "toy_attention",
]

# --------------------------------------------------------------------------
# The example
# --------------------------------------------------------------------------

VOCAB: tuple[str, ...] = (
    "the", "arm", "lifts", "red", "block", "a",
    "blue", "cup", "drops", "moves", "gripper", "table",
)
"""The twelve words the model can predict; every row of logits follows this order."""

SENTENCE: tuple[str, ...] = ("the", "arm", "lifts", "the", "red", "block")
"""The six-word training sentence of the example."""

INPUTS: tuple[str, ...] = ("<start>", "the", "arm", "lifts", "the", "red")
"""What the model reads at positions 1..6: a start marker, then the sentence shifted
right by one."""

TARGETS: tuple[str, ...] = SENTENCE
"""What the model should predict at positions 1..6: the sentence itself."""

# --------------------------------------------------------------------------
# The tables (produced by simulated_derivation.py, then pasted here)
# --------------------------------------------------------------------------

LOGITS: tuple[tuple[float, ...], ...] = (
    # position 1 reads '<start>', 2 'the', 3 'arm', 4 'lifts', 5 'the', 6 'red'
    #  the   arm lifts   red block     a  blue   cup drops moves  grip table
    ( 0.38, 0.50,-1.25, 0.26,-0.43, 1.00, 0.32, 0.14,-1.02, 0.01, 0.63,-0.55),
    (-0.83, 3.20,-1.52,-0.10, 0.78,-0.61,-0.32, 0.37,-1.12,-1.24, 1.29, 0.09),
    ( 0.14,-0.81,-0.14,-0.55,-0.20,-0.02,-0.71,-0.42, 1.03, 1.72, 0.27,-0.30),
    ( 1.97,-1.74, 2.59, 0.74,-2.61, 1.69, 1.37, 0.64, 0.03, 0.04, 0.49,-2.20),
    (-1.04, 0.06,-1.40, 3.06, 1.04,-0.86, 1.67, 0.57,-1.14,-1.26,-0.25,-0.45),
    (-0.42,-0.22,-1.14,-0.67, 4.94,-1.01,-0.83, 1.29,-1.34,-1.23, 0.15, 0.47),
)
"""Raw outputs at positions 1..6 (rows) for each word of VOCAB (columns)."""

NEXT_LOGITS: dict[str, tuple[float, ...]] = {
    #  the   arm lifts   red block     a  blue   cup drops moves  grip table
    "lifts":
    ( 0.94,-0.59,-0.37, 0.33, 0.43, 0.74, 0.10, 0.22,-0.84,-0.72,-0.03,-0.18),
    "the": LOGITS[4],  # after "the" the model has read what it reads at position 5
    "a":
    (-0.86, 0.05,-1.27, 2.87, 1.03,-1.15, 2.17, 0.75,-1.56,-1.40,-0.17,-0.46),
}
"""Raw outputs one step after position 4, keyed by the word chosen at position 4."""

SCORES: tuple[tuple[float, ...], ...] = (
    #   col 1   col 2   col 3   col 4   col 5   col 6
    ( -1.39,  -0.45,   1.60,  -0.28,  -1.47,   0.95),  # row 1
    (  1.17,   0.04,  -1.22,   1.58,  -0.89,  -0.40),  # row 2
    ( 0.370, -0.083,  0.239,  0.366, -0.500,  0.490),  # row 3
    (  0.52,  -0.76,   0.97,  -1.16,   1.32,  -1.44),  # row 4
    ( -0.15,   1.09,  -1.58,   1.41,  -0.65,  -0.38),  # row 5
    ( -0.42,   0.05,  -0.26,  -0.10,  -0.31,   1.06),  # row 6
)
"""Raw attention scores before any mask: row i is the asking position, column j the
position looked at."""


def logits_array() -> np.ndarray:
    """LOGITS as a 6 x 12 float64 array."""
    return np.array(LOGITS, dtype=np.float64)


def next_logits_array(first_word: str) -> np.ndarray:
    """NEXT_LOGITS[first_word] as a length-12 float64 array."""
    return np.array(NEXT_LOGITS[first_word], dtype=np.float64)


def scores_array() -> np.ndarray:
    """SCORES as a 6 x 6 float64 array."""
    return np.array(SCORES, dtype=np.float64)


# --------------------------------------------------------------------------
# A second, smaller toy: attention that finds a distant word
# --------------------------------------------------------------------------
#
# Two sentences end in "it", and "it" stands for a thing mentioned several words
# earlier. Every word gets a key written by hand from five yes-or-no features, and
# "it" asks with a query that looks for a thing that can be held (and, a little, for
# a colour). Nothing here is learned and nothing encodes position: the toy shows
# only where attention weights come from, the content of the words.

TOY_FEATURES: tuple[str, ...] = (
    "a thing to hold", "a doer", "an action", "a colour", "a small word")
"""What each entry of a toy key or query stands for."""

TOY_KEYS: dict[str, str] = {
    "block": "a thing to hold", "cup": "a thing to hold",
    "arm": "a doer",
    "lifts": "an action", "drops": "an action", "turns": "an action",
    "waits": "an action",
    "red": "a colour", "blue": "a colour",
    "<start>": "a small word", "the": "a small word", "a": "a small word",
    "then": "a small word",
    "and": "a small word", "as": "a small word", "it": "a small word",
}
"""The one feature each toy word has: its key is 1 there and 0 elsewhere."""

TOY_QUERY: tuple[float, ...] = (7.0, 0.0, 0.0, 2.0, 0.0)
"""What "it" looks for, feature by feature: mostly a thing to hold, a little a
colour."""

TOY_SENTENCES: tuple[tuple[str, ...], ...] = (
    ("<start>", "the", "arm", "lifts", "the", "red", "block", "then", "turns", "and",
     "drops", "it"),
    ("<start>", "a", "blue", "cup", "waits", "as", "the", "arm", "turns", "and",
     "lifts", "it"),
)
"""Two sentences whose last word, "it", stands for a thing further back."""


def toy_keys(words: Sequence[str]) -> np.ndarray:
    """The hand-written keys of ``words``, one row per word, one column per feature."""
    unknown = [w for w in words if w not in TOY_KEYS]
    if unknown:
        raise ValueError(f"words without a toy key: {unknown}; "
                         f"known: {sorted(TOY_KEYS)}")
    rows = [[1.0 if TOY_KEYS[w] == f else 0.0 for f in TOY_FEATURES] for w in words]
    return np.array(rows)


def toy_attention(words: Sequence[str]) -> np.ndarray:
    """Attention weights of the last word over every position (itself included), summing
    to 1: softmax of each key times ``TOY_QUERY``, divided by the square root of the key
    length."""
    if not words:
        raise ValueError("words must hold at least one word")
    keys = toy_keys(words)
    return _softmax(keys @ np.array(TOY_QUERY) / math.sqrt(len(TOY_FEATURES)))
