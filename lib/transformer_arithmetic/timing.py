"""Time on an accelerator: each step takes as long as the slower of its arithmetic and
its reading.

This is the simple "roofline" model: a step that does F operations and reads B bytes
on a chip that does R operations and reads S bytes a second takes max(F/R, B/S)
seconds. It ignores overlap losses and kernel overheads, so real chips are slower;
the point is which of the two limits binds.
"""

from __future__ import annotations

from .checks import checked_fraction, checked_positive, checked_whole
from .memory import kv_bytes_per_token, kv_cache_bytes, weight_bytes
from .shapes import Accelerator, ModelShape
from .work import decode_flops, generation_step_flops, prefill_flops

__all__ = [
    "roofline_time",
    "decode_bytes",
    "arithmetic_time",
    "reading_time",
    "decode_step_time",
    "throughput",
    "prefill_time",
    "answer_time",
    "cache_reading_time",
    "prefill_limits",
    "answer_limits",
    "speculative_tokens_per_step",
    "verify_step_time",
    "speculative_time_per_token",
    "step_time_at_bits",
    "generation_step_times",
]


def roofline_time(flops: float, nbytes: float, acc: Accelerator) -> float:
    """Seconds a step of ``flops`` operations that reads ``nbytes`` bytes takes on
    ``acc``: the slower of its arithmetic and its reading."""
    return max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


def decode_bytes(m: ModelShape, context: int, batch: int = 1) -> int:
    """Bytes one decode step reads: every weight once, plus each conversation's whole
    cache."""
    batch = checked_whole("batch", batch, minimum=1)
    return weight_bytes(m) + batch * kv_cache_bytes(m, context)


def arithmetic_time(
    m: ModelShape, acc: Accelerator, context: int, batch: int = 1
) -> float:
    """Seconds the arithmetic of one decode step takes for ``batch`` conversations."""
    batch = checked_whole("batch", batch, minimum=1)
    return batch * decode_flops(m, context) / acc.flops_per_s


def reading_time(
    m: ModelShape, acc: Accelerator, context: int, batch: int = 1
) -> float:
    """Seconds one decode step spends reading the weights and the caches."""
    return decode_bytes(m, context, batch) / acc.bytes_per_s


def decode_step_time(
    m: ModelShape, acc: Accelerator, context: int, batch: int = 1
) -> float:
    """Seconds for one decode step: one new token for each of ``batch`` conversations.

    This is also each conversation's own wait for its next token."""
    return max(
        arithmetic_time(m, acc, context, batch), reading_time(m, acc, context, batch)
    )


def throughput(m: ModelShape, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Tokens a second the whole machine produces with ``batch`` conversations at
    once."""
    return batch / decode_step_time(m, acc, context, batch)


def prefill_time(
    m: ModelShape, acc: Accelerator, tokens: int, all_logits: bool = True
) -> float:
    """Seconds to read a prompt of ``tokens`` in one pass (arithmetic or reading, the
    slower; ``all_logits`` as in ``work.prefill_flops``)."""
    return max(prefill_limits(m, acc, tokens, all_logits))


def answer_time(m: ModelShape, acc: Accelerator, prompt: int, answer: int) -> float:
    """Seconds to write ``answer`` tokens one at a time after a prompt of ``prompt``
    tokens."""
    prompt = checked_whole("prompt", prompt)
    answer = checked_whole("answer", answer)
    return sum(decode_step_time(m, acc, prompt + k) for k in range(answer))


def cache_reading_time(m: ModelShape, acc: Accelerator, context: int) -> float:
    """Seconds to read one conversation's cache of ``context`` tokens once."""
    return kv_cache_bytes(m, context) / acc.bytes_per_s


def prefill_limits(
    m: ModelShape, acc: Accelerator, tokens: int, all_logits: bool = True
) -> tuple[float, float]:
    """Seconds a prompt of ``tokens`` needs for its arithmetic and for its reading, in
    that order; ``prefill_time`` is the larger of the two."""
    arithmetic = prefill_flops(m, tokens, all_logits) / acc.flops_per_s
    reading = (weight_bytes(m) + kv_cache_bytes(m, tokens)) / acc.bytes_per_s
    return arithmetic, reading


def answer_limits(
    m: ModelShape, acc: Accelerator, prompt: int, answer: int
) -> tuple[float, float]:
    """Seconds that writing ``answer`` tokens after a ``prompt``-token prompt needs for
    its arithmetic and for its reading, each summed over the steps, in that order;
    ``answer_time`` sums the larger of the two at each step."""
    prompt = checked_whole("prompt", prompt)
    steps = range(checked_whole("answer", answer))
    return (
        sum(arithmetic_time(m, acc, prompt + k) for k in steps),
        sum(reading_time(m, acc, prompt + k) for k in steps),
    )


def speculative_tokens_per_step(drafted: int, acceptance: float) -> float:
    """Tokens one step of the large model yields on average when a draft proposes
    ``drafted`` tokens, each accepted with chance ``acceptance``: (1 - a**(k+1)) / (1 -
    a)."""
    k = checked_whole("drafted", drafted)
    a = checked_fraction("acceptance", acceptance, low_open=False)
    return float(k + 1) if a == 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)


def verify_step_time(
    m: ModelShape, acc: Accelerator, context: int, positions: int
) -> float:
    """Seconds for one step of one conversation that pushes ``positions`` new positions
    through the model at once (a draft's tokens checked together): the weights and the
    cache are read once, the arithmetic is done for every position."""
    p = checked_whole("positions", positions, minimum=1)
    arithmetic = p * decode_flops(m, context) / acc.flops_per_s
    return max(arithmetic, decode_bytes(m, context) / acc.bytes_per_s)


def speculative_time_per_token(
    m: ModelShape,
    draft: ModelShape,
    acc: Accelerator,
    context: int,
    drafted: int,
    acceptance: float,
) -> float:
    """Seconds one conversation waits per token under speculative decoding: ``drafted``
    steps of the ``draft`` model plus one checking step of ``m``, shared by the tokens
    that step yields."""
    k = checked_whole("drafted", drafted)
    one_round = k * decode_step_time(draft, acc, context) + verify_step_time(
        m, acc, context, k + 1
    )
    return one_round / speculative_tokens_per_step(k, acceptance)


def step_time_at_bits(
    m: ModelShape, acc: Accelerator, context: int, weight_bits: float, batch: int = 1
) -> float:
    """Seconds for one decode step when every weight is stored in ``weight_bits`` bits
    (the cache and the arithmetic as before)."""
    bits = checked_positive("weight_bits", weight_bits)
    batch = checked_whole("batch", batch, minimum=1)
    weights = weight_bytes(m) * bits / (8 * m.bytes_per_number)
    reading = (weights + batch * kv_cache_bytes(m, context)) / acc.bytes_per_s
    return max(arithmetic_time(m, acc, context, batch), reading)


def generation_step_times(
    m: ModelShape, acc: Accelerator, new_tokens: int, cache: bool = True
) -> list[float]:
    """Seconds of each step of writing ``new_tokens`` from an empty row, on the
    roofline: the operations of ``work.generation_step_flops`` against the bytes read,
    every weight and, with a cache, the keys and values of every position in the row
    (without one they are computed again, not read)."""
    n = checked_whole("new_tokens", new_tokens)
    weights, per_token = weight_bytes(m), kv_bytes_per_token(m) if cache else 0
    return [
        roofline_time(generation_step_flops(m, k, cache), weights + k * per_token, acc)
        for k in range(1, n + 1)
    ]
