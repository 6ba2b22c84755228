"""What a published model holds and costs, counted over its layout: memory, work and
time.

Each quantity is a sum over the model's real parts (``layout.py``), so an expert layer,
a window or a running summary is always counted as what it is, and over its formats
(``stored.py``): packed weights and a packed cache are counted at their own bytes, and
turning them back into numbers adds its operations to every step. Time is the book's
roofline (``transformer_arithmetic.timing.roofline_time``): a step takes the slower of
its arithmetic and its reading, so a real chip is slower, never faster. Packed matrices
multiply at their format's rate where the chip has it (fp8 weights at the 8-bit rate,
nvfp4 at the 4-bit rate); everything else runs at the 16-bit rate. The tables a step
gathers rows from (an untied input table, a learned position table) cost no operation,
and a step reads only the rows its tokens pick.
"""

from __future__ import annotations

from transformer_arithmetic import Accelerator
from transformer_arithmetic.checks import checked_whole
from transformer_arithmetic.memory import memory_left
from transformer_arithmetic.timing import roofline_time

from . import stored
from .chips import rate_for
from ..anatomy.model import Model

__all__ = [
    "parameters",
    "active_parameters",
    "weight_bytes",
    "weight_bytes_read",
    "multiplied_parameters",
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
    "dequant_flops",
    "arithmetic_time",
    "reading_time",
    "decode_step_time",
    "throughput",
    "prefill_time",
    "prefill_limits",
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
    """Bytes of all the weights in the model's weight format (a few parts may be held in
    float32)."""
    return stored.weight_bytes(model)


def weight_bytes_read(model: Model, tokens: int = 1) -> int:
    """Bytes of weights one step reads when it carries ``tokens`` tokens at once: every
    matrix it multiplies by (for a mixture of experts, the experts those tokens are
    expected to touch if each picks its experts at random: all of them in a large
    batch), and one row a token of an untied input table."""
    tokens = checked_whole("tokens", tokens)
    return stored.read_bytes(model, tokens)


def multiplied_parameters(model: Model) -> int:
    """Numbers one token multiplies by: the active parameters (a looped layer's once a
    pass) but the tables it only gathers a row from (an untied input table, a learned
    position table)."""
    return model.layout.work_parameters - stored.gathered_numbers(model)


def cache_bytes_per_token(model: Model) -> int:
    """Bytes of keys and values each of the first tokens adds (no window full yet)."""
    return stored.cache_bytes_per_token(model)


def cache_bytes_per_token_past_windows(model: Model) -> int:
    """Bytes each token adds once every window is full (only uncapped layers grow)."""
    return stored.cache_bytes_per_token_past_windows(model)


def state_bytes(model: Model) -> int:
    """Bytes of running-summary state one conversation holds, whatever its length (0 for
    a model of attention layers only)."""
    return model.layout.state_bytes(model.bytes_per_number)


def cache_bytes(model: Model, tokens: int) -> int:
    """Bytes one conversation of ``tokens`` tokens holds: keys and values, each windowed
    layer its last ``window - 1`` only, plus any running-summary state."""
    tokens = checked_whole("tokens", tokens)
    return stored.cache_bytes(model, tokens)


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
    return stored.longest_conversation(model, _free_bytes(model, acc))


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
        2 * multiplied_parameters(model)
        + layout.decode_pair_flops(context)
        + layout.state_flops
    )


def prefill_flops(model: Model, tokens: int) -> int:
    """Operations to read a prompt of ``tokens`` in one pass: every weight a token uses
    for every token, every allowed pair in every layer, the summaries' update for every
    token."""
    tokens = checked_whole("tokens", tokens)
    layout = model.layout
    per_token = 2 * multiplied_parameters(model) + layout.state_flops
    return per_token * tokens + layout.prefill_pair_flops(tokens)


def dequant_flops(model: Model, weight_tokens: int, cache_numbers: int) -> float:
    """Operations a step spends turning packed numbers back into numbers: each packed
    weight it reads once (a step carrying ``weight_tokens`` tokens), and each of the
    ``cache_numbers`` cached numbers it reads or writes; 0 in the model's own format."""
    weights = stored.dequant_flops_read(model, weight_tokens)
    return weights + model.cache.dequant_ops * cache_numbers


def _cache_numbers(model: Model, tokens: int) -> int:
    """Numbers one conversation of ``tokens`` tokens keeps in its cache."""
    return sum(n * b.cache_numbers_at(tokens) for b, n in model.layout.block_counts)


