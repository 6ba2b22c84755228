"""Arithmetic intensity: operations done per byte read, and the roofline it meets.

A step whose intensity is below the machine's ridge (its operations a second over its
bytes a second) waits on reading; above it, on arithmetic.
"""

from __future__ import annotations

from .checks import checked_whole
from .memory import kv_cache_bytes
from .search import first_true
from .shapes import Accelerator, ModelShape
from .timing import (arithmetic_time, decode_bytes, prefill_bytes, prefill_limits,
                     reading_time)
from .work import decode_flops, decode_pair_flops, prefill_flops

__all__ = [
    "ridge_intensity",
    "decode_intensity",
    "prefill_intensity",
    "attainable_flops",
    "arithmetic_bound_batch",
    "arithmetic_bound_prompt",
    "cache_intensity",
    "matmul_intensity",
    "critical_batch",
    "attention_intensity",
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
    return prefill_flops(m, tokens, all_logits) / prefill_bytes(m, tokens)


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
    flops = decode_flops(m, context)
    cache = decode_bytes(m, context, 2) - decode_bytes(m, context, 1)  # a conversation
    weights = decode_bytes(m, context, 1) - cache                      # read once
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


def matmul_intensity(tokens: int, rows: int, cols: int, bytes_per_number: int) -> float:
    """Operations per byte of one matrix product of ``tokens`` inputs of width ``rows``
    by a ``rows`` x ``cols`` matrix: 2 T D F / (b (T D + D F + T F)), which at two bytes
    a number is T D F / (T D + D F + T F), close to T while T is small beside D and
    F."""
    t = checked_whole("tokens", tokens, minimum=1)
    d = checked_whole("rows", rows, minimum=1)
    f = checked_whole("cols", cols, minimum=1)
    b = checked_whole("bytes_per_number", bytes_per_number, minimum=1)
    return 2 * t * d * f / (b * (t * d + d * f + t * f))


def critical_batch(acc: Accelerator, weight_bytes_per_number: float) -> float:
    """Tokens a matrix product must carry for its arithmetic to take as long as reading
    its matrix, with T small beside the matrix's sides: 2 T / b_w = R / S, so T = R b_w
    / (2 S) (``weight_bytes_per_number`` b_w: bytes a stored weight takes)."""
    if not weight_bytes_per_number > 0:
        raise ValueError("weight_bytes_per_number must be positive, "
                         f"got {weight_bytes_per_number!r}")
    return acc.flops_per_s * weight_bytes_per_number / (2 * acc.bytes_per_s)


def attention_intensity(m: ModelShape, positions: int = 1) -> float:
    """Operations per byte of decode attention over a cache: 4 h d_h per cached token
    and query against 2 h_kv d_h b bytes read, for ``positions`` queries a conversation,
    2 p h / (h_kv b), whatever the context and the batch (about h / h_kv at two bytes a
    number)."""
    p = checked_whole("positions", positions, minimum=1)
    return p * decode_pair_flops(m, 1) / kv_cache_bytes(m, 1)
