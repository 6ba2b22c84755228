"""Next-token prediction: inputs and targets, the loss, and the counts that follow from
it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .checks import checked_whole, checked_fraction
from .sampling import softmax

__all__ = [
    "shift",
    "token_losses",
    "label_signals",
    "passes_to_score",
    "whole_answer_accuracy",
    "passes_without_cache",
    "perplexity",
    "nats_to_bits",
]


def shift(tokens: Sequence[str], start: str = "<start>") -> tuple[list[str], list[str]]:
    """The row the model is given (a start marker, then all but the last token) and the
    row it must produce (every token): the same text moved along by one place."""
    tokens = list(tokens)
    return [start] + tokens[:-1], tokens


def token_losses(logits: np.ndarray, targets: Sequence[int]) -> np.ndarray:
    """Loss at each position in nats: minus the natural log of the chance given to the
    target."""
    probs = softmax(logits)
    targets = np.asarray(targets)
    if probs.shape[0] != len(targets):
        raise ValueError(f"{probs.shape[0]} rows of logits but {len(targets)} targets")
    return -np.log(probs[np.arange(len(targets)), targets])


def label_signals(tokens: int, tokens_per_label: int = 20) -> int:
    """Training signals from hand-written labels: one per ``tokens_per_label`` tokens of
    text."""
    tokens = checked_whole("tokens", tokens)
    tokens_per_label = checked_whole("tokens_per_label", tokens_per_label, minimum=1)
    return tokens // tokens_per_label


def passes_to_score(tokens: int, teacher_forcing: bool = True) -> int:
    """Forward passes needed to score a sequence: one with teacher forcing, one per
    token without."""
    return 1 if teacher_forcing else checked_whole("tokens", tokens, minimum=1)


def whole_answer_accuracy(per_token: float, length: int) -> float:
    """Chance that every one of ``length`` tokens is right when each is right with
    ``per_token``."""
    per_token = checked_fraction("per_token", per_token)
    length = checked_whole("length", length)
    return per_token**length


def passes_without_cache(new_tokens: int, prompt: int = 0) -> int:
    """Positions pushed through the stack to write ``new_tokens`` when every step
    re-reads the row."""
    n, p = checked_whole("new_tokens", new_tokens), checked_whole("prompt", prompt)
    return sum(p + k for k in range(1, n + 1))


def perplexity(losses: Sequence[float] | np.ndarray) -> float:
    """The exponential of the mean loss (losses in nats): how many equally likely tokens
    the model is, on average, as unsure as choosing among (a count, 1 or more)."""
    values = np.asarray(losses, dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError(
            "losses must be one or more finite numbers of nats, none negative, got "
            f"{losses!r}"
        )
    return float(np.exp(values.mean()))


def nats_to_bits(nats: float) -> float:
    """A quantity of information in nats (natural logarithm) expressed in bits (base
    two)."""
    return float(nats) / math.log(2)
