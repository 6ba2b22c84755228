"""Arithmetic intensity: operations done per byte read, and the roofline it meets.

A step whose intensity is below the machine's ridge (its operations a second over its
bytes a second) waits on reading; above it, on arithmetic.
"""

from __future__ import annotations

from .checks import checked_whole
from .memory import kv_cache_bytes, weight_bytes
from .search import first_true
from .shapes import Accelerator, ModelShape
from .timing import arithmetic_time, decode_bytes, prefill_limits, reading_time
from .work import decode_flops, decode_pair_flops, prefill_flops

__all__ = [
    "ridge_intensity",
    "decode_intensity",
    "prefill_intensity",
    "attainable_flops",
    "arithmetic_bound_batch",
    "arithmetic_bound_prompt",
    "cache_intensity",
]


def ridge_intensity(acc: Accelerator) -> float:
    """Operations per byte at which a step's arithmetic and its reading take equal time
    on ``acc``."""
    return acc.flops_per_s / acc.bytes_per_s


def decode_intensity(m: ModelShape, context: int, batch: int = 1) -> float:
    """Operations per byte read of one decode step for ``batch`` conversations of
    ``context`` tokens."""
    batch = checked_whole("batch", batch, minimum=1)
    return batch * decode_flops(m, context) / decode_bytes(m, context, batch)


def prefill_intensity(m: ModelShape, tokens: int, all_logits: bool = True) -> float:
    """Operations per byte read of the one pass that reads a prompt of ``tokens`` (at
    least 1; ``all_logits`` as in ``work.prefill_flops``)."""
    tokens = checked_whole("tokens", tokens, minimum=1)
    flops = prefill_flops(m, tokens, all_logits)
    return flops / (weight_bytes(m) + kv_cache_bytes(m, tokens))


def attainable_flops(acc: Accelerator, intensity: float) -> float:
    """Operations a second a step of ``intensity`` operations per byte gets from
    ``acc``: the roofline, min(peak operations a second, bytes a second x intensity)."""
    if not intensity > 0:
        raise ValueError(f"intensity must be positive, got {intensity!r}")
    return min(acc.flops_per_s, acc.bytes_per_s * intensity)


def arithmetic_bound_batch(m: ModelShape, acc: Accelerator, context: int) -> int | None:
    """Smallest batch of conversations of ``context`` tokens whose decode step waits on
    arithmetic rather than reading; None when no batch does (each added cache is read
    for too little work)."""
    flops, cache, weights = (
        decode_flops(m, context),
        kv_cache_bytes(m, context),
        weight_bytes(m),
    )
    # b * flops / R >= (weights + b * cache) / S  <=>  b * (flops * S - cache * R) >=
    # weights * R
    gain = flops * acc.bytes_per_s - cache * acc.flops_per_s
    if gain <= 0:
        return None
    batch = max(1, int(-(-weights * acc.flops_per_s // gain)))  # rounded up
    while batch > 1 and arithmetic_time(m, acc, context, batch - 1) >= reading_time(
        m, acc, context, batch - 1
    ):
        batch -= 1  # guard against round-off in the division above
    while arithmetic_time(m, acc, context, batch) < reading_time(
        m, acc, context, batch
    ):
        batch += 1
    return batch


def arithmetic_bound_prompt(
    m: ModelShape, acc: Accelerator, all_logits: bool = True
) -> int:
    """Shortest prompt, in tokens, whose prefill waits on arithmetic rather than
    reading (``all_logits`` as in ``work.prefill_flops``)."""

    def bound(tokens: int) -> bool:
        arithmetic, reading = prefill_limits(m, acc, tokens, all_logits)
        return arithmetic >= reading

    return first_true(bound)  # prefill arithmetic per byte only grows with the length


def cache_intensity(m: ModelShape) -> float:
    """Operations per byte of cache read in a decode step (the pair work a cached key
    and value feed), the same at every context and batch."""
    return decode_pair_flops(m, 1) / kv_cache_bytes(m, 1)
