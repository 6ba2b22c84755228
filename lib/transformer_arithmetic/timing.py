"""Time on an accelerator: each step takes as long as the slower of its arithmetic and its reading.

This is the simple "roofline" model: a step that does F operations and reads B bytes
on a chip that does R operations and reads S bytes a second takes max(F/R, B/S)
seconds. It ignores overlap losses and kernel overheads, so real chips are slower;
the point is which of the two limits binds.
"""
from __future__ import annotations

from ._checks import count
from .memory import kv_cache_bytes, weight_bytes_read
from .shapes import Accelerator, ModelShape
from .work import decode_flops, prefill_flops

__all__ = [
    "decode_bytes", "arithmetic_time", "reading_time", "decode_step_time", "throughput",
    "prefill_time", "answer_time", "cache_reading_time", "machine_time_per_token",
    "prefill_limits",
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
