"""Searches over whole numbers for a property that holds from some point on, or up to
it.

Several answers in the book are the first length, batch or prompt at which something
becomes true (the pair work passes the weight work, the arithmetic starts to bind) or
the last one at which something still holds (a cache still fits). Each is found the same
way: double until the property flips, then halve the gap.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["first_true", "last_true"]


def first_true(
    holds: Callable[[int], bool], start: int = 1, limit: int = 2**62
) -> int | None:
    """The smallest n >= ``start`` with ``holds(n)``, for a ``holds`` that stays true
    once it is; None if it is still false at ``limit``."""
    if holds(start):
        return start
    low, high = start, max(start, 1) * 2  # holds(low) is false
    while not holds(high):
        if high >= limit:
            return None
        low, high = high, min(high * 2, limit)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if holds(mid) else (mid, high)
    return high


def last_true(holds: Callable[[int], bool], upper: int) -> int:
    """The largest n in [0, ``upper``] with ``holds(n)``, for a ``holds`` that is true
    up to some n and false after it (``holds(0)`` is taken as true)."""
    low, high = 0, max(upper, 0)
    if holds(high):
        return high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if holds(mid) else (low, mid)
    return low