def _work(model: Model, acc: Accelerator, tokens: int, other: float) -> float:
    """Operations at ``acc``'s 16-bit rate that take as long as ``tokens`` tokens'
    multiplies by the weights (packed matrices at their format's rate) plus ``other``
    operations elsewhere."""
    matrix = 2 * tokens * multiplied_parameters(model)
    packed = stored.active_packed_numbers(model)
    for compute, numbers in packed.items():
        rate = rate_for(acc, compute)
        if rate != acc.flops_per_s:
            ops = 2 * tokens * numbers
            matrix += ops * (acc.flops_per_s / rate) - ops
    return matrix + other


def decode_bytes(model: Model, context: int, batch: int = 1) -> int:
    """Bytes one decode step reads for ``batch`` conversations of ``context`` tokens:
    the weights the batch touches (a row of a gathered table each) and each
    conversation's cache (all of it, but for a sparse attention's unchosen tokens)."""
    batch = checked_whole("batch", batch, minimum=1)
    return weight_bytes_read(model, batch) + batch * stored.cache_read_bytes(
        model, context)


def prefill_bytes(model: Model, tokens: int, batch: int = 1) -> int:
    """Bytes the pass over ``batch`` prompts of ``tokens`` each reads and writes: the
    weights their tokens touch, and the caches it writes."""
    batch = checked_whole("batch", batch, minimum=1)
    tokens = checked_whole("tokens", tokens)
    weights = stored.read_bytes(model, batch * tokens, tokens)
    return weights + batch * cache_bytes(model, tokens)


def _decode_work(model: Model, acc: Accelerator, context: int, batch: int) -> float:
    """A decode step's operations, at ``acc``'s 16-bit rate (see ``_work``)."""
    batch = checked_whole("batch", batch, minimum=1)
    context = checked_whole("context", context)
    layout = model.layout
    other = batch * (layout.decode_pair_flops(context) + layout.state_flops)
    read = sum(n * b.mixer.decode_read_numbers(context) for b, n in layout.block_counts)
    other += dequant_flops(model, batch, batch * read)
    return _work(model, acc, batch, other)


def arithmetic_time(
    model: Model, acc: Accelerator, context: int, batch: int = 1
) -> float:
    """Seconds the arithmetic of one decode step takes for ``batch`` conversations,
    turning packed weights and cache back into numbers included."""
    return _decode_work(model, acc, context, batch) / acc.flops_per_s


def reading_time(model: Model, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Seconds one decode step spends reading the weights and the caches."""
    return decode_bytes(model, context, batch) / acc.bytes_per_s


def decode_step_time(
    model: Model, acc: Accelerator, context: int, batch: int = 1
) -> float:
    """Seconds for one decode step, one new token for each of ``batch`` conversations:
    also each conversation's own wait for its next token."""
    flops = _decode_work(model, acc, context, batch)
    return roofline_time(flops, decode_bytes(model, context, batch), acc)


def throughput(model: Model, acc: Accelerator, context: int, batch: int = 1) -> float:
    """Tokens a second the whole machine writes with ``batch`` conversations at once."""
    return batch / decode_step_time(model, acc, context, batch)


def _prefill_work(model: Model, acc: Accelerator, tokens: int, batch: int) -> float:
    """The prompt pass's operations, at ``acc``'s 16-bit rate (see ``_work``)."""
    batch = checked_whole("batch", batch, minimum=1)
    matrix = batch * tokens * 2 * multiplied_parameters(model)
    other = batch * prefill_flops(model, tokens) - matrix
    other += dequant_flops(model, batch * tokens, batch * _cache_numbers(model, tokens))
    return _work(model, acc, batch * tokens, other)


def prefill_limits(
    model: Model, acc: Accelerator, tokens: int, batch: int = 1
) -> tuple[float, float]:
    """Seconds the pass over ``batch`` prompts of ``tokens`` each needs for its
    arithmetic and for its reading, in that order."""
    arithmetic = _prefill_work(model, acc, tokens, batch) / acc.flops_per_s
    return arithmetic, prefill_bytes(model, tokens, batch) / acc.bytes_per_s


def prefill_time(model: Model, acc: Accelerator, tokens: int, batch: int = 1) -> float:
    """Seconds to read ``batch`` prompts of ``tokens`` each in one pass."""
    flops = _prefill_work(model, acc, tokens, batch)
    return roofline_time(flops, prefill_bytes(model, tokens, batch), acc)


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
