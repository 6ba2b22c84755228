"""Time on an accelerator: each step takes as long as the slower of its arithmetic and its reading.

This is the simple "roofline" model: a step that does F operations and reads B bytes
on a chip that does R operations and reads S bytes a second takes max(F/R, B/S)
seconds. It ignores overlap losses and kernel overheads, so real chips are slower;
the point is which of the two limits binds.
"""
from __future__ import annotations

from ._checks import count, fraction, positive
from .memory import kv_cache_bytes, weight_bytes, weight_bytes_read
from .shapes import Accelerator, ModelShape
from .work import decode_flops, decode_pair_flops, prefill_flops

__all__ = [
    "decode_bytes", "arithmetic_time", "reading_time", "decode_step_time", "throughput",
    "prefill_time", "answer_time", "cache_reading_time", "machine_time_per_token",
    "prefill_limits", "answer_limits", "speculative_tokens_per_step", "verify_step_time",
    "speculative_time_per_token", "step_time_at_bits",
]


def decode_bytes(m: ModelShape, context: int, batch: int = 1) -> int:
    """Bytes one decode step reads: every weight once (for a mixture of experts, the experts the
    batch touches), plus each conversation's whole cache."""
    return weight_bytes_read(m, count("batch", batch, minimum=1)) + batch * kv_cache_bytes(m, context)


