"""What the command line's flags take: whole numbers, lists of them, fractions and names
from a table, each refused in one line naming what it must be (argparse prefixes the
flag)."""

from __future__ import annotations

import argparse

__all__ = [
    "MAX_LIST", "MAX_TOKENS", "choice", "fraction", "typed", "whole", "whole_list",
]

MAX_LIST = 32
"""Most values one list flag (``--context``, ``--batch``) takes."""

MAX_TOKENS = 10**12
"""Largest length, batch or token count a flag takes: far beyond any model, small
enough that every byte count and time stays a finite number."""


def typed(parse):
    """``parse`` as an argparse type: its ValueError becomes argparse's one-line
    error."""

    def wrapped(text: str):
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    wrapped.__name__ = parse.__name__
    return wrapped


def whole(text: str, low: int = 1, high: int = MAX_TOKENS) -> int:
    """A whole number from ``low`` to ``high``."""
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"must be a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise ValueError(f"must lie between {low:,} and {high:,}, got {text!r}")
    return value


def whole_list(text: str) -> tuple[int, ...]:
    """One whole number or a comma list of them (at most ``MAX_LIST``), in order, each
    once."""
    parts = [p for p in text.split(",")]
    if len(parts) > MAX_LIST:
        raise ValueError(f"takes at most {MAX_LIST} values, got {len(parts)}")
    return tuple(dict.fromkeys(whole(p) for p in parts))


def fraction(text: str) -> float:
    """A fraction in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {text!r}") from None
    if not 0 < value <= 1:
        raise ValueError(f"must lie in (0, 1], got {text!r}")
    return value


def choice(table: dict):
    """A parser of one key of ``table``, in any case."""

    def parse(text: str) -> str:
        key = text.strip().lower()
        if key not in table:
            raise ValueError(f"must be one of {', '.join(table)}, got {text!r}")
        return key

    return parse
