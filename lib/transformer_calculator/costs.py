"""What a published model holds and costs, counted over its layout: memory, work and
time.

Each quantity is a sum over the model's real parts (``layout.py``), so an expert layer,
a window or a running summary is always counted as what it is. Time is the book's
roofline (``transformer_arithmetic.timing.roofline_time``): a step takes the slower of
its arithmetic and its reading, so a real chip is slower, never faster.
"""

from __future__ import annotations

from transformer_arithmetic import Accelerator
from transformer_arithmetic.checks import checked_whole
from transformer_arithmetic.memory import memory_left
from transformer_arithmetic.timing import roofline_time

from .model import Model

__all__ = [
    "parameters",
    "active_parameters",
    "weight_bytes",
    "weight_bytes_read",
    "cache_bytes_per_token",
    "cache_bytes_per_token_past_windows",
    "state_bytes",
    "cache_bytes",
    "serving_bytes",
    "longest_conversation",
    "conversations_that_fit",
    "decode_flops",
    "prefill_flops",
    "decode_bytes",
    "prefill_bytes",
    "arithmetic_time",
    "reading_time",
    "decode_step_time",
    "throughput",
    "prefill_time",
    "limited_by",
    "pairs_pass_weights_at",
]


def parameters(model: Model) -> int:
    """Every trainable number (what memory holds), a count."""
    return model.layout.parameters


def active_parameters(model: Model) -> int:
    """Numbers one token's step multiplies: for a mixture of experts, only the experts
    the router picks plus everything outside the experts."""
    return model.layout.active_parameters


def weight_bytes(model: Model) -> int:
    """Bytes of all the weights (a few parts may be held in float32)."""
    return model.layout.weight_bytes(model.bytes_per_number)


def weight_bytes_read(model: Model, tokens: int = 1) -> int:
    """Bytes of weights one step reads when it carries ``tokens`` tokens at once: every
    weight for a dense model; for a mixture of experts, the experts those tokens are
    expected to touch if each picks its experts at random (all of them in a large
    batch)."""
    tokens = checked_whole("tokens", tokens)
    return model.layout.read_bytes(model.bytes_per_number, tokens)


def cache_bytes_per_token(model: Model) -> int:
    """Bytes of keys and values each of the first tokens adds (no window full yet)."""
    return model.layout.cache_bytes_per_token(model.bytes_per_number)


def cache_bytes_per_token_past_windows(model: Model) -> int:
    """Bytes each token adds once every window is full (only uncapped layers grow)."""
    return model.layout.cache_bytes_per_token_past_windows(model.bytes_per_number)


def state_bytes(model: Model) -> int:
    """Bytes of running-summary state one conversation holds, whatever its length (0 for
    a model of attention layers only)."""
    return model.layout.state_bytes(model.bytes_per_number)


def cache_bytes(model: Model, tokens: int) -> int:
    """Bytes one conversation of ``tokens`` tokens holds: keys and values, each windowed
    layer its last ``window - 1`` only, plus any running-summary state."""
    tokens = checked_whole("tokens", tokens)
    return model.layout.cache_bytes(model.bytes_per_number, tokens)


def serving_bytes(model: Model, tokens: int, conversations: int = 1) -> int:
    """Bytes to serve ``conversations`` at once, each ``tokens`` long: one copy of the
    weights plus one cache each."""
    conversations = checked_whole("conversations", conversations)
    return weight_bytes(model) + conversations * cache_bytes(model, tokens)


def _free_bytes(model: Model, acc: Accelerator) -> int:
    return memory_left(acc, weight_bytes(model))


def longest_conversation(model: Model, acc: Accelerator) -> int | None:
    """Most tokens one conversation can hold in the memory left after the weights; None
    when its cache stops growing (every layer windowed or a running summary) and
    fits."""
    return model.layout.longest_conversation(
        model.bytes_per_number, _free_bytes(model, acc)
    )


def conversations_that_fit(model: Model, acc: Accelerator, tokens: int) -> int:
    """Conversations of ``tokens`` each whose caches fit beside one copy of the
    weights."""
    tokens = checked_whole("tokens", tokens, minimum=1)
    return _free_bytes(model, acc) // cache_bytes(model, tokens)


def decode_flops(model: Model, context: int) -> int:
    """Operations to write one token after ``context`` tokens: every weight the token
    uses (its experts), a score and a weighted value per channel for every earlier token
    each layer keeps, and the running summaries' update."""
    context = checked_whole("context", context)
    layout = model.layout
    return (
        2 * layout.active_parameters
        + layout.decode_pair_flops(context)
        + layout.state_flops
    )


def prefill_flops(model: Model, tokens: int) -> int:
    """Operations to read a prompt of ``tokens`` in one pass: every weight a token uses
    for every token, every allowed pair in every layer, the summaries' update for every
    token."""
    tokens = checked_whole("tokens", tokens)
    layout = model.layout
    per_token = 2 * layout.active_parameters + layout.state_flops
    return per_token * tokens + layout.prefill_pair_flops(tokens)


def decode_bytes(model: Model, context: int, batch: int = 1) -> int:
    """Bytes one decode step reads for ``batch`` conversations of ``context`` tokens:
    the weights the batch touches and each conversation's whole cache."""
    batch = checked_whole("batch", batch, minimum=1)
    return weight_bytes_read(model, batch) + batch * cache_bytes(model, context)


def prefill_bytes(model: Model, tokens: int) -> int:
    """Bytes the pass over a ``tokens``-long prompt reads and writes: the weights its
    tokens touch, and the cache it writes."""
    return weight_bytes_read(model, tokens) + cache_bytes(model, tokens)


def arithmetic_time(
    model: Model, acc: Accelerator, context: int, batch: int = 1
) -> float:
    """Seconds the arithmetic of one decode step takes for ``batch`` conversations."""
    batch = checked_whole("batch", batch, minimum=1)
    return batch * decode_flops(model, context) / acc.flops_per_s


def reading_time(model: Model, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Seconds one decode step spends reading the weights and the caches."""
    return decode_bytes(model, context, batch) / acc.bytes_per_s


def decode_step_time(
    model: Model, acc: Accelerator, context: int, batch: int = 1
) -> float:
    """Seconds for one decode step, one new token for each of ``batch`` conversations:
    also each conversation's own wait for its next token."""
    batch = checked_whole("batch", batch, minimum=1)
    flops = batch * decode_flops(model, context)
    return roofline_time(flops, decode_bytes(model, context, batch), acc)


def throughput(model: Model, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Tokens a second the whole machine writes with ``batch`` conversations at once."""
    return batch / decode_step_time(model, acc, context, batch)


def prefill_time(model: Model, acc: Accelerator, tokens: int) -> float:
    """Seconds to read a prompt of ``tokens`` in one pass."""
    return roofline_time(
        prefill_flops(model, tokens), prefill_bytes(model, tokens), acc
    )


def limited_by(model: Model, acc: Accelerator, context: int, batch: int = 1) -> str:
    """Which limit a decode step meets: "reading" or "arithmetic"."""
    reading = reading_time(model, acc, context, batch)
    return (
        "reading"
        if reading >= arithmetic_time(model, acc, context, batch)
        else "arithmetic"
    )


def pairs_pass_weights_at(model: Model) -> int | None:
    """Shortest sequence at which the pair work of all layers passes the blocks' weight
    work over that sequence; None if it never does."""
    return model.layout.pairs_pass_weights_at()