def arithmetic_time(m: ModelShape, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Seconds the arithmetic of one decode step takes for ``batch`` conversations."""
    return count("batch", batch, minimum=1) * decode_flops(m, context) / acc.flops_per_s


def reading_time(m: ModelShape, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Seconds one decode step spends reading the weights and the caches."""
    return decode_bytes(m, context, batch) / acc.bytes_per_s


def decode_step_time(m: ModelShape, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Seconds for one decode step: one new token for each of ``batch`` conversations.

    This is also each conversation's own wait for its next token."""
    return max(arithmetic_time(m, acc, context, batch), reading_time(m, acc, context, batch))


def throughput(m: ModelShape, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Tokens a second the whole machine produces with ``batch`` conversations at once."""
    return batch / decode_step_time(m, acc, context, batch)


def prefill_time(m: ModelShape, acc: Accelerator, tokens: int) -> float:
    """Seconds to read a prompt of ``tokens`` in one pass (arithmetic or reading, the slower)."""
    return max(prefill_limits(m, acc, tokens))


def answer_time(m: ModelShape, acc: Accelerator, prompt: int, answer: int) -> float:
    """Seconds to write ``answer`` tokens one at a time after a prompt of ``prompt`` tokens."""
    count("prompt", prompt)
    count("answer", answer)
    return sum(decode_step_time(m, acc, prompt + k) for k in range(answer))


def cache_reading_time(m: ModelShape, acc: Accelerator, context: int) -> float:
    """Seconds to read one conversation's cache of ``context`` tokens once."""
    return kv_cache_bytes(m, context) / acc.bytes_per_s


def machine_time_per_token(m: ModelShape, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Seconds of machine time per token produced (step time / batch = 1 / throughput);
    not any one conversation's wait, which is the whole step time."""
    return decode_step_time(m, acc, context, batch) / count("batch", batch, minimum=1)


def prefill_limits(m: ModelShape, acc: Accelerator, tokens: int) -> tuple[float, float]:
    """Seconds a prompt of ``tokens`` needs for its arithmetic and for its reading, in that order;
    ``prefill_time`` is the larger of the two."""
    arithmetic = prefill_flops(m, tokens) / acc.flops_per_s
    reading = (weight_bytes_read(m, tokens) + kv_cache_bytes(m, tokens)) / acc.bytes_per_s
    return arithmetic, reading


# ---------------------------------------------------------------- arithmetic intensity
# Operations done per byte read. A step whose intensity is below the machine's ridge
# (its operations a second over its bytes a second) waits on reading; above it, on arithmetic.

__all__ += [
    "ridge_intensity", "decode_intensity", "prefill_intensity", "attainable_flops",
    "arithmetic_bound_batch", "arithmetic_bound_prompt", "cache_intensity",
]


def ridge_intensity(acc: Accelerator) -> float:
    """Operations per byte at which a step's arithmetic and its reading take equal time on ``acc``."""
    return acc.flops_per_s / acc.bytes_per_s


def decode_intensity(m: ModelShape, context: int, batch: int = 1) -> float:
    """Operations per byte read of one decode step for ``batch`` conversations of ``context`` tokens."""
    return count("batch", batch, minimum=1) * decode_flops(m, context) / decode_bytes(m, context, batch)


def prefill_intensity(m: ModelShape, tokens: int) -> float:
    """Operations per byte read of the one pass that reads a prompt of ``tokens`` (at least 1)."""
    count("tokens", tokens, minimum=1)
    return prefill_flops(m, tokens) / (weight_bytes_read(m, tokens) + kv_cache_bytes(m, tokens))


def attainable_flops(acc: Accelerator, intensity: float) -> float:
    """Operations a second a step of ``intensity`` operations per byte gets from ``acc``: the
    roofline, min(peak operations a second, bytes a second x intensity)."""
    if not intensity > 0:
        raise ValueError(f"intensity must be positive, got {intensity!r}")
    return min(acc.flops_per_s, acc.bytes_per_s * intensity)


def arithmetic_bound_batch(m: ModelShape, acc: Accelerator, context: int) -> int | None:
    """Smallest batch of conversations of ``context`` tokens whose decode step waits on arithmetic
    rather than reading; None when no batch does (each added cache is read for too little work)."""
    flops, cache, weights = decode_flops(m, context), kv_cache_bytes(m, context), weight_bytes(m)
    # b * flops / R >= (weights + b * cache) / S  <=>  b * (flops * S - cache * R) >= weights * R
    gain = flops * acc.bytes_per_s - cache * acc.flops_per_s
    if gain <= 0:
        return None
    batch = max(1, int(-(-weights * acc.flops_per_s // gain)))   # rounded up
    while batch > 1 and arithmetic_time(m, acc, context, batch - 1) >= reading_time(m, acc, context, batch - 1):
        batch -= 1   # guard against round-off in the division above
    while arithmetic_time(m, acc, context, batch) < reading_time(m, acc, context, batch):
        batch += 1
    return batch


def arithmetic_bound_prompt(m: ModelShape, acc: Accelerator) -> int:
    """Shortest prompt, in tokens, whose prefill waits on arithmetic rather than reading."""
    def bound(tokens: int) -> bool:
        arithmetic, reading = prefill_limits(m, acc, tokens)
        return arithmetic >= reading

    high = 1
    while not bound(high):
        high *= 2
    low = high // 2   # not bound (or 0); prefill arithmetic per byte only grows with the length
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if bound(mid) else (mid, high)
    return high


def cache_intensity(m: ModelShape) -> float:
    """Operations per byte of cache read in a decode step (the pair work a cached key and value
    feed), the same at every context and batch."""
    return decode_pair_flops(m, 1) / kv_cache_bytes(m, 1)


def answer_limits(m: ModelShape, acc: Accelerator, prompt: int, answer: int) -> tuple[float, float]:
    """Seconds that writing ``answer`` tokens after a ``prompt``-token prompt needs for its
    arithmetic and for its reading, each summed over the steps, in that order;
    ``answer_time`` sums the larger of the two at each step."""
    count("prompt", prompt)
    steps = range(count("answer", answer))
    return (sum(arithmetic_time(m, acc, prompt + k) for k in steps),
            sum(reading_time(m, acc, prompt + k) for k in steps))


def speculative_tokens_per_step(drafted: int, acceptance: float) -> float:
    """Tokens one step of the large model yields on average when a draft proposes ``drafted``
    tokens, each accepted with chance ``acceptance``: (1 - a**(k+1)) / (1 - a)."""
    k = count("drafted", drafted)
    a = fraction("acceptance", acceptance, low_open=False)
    return float(k + 1) if a == 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)


def verify_step_time(m: ModelShape, acc: Accelerator, context: int, positions: int) -> float:
    """Seconds for one step of one conversation that pushes ``positions`` new positions through
    the model at once (a draft's tokens checked together): the weights and the cache are read
    once, the arithmetic is done for every position."""
    p = count("positions", positions, minimum=1)
    arithmetic = p * decode_flops(m, context) / acc.flops_per_s
    return max(arithmetic, decode_bytes(m, context) / acc.bytes_per_s)


def speculative_time_per_token(m: ModelShape, draft: ModelShape, acc: Accelerator, context: int,
                               drafted: int, acceptance: float) -> float:
    """Seconds one conversation waits per token under speculative decoding: ``drafted`` steps of
    the ``draft`` model plus one checking step of ``m``, shared by the tokens that step yields."""
    k = count("drafted", drafted)
    one_round = k * decode_step_time(draft, acc, context) + verify_step_time(m, acc, context, k + 1)
    return one_round / speculative_tokens_per_step(k, acceptance)


def step_time_at_bits(m: ModelShape, acc: Accelerator, context: int, weight_bits: float,
                      batch: int = 1) -> float:
    """Seconds for one decode step when every weight is stored in ``weight_bits`` bits (the cache
    and the arithmetic as before; a mixture of experts still reads only the experts it touches)."""
    bits = positive("weight_bits", weight_bits)
    batch = count("batch", batch, minimum=1)
    weights = weight_bytes_read(m, batch) * bits / (8 * m.bytes_per_number)
    reading = (weights + batch * kv_cache_bytes(m, context)) / acc.bytes_per_s
    return max(arithmetic_time(m, acc, context, batch), reading)
