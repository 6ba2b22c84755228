"""Ways to mix positions, set side by side on one model and one accelerator.

A ``Design`` says what every layer of a model's stack uses to let positions affect each
other: a convolution, a recurrent network, attention (over everything, over a window, or
with shared key-value heads), a running summary, or a hybrid of attention in a few
layers and running summaries in the rest. The functions answer the same questions for
each:

- ``reach``: the furthest token back one layer draws on at all;
- ``exact_recall``: how many tokens of the conversation one layer still holds in full,
  so that it can hand any of them back exactly (a fixed state holds at most as many as
  it has numbers per channel);
- ``dependent_steps``: steps that must follow one another when one layer trains on a
  row;
- ``held_bytes``: what one conversation keeps in memory (a recurrent network's state is
  an LSTM's, its output and its cell: two vectors of the model's width a layer);
- ``token_time``: the time of one more token on the whole-step floor (the slower of its
  work and its reading), and ``token_operation_times`` the same token kernel by kernel
  (the weights' matrix products, the design's own mixing, ...), whose sum
  ``token_time_by_operation`` is the book's time;
- ``prefill_time``: the time to read a prompt of n tokens in one pass on the floor (the
  same two limits over the whole row), and ``prefill_time_by_operation`` kernel by
  kernel.

One simplification is stated here, once: every design keeps the weights of the model it
is applied to (the mixing part of each layer is assumed to have as many weights as
attention has, and sharing key-value heads changes only what is cached), so two designs
differ only in what they hold and in the work of their mixing.

A running summary's state is ``state_size`` numbers for each of ``expand`` times the
model's channels, in ``blocks`` summary layers per layer of the model (a Mamba block
stands in for both halves of a transformer layer, so a stack of them with the same
weights has twice the layers), at ``state_bytes`` bytes a number (None: the model's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .checks import checked_whole
from .masks import causal_pairs, window_pairs
from .memory import kv_cache_bytes, parameter_count, weight_bytes
from .shapes import Accelerator, ModelShape, kv_head_choices
from .summaries import scan_rounds
from .timing import decode_operation_times, prefill_operation_times, roofline_time
from .work import decode_pair_flops

__all__ = [
    "KINDS",
    "Design",
    "reach",
    "exact_recall",
    "dependent_steps",
    "held_bytes",
    "token_time",
    "prefill_time",
    "token_operation_times",
    "token_time_by_operation",
    "prefill_time_by_operation",
    "state_bytes",
    "grouped_kv_heads",
    "hybrid_kv_heads",
]

KINDS = ("convolution", "recurrent", "attention", "summary", "hybrid")
"""The kinds of mixing a design can use."""


@dataclass(frozen=True)
class Design:
    """One way to mix positions in every layer.

    ``kernel``: a convolution's filter width. ``window``: attention over only the newest
    ``window`` tokens (None: every token). ``kv_heads``: attention's key-value heads
    (None: the model's own). ``state_size``: numbers a running summary keeps per
    channel, ``expand`` and ``blocks`` and ``state_bytes`` its sizes (see the module).
    ``attention_layers``: for a hybrid, the layers that keep attention."""

    name: str
    kind: str
    kernel: int = 3
    window: int | None = None
    kv_heads: int | None = None
    state_size: int = 16
    attention_layers: int = 0
    expand: int = 1
    blocks: int = 1
    state_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}"
            )
        checked_whole("kernel", self.kernel, minimum=2)
        if self.window is not None:
            checked_whole("window", self.window, minimum=1)
        if self.kv_heads is not None:
            checked_whole("kv_heads", self.kv_heads, minimum=1)
        checked_whole("state_size", self.state_size, minimum=1)
        checked_whole("expand", self.expand, minimum=1)
        checked_whole("blocks", self.blocks, minimum=1)
        if self.state_bytes is not None:
            checked_whole("state_bytes", self.state_bytes, minimum=1)
        checked_whole(
            "attention_layers",
            self.attention_layers,
            minimum=1 if self.kind == "hybrid" else 0,
        )


def _shape_for(d: Design, m: ModelShape) -> ModelShape:
    """The model ``m`` with the design's key-value heads (``m`` itself when it sets
    none)."""
    if d.kind == "hybrid" and d.attention_layers > m.layers:
        raise ValueError(
            f"attention_layers={d.attention_layers} is more than the model's "
            f"{m.layers} layers"
        )
    return m if d.kv_heads is None else replace(m, kv_heads=d.kv_heads)


def _held_tokens(d: Design, tokens: int) -> int:
    """Tokens of a ``tokens``-long conversation one layer holds in full, per channel."""
    if d.kind == "convolution":
        return min(tokens, d.kernel)
    if d.kind == "recurrent":
        return min(tokens, 1)
    if d.kind == "summary":
        return min(tokens, d.state_size)
    if d.kind == "attention" and d.window is not None:
        return min(tokens, d.window)
    return tokens  # attention over everything, and the attention layers of a hybrid


def reach(d: Design, tokens: int) -> int:
    """Furthest distance back, in tokens, that one layer draws on at all in a
    conversation of ``tokens`` (directly, or through a carried state)."""
    n = checked_whole("tokens", tokens, minimum=1)
    if d.kind == "convolution" or (d.kind == "attention" and d.window is not None):
        return _held_tokens(d, n) - 1
    return n - 1


def exact_recall(d: Design, tokens: int) -> int:
    """Tokens of a ``tokens``-long conversation (the newest included) that one layer
    holds in full and can hand back exactly; a carried state of S numbers per channel
    holds at most S."""
    tokens = checked_whole("tokens", tokens, minimum=1)
    return _held_tokens(d, tokens)


def dependent_steps(d: Design, tokens: int) -> int:
    """Steps that must run one after another when one layer trains on a row of
    ``tokens``: the whole row for a recurrent network, the rounds of a parallel scan for
    a running summary (and a hybrid's summary layers), one wide step otherwise."""
    n = checked_whole("tokens", tokens, minimum=1)
    if d.kind == "recurrent":
        return n
    if d.kind in ("summary", "hybrid"):
        return max(1, scan_rounds(n))
    return 1


def _summary_layers(d: Design, m: ModelShape) -> int:
    """Running-summary layers the design has: every layer (times ``blocks``), or the
    layers of a hybrid that do not keep attention."""
    if d.kind == "hybrid":
        return (m.layers - d.attention_layers) * d.blocks
    return m.layers * d.blocks if d.kind == "summary" else 0


def state_bytes(d: Design, m: ModelShape) -> int:
    """Bytes of running summary the design holds, over all its summary layers (0 for a
    design without one)."""
    per_number = m.bytes_per_number if d.state_bytes is None else d.state_bytes
    return _summary_layers(d, m) * d.expand * m.width * d.state_size * per_number


def held_bytes(d: Design, m: ModelShape, tokens: int) -> int:
    """Bytes one conversation of ``tokens`` holds over all layers: a cache, a state or
    the last inputs of a filter."""
    n = checked_whole("tokens", tokens)
    s = _shape_for(d, m)
    if d.kind == "convolution":
        return m.layers * min(n, d.kernel - 1) * m.width * m.bytes_per_number
    if d.kind == "recurrent":  # an LSTM's two vectors a layer: its output and its cell
        return m.layers * 2 * m.width * m.bytes_per_number
    if d.kind == "summary":
        return state_bytes(d, m)
    if d.kind == "hybrid":
        per_layer = kv_cache_bytes(s, n) // m.layers
        return d.attention_layers * per_layer + state_bytes(d, m)
    return kv_cache_bytes(s, n, window=d.window)


def _summary_flops(d: Design, m: ModelShape) -> int:
    """Operations the summary layers spend on one token: two multiply-adds per state
    number (update it, read it out)."""
    return 4 * _summary_layers(d, m) * d.expand * m.width * d.state_size


def _token_flops(d: Design, m: ModelShape, context: int) -> int:
    """Operations for one more token after ``context`` tokens: every weight once, plus
    the design's own mixing (attention's pairs, a summary's state updates)."""
    n = checked_whole("context", context)
    s = _shape_for(d, m)
    weights = 2 * parameter_count(m)
    if d.kind == "attention":
        return weights + decode_pair_flops(   # a window's W - 1 earlier positions
            s, n if d.window is None else min(n, d.window - 1)
        )
    if d.kind == "hybrid":
        one = replace(s, layers=1)
        return (
            weights
            + d.attention_layers * decode_pair_flops(one, n)
            + _summary_flops(d, m)
        )
    return weights + _summary_flops(d, m)  # a filter's or a walk's mixing: its weights


def token_time(d: Design, m: ModelShape, acc: Accelerator, context: int) -> float:
    """Seconds one conversation waits for one more token after ``context`` tokens: the
    slower of the arithmetic and the reading of every weight and everything the
    conversation holds."""
    reading = (weight_bytes(m) + held_bytes(d, m, context)) / acc.bytes_per_s
    return max(_token_flops(d, m, context) / acc.flops_per_s, reading)


def _prefill_flops(d: Design, m: ModelShape, tokens: int) -> int:
    """Operations to read ``tokens`` in one pass: every weight for every token, plus
    the mixing (every allowed pair of the attention layers, the summaries' updates)."""
    n = checked_whole("tokens", tokens)
    per_pair = 4 * m.heads * m.head_dim  # per layer; key-value heads do not change it
    weights = 2 * parameter_count(m) * n
    if d.kind == "attention":
        pairs = causal_pairs(n) if d.window is None else window_pairs(n, d.window)
        return weights + m.layers * per_pair * pairs
    if d.kind == "hybrid":
        pairs = d.attention_layers * per_pair * causal_pairs(n)
        return weights + pairs + n * _summary_flops(d, m)
    return weights + n * _summary_flops(d, m)


def prefill_time(d: Design, m: ModelShape, acc: Accelerator, tokens: int) -> float:
    """Seconds to read a prompt of ``tokens`` in one pass (or one training step's
    forward pass over a row of that length): the slower of its arithmetic and of
    reading the weights and writing what the conversation holds."""
    _shape_for(d, m)
    reading = (weight_bytes(m) + held_bytes(d, m, tokens)) / acc.bytes_per_s
    return max(_prefill_flops(d, m, tokens) / acc.flops_per_s, reading)


def _mixing_bytes(d: Design, m: ModelShape, tokens: int) -> int:
    """Bytes one more token's mixing moves: what the conversation holds, read, and a
    carried state (a summary's, a walk's) written back as well."""
    carried = state_bytes(d, m) if d.kind in ("summary", "hybrid") else 0
    if d.kind == "recurrent":
        carried = held_bytes(d, m, tokens)
    return held_bytes(d, m, tokens) + carried


def token_operation_times(
    d: Design, m: ModelShape, acc: Accelerator, context: int
) -> dict[str, float]:
    """Seconds each kernel of one more token after ``context`` tokens takes on its own
    roof: the weights' kernels (matrix products, normalisations, the input row), the
    same for every design, and the design's mixing (attention over what is held, a
    summary's update of its state, a filter's last inputs)."""
    n = checked_whole("context", context)
    weights = decode_operation_times(m, acc, 0)
    del weights["attention"]                       # a mixing of its own, below
    mixing = _token_flops(d, m, n) - 2 * parameter_count(m)
    return {**weights, "mixing": roofline_time(mixing, _mixing_bytes(d, m, n), acc)}


def token_time_by_operation(
    d: Design, m: ModelShape, acc: Accelerator, context: int
) -> float:
    """Seconds one conversation waits for one more token, on the roofline per
    operation: the sum of ``token_operation_times``."""
    return sum(token_operation_times(d, m, acc, context).values())


def prefill_time_by_operation(
    d: Design, m: ModelShape, acc: Accelerator, tokens: int
) -> float:
    """Seconds to read a prompt of ``tokens`` in one pass on the roofline per
    operation: the weights' kernels at every position, then the design's mixing, its
    operations against its inputs and outputs and what it leaves held."""
    n = checked_whole("tokens", tokens, minimum=1)
    s = _shape_for(d, m)
    weights = prefill_operation_times(m, acc, n)
    del weights["attention"]
    mixing = _prefill_flops(d, m, n) - 2 * parameter_count(m) * n
    layers = {"attention": m.layers, "hybrid": d.attention_layers}.get(d.kind, 0)
    attention_io = layers * n * 2 * (s.heads + s.kv_heads) * s.head_dim
    summary_io = _summary_layers(d, m) * n * 2 * d.expand * m.width
    io = (attention_io + summary_io) * m.bytes_per_number + held_bytes(d, m, n)
    return sum(weights.values()) + roofline_time(mixing, io, acc)


def grouped_kv_heads(m: ModelShape) -> int:
    """Key-value heads of the grouped-query version of ``m`` the book compares
    everywhere: the middle of ``shapes.kv_head_choices`` (its own count if it already
    shares them), or the fewest there are when no middle exists."""
    choices = kv_head_choices(m)
    return choices[1] if len(choices) > 1 else choices[0]


def hybrid_kv_heads(m: ModelShape, kept: int = 8) -> int:
    """Key-value heads of a hybrid's attention layers that keep ``kept`` of them, as
    Jamba keeps 8 for its 32 query heads: the largest count that divides both the query
    heads and ``kept`` (``kept`` itself when it divides the heads), and never more than
    ``m`` has."""
    kept = checked_whole("kept", kept, minimum=1)
    return min(m.kv_heads, math.gcd(m.heads, kept))
