"""Argument checks shared by the modules: each returns the value it checked, or raises a
ValueError naming the bad argument. Call them before a formula, never inside one."""

from __future__ import annotations

import math


def checked_whole(name: str, value: object, *, minimum: int = 0) -> int:
    """``value`` as an int if it is a whole number of at least ``minimum``."""
    if isinstance(value, bool) or not (
        isinstance(value, int) or hasattr(value, "__index__")
    ):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    number = int(value)  # numpy integers arrive here too
    if number < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {number}")
    return number


def checked_fraction(
    name: str, value: object, *, low_open: bool = True, high_closed: bool = True
) -> float:
    """``value`` as a float if it lies in (0, 1] (the default ends)."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    low_ok = v > 0 if low_open else v >= 0
    high_ok = v <= 1 if high_closed else v < 1
    if not (low_ok and high_ok) or math.isnan(v):
        lo = "(0" if low_open else "[0"
        hi = "1]" if high_closed else "1)"
        raise ValueError(f"{name} must lie in {lo}, {hi}, got {value!r}")
    return v


def checked_positive(name: str, value: object) -> float:
    """``value`` as a float if it is a finite number above 0."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v
