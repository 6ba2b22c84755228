"""An estimate with its regime's interval, never past the floor."""

from __future__ import annotations

from .fractions import Fractions
from .serving import Estimate

__all__ = ["REGIME_NAMES", "estimate_with_interval"]

REGIME_NAMES = {"tpot_ms": "time between tokens", "ttft_ms": "time to the first token",
                "tokens_per_s_per_chip": "training tokens a second a chip"}
"""Each estimated quantity's regime name (an interval's regime is this and the
engine)."""


def estimate_with_interval(quantity: str, engine: str, floor: float, value: float,
                           fr: Fractions, unit: str, bound: str) -> Estimate:
    """The ``Estimate`` of ``quantity`` with its regime's interval, none of it past
    the floor (a time at least the floor, a rate at most it)."""
    regime = f"{REGIME_NAMES[quantity]}, {engine}"
    iv = fr.interval(regime)
    side = max if bound == "least" else min
    value = side(value, floor)
    return Estimate(quantity, unit, bound, floor, value, side(value * iv.low, floor),
                    side(value * iv.high, floor), iv.share, iv.runs, regime)
