"""Time on an accelerator, by the roofline, in two forms.

The whole-step floor: a step that does F operations and reads D bytes on a chip that
does R operations and reads S bytes a second takes at least max(F/R, D/S) seconds, as if
every operation of the step could hide under every byte it reads. No schedule beats it.

The roofline per operation (``decode_operation_times`` and the other ``*_by_operation``
functions): a step is a sequence of kernels (the matrix products, attention over the
cache, the normalisations, the look-up of the input rows), each of which waits on its
own arithmetic or its own reading, and they run one after another, so their times add:
sum_i max(F_i/R, D_i/S), never less than the floor. Both ignore overheads (launches,
tiles that do not fill the chip, synchronisation), so a real chip is slower than either.
"""

from __future__ import annotations

from .checks import checked_fraction, checked_positive, checked_whole
from .memory import (input_table_params, kv_bytes_per_token, kv_cache_bytes,
                     weight_bytes)
from .shapes import Accelerator, ModelShape
from .work import (decode_flops, decode_pair_flops, generation_step_flops,
                   layer_pair_flops, matrix_shapes, prefill_flops)

__all__ = [
    "roofline_time",
    "input_rows_bytes",
    "decode_bytes",
    "arithmetic_time",
    "reading_time",
    "decode_step_time",
    "throughput",
    "prefill_time",
    "answer_time",
    "cache_reading_time",
    "prefill_limits",
    "prefill_bytes",
    "answer_limits",
    "speculative_tokens_per_step",
    "verify_step_time",
    "speculative_time_per_token",
    "step_time_at_bits",
    "generation_step_times",
    "bandwidth_utilisation",
    "matrix_time",
    "decode_operation_times",
    "decode_time_by_operation",
    "throughput_by_operation",
    "prefill_operation_times",
    "prefill_time_by_operation",
    "answer_time_by_operation",
    "speculative_time_by_operation",
    "generation_step_times_by_operation",
]


def roofline_time(flops: float, nbytes: float, acc: Accelerator) -> float:
    """Seconds a step of ``flops`` operations that reads ``nbytes`` bytes takes on
    ``acc``: the slower of its arithmetic and its reading."""
    return max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


def input_rows_bytes(m: ModelShape, rows: int) -> int:
    """Bytes of an untied input table that looking up ``rows`` rows reads: each row is
    ``m.width`` numbers, and no more than the table's ``m.vocab`` distinct rows (a table
    shared with the output layer is read by that layer's multiply, so its rows add
    nothing here)."""
    rows = min(checked_whole("rows", rows), m.vocab)
    return 0 if m.tied_embeddings else rows * m.width * m.bytes_per_number


def _read_weights(m: ModelShape, rows: int) -> int:
    """Bytes of weights a step that looks up ``rows`` input rows reads: every weight
    once, but of an untied input table only the rows it looks up."""
    table = input_table_params(m) * m.bytes_per_number
    return weight_bytes(m) - table + input_rows_bytes(m, rows)


def decode_bytes(m: ModelShape, context: int, batch: int = 1) -> int:
    """Bytes one decode step reads: every weight once (of an untied input table, the
    ``batch`` rows looked up), plus each conversation's whole cache."""
    batch = checked_whole("batch", batch, minimum=1)
    return _read_weights(m, batch) + batch * kv_cache_bytes(m, context)


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
    """Seconds for one decode step, one new token for each of ``batch`` conversations,
    on the whole-step floor: the slower of all its arithmetic and all its reading (a
    bound; ``decode_time_by_operation`` adds the kernels' own times).

    This is also each conversation's own wait for its next token."""
    return max(
        arithmetic_time(m, acc, context, batch), reading_time(m, acc, context, batch)
    )


