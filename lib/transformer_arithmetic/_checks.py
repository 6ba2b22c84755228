"""Argument checks shared by the modules: each raises ValueError naming the bad value."""
from __future__ import annotations

import math


def count(name: str, value: object, *, minimum: int = 0) -> int:
    """Return ``value`` if it is a whole number >= ``minimum``, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int,)) and not (
        hasattr(value, "__index__")
    ):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    value = int(value)  # numpy integers arrive here too
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def fraction(name: str, value: object, *, low_open: bool = True, high_closed: bool = True) -> float:
    """Return ``value`` if it lies in (0, 1] (the default ends), else raise ValueError."""
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


def positive(name: str, value: object) -> float:
    """Return ``value`` if it is a finite number > 0, else raise ValueError."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v
