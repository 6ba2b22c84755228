"""Arithmetic work, counted in operations (one multiply or one add is one operation).

A multiply-add with a weight costs two operations, so pushing one token through a
matrix of P numbers costs 2P. Attention's pair work costs 4 operations per pair per
channel: two for the query-key score and two for adding that key's value into the mix.
"""

from __future__ import annotations

from .checks import checked_whole
from .masks import causal_pairs
from .memory import (attention_params, ffn_params, input_table_params,
                     parameter_count)
from .shapes import ModelShape

__all__ = [
    "matrix_shapes",
    "layer_weight_flops",
    "layer_pair_flops",
    "pair_share",
    "pairs_pass_weights_at",
    "decode_flops",
    "decode_pair_flops",
    "prefill_flops",
    "summary_flops_per_token",
    "head_flops",
    "generation_flops",
    "generation_step_flops",
]


def matrix_shapes(m: ModelShape) -> tuple[tuple[str, int, int, int], ...]:
    """The model's weight matrices as (name, how many, rows, columns): a token of width
    ``rows`` goes in, one of width ``columns`` comes out. Every layer's query, key and
    value, output and feed-forward matrices, and the output layer (the input table is
    looked up, not multiplied)."""
    L, d, q, kv = m.layers, m.width, m.heads * m.head_dim, m.kv_heads * m.head_dim
    return (
        ("queries", L, d, q),
        ("keys and values", 2 * L, d, kv),
        ("attention output", L, q, d),
        ("feed-forward in", (m.ffn_matrices - 1) * L, d, m.ffn_width),
        ("feed-forward out", L, m.ffn_width, d),
        ("output layer", 1, d, m.vocab),
    )


def layer_weight_flops(m: ModelShape, tokens: int) -> int:
    """Operations one layer spends multiplying ``tokens`` positions by its weight
    matrices."""
    tokens = checked_whole("tokens", tokens)
    return 2 * tokens * (attention_params(m) + ffn_params(m))


def layer_pair_flops(m: ModelShape, tokens: int) -> int:
    """Operations one layer spends on the allowed (causal) pairs of a ``tokens``-long
    sequence."""
    return 4 * m.heads * m.head_dim * causal_pairs(tokens)


def pair_share(m: ModelShape, tokens: int) -> float:
    """Fraction of one layer's operations spent on pairs of positions, between 0 and
    1."""
    pairs = layer_pair_flops(m, tokens)
    total = pairs + layer_weight_flops(m, tokens)
    return pairs / total if total else 0.0


def pairs_pass_weights_at(m: ModelShape) -> int:
    """Shortest sequence, in tokens, at which one layer's pair work exceeds its weight
    work."""
    # pair > weight  <=>  4*H*d * T(T+1)/2 > 2*T*W  <=>  T + 1 > W / (H*d)
    per_channel = attention_params(m) + ffn_params(m)
    channels = m.heads * m.head_dim
    return (
        per_channel // channels
    )  # the smallest T with (T + 1) * channels > per_channel


def decode_pair_flops(m: ModelShape, context: int) -> int:
    """Operations all layers spend on pairs when one new token reads ``context`` earlier
    ones."""
    context = checked_whole("context", context)
    return 4 * m.layers * m.heads * m.head_dim * context


def _multiplied(m: ModelShape) -> int:
    """Parameters a token's pass uses in the 2-a-number count: all of them but an
    untied input table, which is looked up (``memory.input_table_params``)."""
    return parameter_count(m) - input_table_params(m)


def decode_flops(m: ModelShape, context: int) -> int:
    """Operations to write one token after ``context`` tokens: two for every weight it
    uses (an untied input table is looked up, not multiplied), plus the pairs."""
    return 2 * _multiplied(m) + decode_pair_flops(m, context)


def prefill_flops(m: ModelShape, tokens: int, all_logits: bool = True) -> int:
    """Operations to read a prompt of ``tokens`` in one pass: every weight it uses for
    every token (an untied input table is looked up), plus every allowed pair in every
    layer. With ``all_logits=False`` the output layer runs at the last position only,
    the one whose chances are used."""
    tokens = checked_whole("tokens", tokens)
    unused = 0 if all_logits else head_flops(m, max(tokens - 1, 0))
    pairs = m.layers * layer_pair_flops(m, tokens)
    return 2 * _multiplied(m) * tokens + pairs - unused


def summary_flops_per_token(m: ModelShape, state_size: int = 16) -> int:
    """Operations a stack of running-summary layers spends on one more token: two
    multiply-adds per state number (update it, read it out), whatever came before."""
    state_size = checked_whole("state_size", state_size, minimum=1)
    return 4 * m.layers * m.width * state_size


def head_flops(m: ModelShape, positions: int) -> int:
    """Operations of the output layer (a vocabulary-by-width matrix) for ``positions``
    positions."""
    positions = checked_whole("positions", positions)
    return 2 * positions * m.vocab * m.width


def generation_flops(m: ModelShape, new_tokens: int, cache: bool = True) -> int:
    """Operations to write ``new_tokens`` one at a time from an empty row, with or
    without a key-value cache (the normalisations are left out).

    Step k has k positions in the row. With a cache it pushes one position through the
    layers and the output layer and reads the k keys and values it attends to; without
    one it pushes all k positions through the layers and redoes every causal pair among
    them, though only the last position needs the output layer."""
    n = checked_whole("new_tokens", new_tokens)
    positions = (
        n if cache else n * (n + 1) // 2
    )  # sum of positions pushed over the n steps
    layers = m.layers * layer_weight_flops(m, positions)
    if cache:
        pairs = (
            4 * m.layers * m.heads * m.head_dim * (n * (n + 1) // 2)
        )  # step k reads k positions
    else:
        pairs = (
            4 * m.layers * m.heads * m.head_dim * (n * (n + 1) * (n + 2) // 6)
        )  # step k redoes k(k+1)/2
    return layers + head_flops(m, n) + pairs


def generation_step_flops(m: ModelShape, step: int, cache: bool = True) -> int:
    """Operations of step ``step`` (counting from 1, with ``step`` positions in the row)
    of writing an answer from an empty row, as ``generation_flops`` counts them."""
    k = checked_whole("step", step, minimum=1)
    positions = 1 if cache else k
    pairs = k if cache else k * (k + 1) // 2
    pair_flops = 4 * m.layers * m.heads * m.head_dim * pairs
    return m.layers * layer_weight_flops(m, positions) + head_flops(m, 1) + pair_flops