def throughput(m: ModelShape, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Tokens a second the whole machine produces with ``batch`` conversations at
    once, on the whole-step floor (a bound)."""
    return batch / decode_step_time(m, acc, context, batch)


def prefill_time(
    m: ModelShape, acc: Accelerator, tokens: int, all_logits: bool = True
) -> float:
    """Seconds to read a prompt of ``tokens`` in one pass on the whole-step floor
    (arithmetic or reading, the slower; ``all_logits`` as in ``work.prefill_flops``)."""
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
    return arithmetic, prefill_bytes(m, tokens) / acc.bytes_per_s


def prefill_bytes(m: ModelShape, tokens: int) -> int:
    """Bytes reading a prompt of ``tokens`` in one pass moves at least: every weight
    once (of an untied input table, the distinct rows looked up, at most all V) and the
    cache it writes."""
    tokens = checked_whole("tokens", tokens)
    rows = min(tokens, m.vocab)
    return _read_weights(m, rows) + kv_cache_bytes(m, tokens)


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
    """Seconds for one decode step, the whole-step floor, when every weight is stored in
    ``weight_bits`` bits (the cache and the arithmetic as before)."""
    bits = checked_positive("weight_bits", weight_bits)
    batch = checked_whole("batch", batch, minimum=1)
    weights = _read_weights(m, batch) * bits / (8 * m.bytes_per_number)
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


def bandwidth_utilisation(nbytes: float, seconds: float, acc: Accelerator) -> float:
    """Model-bandwidth utilisation: the share of ``acc``'s bytes a second that reading
    ``nbytes`` (the bytes a step must read: weights and caches) in ``seconds`` makes up,
    between 0 and 1."""
    nbytes = checked_positive("nbytes", nbytes)
    return nbytes / (checked_positive("seconds", seconds) * acc.bytes_per_s)


def matrix_time(
    tokens: int,
    rows: int,
    cols: int,
    acc: Accelerator,
    bytes_per_number: int,
    weight_bytes_per_number: float | None = None,
) -> float:
    """Seconds one matrix product takes on its own roof: ``tokens`` inputs of width
    ``rows`` times a ``rows`` x ``cols`` matrix, 2 T D F operations against reading the
    inputs and the matrix and writing the outputs, b (T D + T F) + b_w D F bytes
    (``weight_bytes_per_number`` b_w: None, as the inputs)."""
    t = checked_whole("tokens", tokens)
    d = checked_whole("rows", rows, minimum=1)
    f = checked_whole("cols", cols, minimum=1)
    b = checked_whole("bytes_per_number", bytes_per_number, minimum=1)
    b_w = b if weight_bytes_per_number is None else checked_positive(
        "weight_bytes_per_number", weight_bytes_per_number)
    return roofline_time(2 * t * d * f, b * (t * d + t * f) + b_w * d * f, acc)


def _norm_time(m: ModelShape, acc: Accelerator, tokens: int) -> float:
    """Seconds of the 2L + 1 normalisations over ``tokens`` positions: each reads its
    scales and the tokens' vectors and writes them back (2 operations a scale a token,
    as the floor's 2P counts them)."""
    numbers, vectors = m.norm_numbers * m.width, tokens * m.width
    one = roofline_time(2 * tokens * numbers,
                        m.bytes_per_number * (numbers + 2 * vectors), acc)
    return (2 * m.layers + 1) * one


def decode_operation_times(
    m: ModelShape,
    acc: Accelerator,
    context: int,
    batch: int = 1,
    positions: int = 1,
    weight_bits: float | None = None,
) -> dict[str, float]:
    """Seconds each operation of one decode step takes on its own roof, for ``batch``
    conversations of ``context`` tokens each pushing ``positions`` new positions (1: a
    plain step; k + 1: a speculative check): the matrix products (each matrix read once
    for all B p tokens; in ``weight_bits`` bits if set), attention over the caches (each
    cache read once for its conversation's p queries), the normalisations, and the look
    up of B p input rows. ``decode_time_by_operation`` is their sum."""
    n = checked_whole("context", context)
    batch = checked_whole("batch", batch, minimum=1)
    p = checked_whole("positions", positions, minimum=1)
    b, tokens = m.bytes_per_number, batch * p
    b_w = None if weight_bits is None else checked_positive(
        "weight_bits", weight_bits) / 8
    matrices = sum(count * matrix_time(tokens, rows, cols, acc, b, b_w)
                   for _, count, rows, cols in matrix_shapes(m) if count)
    pairs = tokens * decode_pair_flops(m, n)
    attention = roofline_time(pairs, batch * kv_cache_bytes(m, n), acc)
    return {
        "matrices": matrices,
        "attention": attention,
        "normalisations": _norm_time(m, acc, tokens),
        "input rows": tokens * m.width * b / acc.bytes_per_s,
    }


def decode_time_by_operation(
    m: ModelShape,
    acc: Accelerator,
    context: int,
    batch: int = 1,
    positions: int = 1,
    weight_bits: float | None = None,
) -> float:
    """Seconds of one decode step on the roofline per operation: the sum of
    ``decode_operation_times`` (a bound for kernels that run one after another; never
    below the whole-step floor ``decode_step_time``)."""
    return sum(
        decode_operation_times(m, acc, context, batch, positions, weight_bits).values()
    )


def throughput_by_operation(
    m: ModelShape, acc: Accelerator, context: int, batch: int = 1
) -> float:
    """Tokens a second the whole machine produces with ``batch`` conversations at once,
    on the roofline per operation."""
    return batch / decode_time_by_operation(m, acc, context, batch)


def prefill_operation_times(
    m: ModelShape, acc: Accelerator, tokens: int, all_logits: bool = True
) -> dict[str, float]:
    """Seconds each operation of reading a prompt of ``tokens`` in one pass takes on its
    own roof: the matrix products (the output layer at every position, or with
    ``all_logits=False`` at the last only), attention over the causal pairs (reading the
    queries, keys and values and writing its output, at least), the normalisations and
    the look up of the prompt's rows."""
    t = checked_whole("tokens", tokens, minimum=1)
    b = m.bytes_per_number
    shapes = matrix_shapes(m)
    head_tokens = t if all_logits else 1
    matrices = sum(count * matrix_time(t, rows, cols, acc, b)
                   for _, count, rows, cols in shapes[:-1] if count)
    matrices += matrix_time(head_tokens, *shapes[-1][2:], acc, b)
    moved = t * b * m.layers * 2 * (m.heads + m.kv_heads) * m.head_dim
    attention = roofline_time(m.layers * layer_pair_flops(m, t), moved, acc)
    return {
        "matrices": matrices,
        "attention": attention,
        "normalisations": _norm_time(m, acc, t),
        "input rows": min(t, m.vocab) * m.width * b / acc.bytes_per_s,
    }


def prefill_time_by_operation(
    m: ModelShape, acc: Accelerator, tokens: int, all_logits: bool = True
) -> float:
    """Seconds to read a prompt of ``tokens`` in one pass on the roofline per operation:
    the sum of ``prefill_operation_times``."""
    return sum(prefill_operation_times(m, acc, tokens, all_logits).values())


def answer_time_by_operation(
    m: ModelShape, acc: Accelerator, prompt: int, answer: int
) -> float:
    """Seconds to write ``answer`` tokens one at a time after a ``prompt``-token prompt,
    each step on the roofline per operation."""
    prompt = checked_whole("prompt", prompt)
    answer = checked_whole("answer", answer)
    return sum(decode_time_by_operation(m, acc, prompt + k) for k in range(answer))


def speculative_time_by_operation(
    m: ModelShape,
    draft: ModelShape,
    acc: Accelerator,
    context: int,
    drafted: int,
    acceptance: float,
    batch: int = 1,
) -> float:
    """Seconds one of ``batch`` conversations waits per token under speculative
    decoding, on the roofline per operation: ``drafted`` steps of the ``draft`` and one
    check of ``m`` pushing ``drafted`` + 1 positions, shared by the tokens it yields."""
    k = checked_whole("drafted", drafted)
    one_round = k * decode_time_by_operation(draft, acc, context, batch)
    one_round += decode_time_by_operation(m, acc, context, batch, positions=k + 1)
    return one_round / speculative_tokens_per_step(k, acceptance)


def generation_step_times_by_operation(
    m: ModelShape, acc: Accelerator, new_tokens: int, cache: bool = True
) -> list[float]:
    """Seconds of each step of writing ``new_tokens`` from an empty row, on the roofline
    per operation: with a cache, step k is a decode step over k cached positions;
    without one, a pass over all k positions whose output layer runs at the last."""
    n = checked_whole("new_tokens", new_tokens)
    if cache:
        return [decode_time_by_operation(m, acc, k) for k in range(1, n + 1)]
    return [prefill_time_by_operation(m, acc, k, all_logits=False)
            for k in range(1, n + 1)]
