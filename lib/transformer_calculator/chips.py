"""Accelerators given on the command line: the book's example, or three numbers."""

from __future__ import annotations

from transformer_arithmetic import EXAMPLE_ACCELERATOR, Accelerator
from transformer_arithmetic.units import GIB

__all__ = ["ACCELERATOR_RANGES", "parse_accelerator"]

ACCELERATOR_RANGES = ((1.0, 1e30), (1.0, 1e30), (1e-6, 1e12))
"""Accepted ranges of an accelerator's operations a second, bytes a second and memory in
GiB: far beyond any real chip, yet narrow enough that every time and count stays a
finite number."""


def parse_accelerator(text: str) -> Accelerator:
    """``"example"`` for the book's example accelerator, or
    ``"FLOPS,BYTES_PER_S,MEMORY_GIB"`` (operations a second, bytes read a second, memory
    in GiB), e.g. ``"100e12,1e12,24"``."""
    if text.strip().lower() == "example":
        return EXAMPLE_ACCELERATOR
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3:
        raise ValueError(
            "accelerator must be 'example' or three numbers "
            "FLOPS,BYTES_PER_S,MEMORY_GIB, "
            f"got {text!r}"
        )
    names = ("FLOPS", "BYTES_PER_S", "MEMORY_GIB")
    values = []
    for name, part, (low, high) in zip(names, parts, ACCELERATOR_RANGES):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(
                f"accelerator {name} must be a number, got {part!r}"
            ) from None
        if not value > 0 or value == float("inf"):
            raise ValueError(
                f"accelerator {name} must be a positive finite number, got {part!r}"
            )
        if not low <= value <= high:
            raise ValueError(
                f"accelerator {name} must lie between {low:g} and {high:g}, got "
                f"{part!r}"
            )
        values.append(value)
    flops, bytes_per_s, gib = values
    memory_bytes = round(gib * GIB)
    if memory_bytes < 1:
        raise ValueError(f"accelerator MEMORY_GIB is too small, got {parts[2]!r}")
    return Accelerator(
        flops_per_s=flops,
        bytes_per_s=bytes_per_s,
        memory_bytes=memory_bytes,
        name="the given accelerator",
    )
