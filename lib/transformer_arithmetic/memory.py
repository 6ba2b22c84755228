"""Parameters and memory: what a model, a training step and a conversation hold, in
bytes."""

from __future__ import annotations

from .checks import checked_whole
from .shapes import Accelerator, ModelShape

__all__ = [
    "attention_params",
    "ffn_params",
    "parameter_count",
    "input_table_params",
    "weight_bytes",
    "training_memory",
    "kv_bytes_per_token",
    "kv_cache_bytes",
    "serving_bytes",
    "memory_left", "longest_conversation",
    "conversations_that_fit",
    "score_grid_bytes",
    "summary_state_bytes",
    "hybrid_cache_bytes",
    "layer_activation_bytes",
    "activation_bytes",
    "top_activation_bytes",
    "logits_bytes",
    "packed_bits_per_weight",
    "loss_bytes_per_logit",
]


def attention_params(m: ModelShape) -> int:
    """Weights of one attention part (query, key, value and output matrices), a
    count."""
    q_and_out = 2 * m.width * m.heads * m.head_dim
    k_and_v = 2 * m.width * m.kv_heads * m.head_dim
    return q_and_out + k_and_v


def ffn_params(m: ModelShape) -> int:
    """Weights of one feed-forward part (two matrices, or three when gated), a count."""
    return m.ffn_matrices * m.width * m.ffn_width


def _norm_params(m: ModelShape) -> int:
    """Numbers of one normalisation: a scale per channel, and a bias for LayerNorm."""
    return m.norm_numbers * m.width


def parameter_count(m: ModelShape) -> int:
    """Trainable numbers in the whole model: embeddings, every block (attention,
    feed-forward and two normalisations), the final norm, the head."""
    embeddings = m.embedding_tables * m.vocab * m.width
    block = attention_params(m) + ffn_params(m) + 2 * _norm_params(m)
    return embeddings + m.layers * block + _norm_params(m)


def input_table_params(m: ModelShape) -> int:
    """Numbers of the input table that a token looks up and no multiply uses, a count:
    the vocabulary-by-width table when it is the input's own (untied), none when it is
    shared with the output layer, whose multiply uses every number of it."""
    return 0 if m.tied_embeddings else m.vocab * m.width


def weight_bytes(m: ModelShape) -> int:
    """Bytes the weights occupy at ``m.bytes_per_number`` bytes each."""
    return parameter_count(m) * m.bytes_per_number


def training_memory(
    m: ModelShape,
    batch: int = 8,
    seq_len: int = 512,
    keep_scores: bool = False,
    dropout: bool = False,
    optimizer_states: int = 2,
    state_bytes: int = 4,
    master_bytes: int = 4,
    logit_bytes: int = 4,
    gradient_bytes: int | None = None,
) -> dict[str, int]:
    """Bytes one training step holds, in six parts: weights at ``m.bytes_per_number``;
    gradients at ``gradient_bytes`` (None: as the weights); the optimiser's
    ``optimizer_states`` numbers per parameter at ``state_bytes``; a master copy of the
    weights at ``master_bytes`` (none when the weights are already held in that many
    bytes or more); the activations kept for the backward pass (every layer's,
    ``activation_bytes``, by default as today's training keeps them: no dropout, score
    grids never stored; and the inputs of the final norm and the output layer,
    ``top_activation_bytes``); and the logits the loss reads (``logits_bytes`` at
    ``logit_bytes``; ``loss_bytes_per_logit`` for the loss's peak)."""
    p = parameter_count(m)
    checked_whole("optimizer_states", optimizer_states)
    checked_whole("state_bytes", state_bytes, minimum=1)
    checked_whole("master_bytes", master_bytes, minimum=1)
    grads = m.bytes_per_number if gradient_bytes is None else gradient_bytes
    checked_whole("gradient_bytes", grads, minimum=1)
    return {
        "weights": p * m.bytes_per_number,
        "gradients": p * grads,
        "optimiser": p * optimizer_states * state_bytes,
        "master copy": p * master_bytes if master_bytes > m.bytes_per_number else 0,
        "activations": activation_bytes(
            m, batch, seq_len, keep_scores=keep_scores, dropout=dropout
        )
        + top_activation_bytes(m, batch, seq_len),
        "logits": logits_bytes(m, batch, seq_len, logit_bytes),
    }


def kv_bytes_per_token(m: ModelShape) -> int:
    """Bytes of keys and values one token adds to the cache, over all layers."""
    return 2 * m.layers * m.kv_heads * m.head_dim * m.bytes_per_number


def kv_cache_bytes(m: ModelShape, tokens: int, window: int | None = None) -> int:
    """Bytes of cache one conversation of ``tokens`` holds: every token's keys and
    values, or under a ``window`` of W positions (a query sees itself and the W - 1
    before it) the last W - 1 only, all the next token reads, as transformers'
    ``DynamicSlidingWindowLayer`` keeps them (its static layer allocates W slots, one
    for the incoming token, as a static cache does for full attention)."""
    tokens = checked_whole("tokens", tokens)
    if window is not None:
        tokens = min(tokens, checked_whole("window", window, minimum=1) - 1)
    return tokens * kv_bytes_per_token(m)


def serving_bytes(m: ModelShape, tokens: int, conversations: int = 1) -> int:
    """Bytes to serve ``conversations`` at once, each ``tokens`` long: one copy of the
    weights plus one cache each."""
    conversations = checked_whole("conversations", conversations)
    return weight_bytes(m) + conversations * kv_cache_bytes(m, tokens)


def memory_left(acc: Accelerator, weights: int) -> int:
    """Bytes of ``acc``'s memory left once ``weights`` bytes of weights are loaded (an
    error if they do not fit)."""
    free = acc.memory_bytes - weights
    if free < 0:
        raise ValueError(f"the weights ({weights} bytes) do not fit in "
                         f"{acc.memory_bytes} bytes")
    return free


def longest_conversation(m: ModelShape, acc: Accelerator) -> int:
    """Most tokens one conversation can hold in the cache once the weights are
    loaded."""
    return memory_left(acc, weight_bytes(m)) // kv_bytes_per_token(m)


def conversations_that_fit(m: ModelShape, acc: Accelerator, tokens: int) -> int:
    """Conversations of ``tokens`` each whose caches fit beside one copy of the
    weights."""
    tokens = checked_whole("tokens", tokens, minimum=1)
    return longest_conversation(m, acc) // tokens


def score_grid_bytes(tokens: int, bytes_per_number: int = 2) -> int:
    """Bytes of one head's full grid of attention scores, ``tokens`` by ``tokens``."""
    tokens = checked_whole("tokens", tokens)
    bytes_per_number = checked_whole("bytes_per_number", bytes_per_number, minimum=1)
    return tokens * tokens * bytes_per_number


def summary_state_bytes(m: ModelShape, state_size: int = 16) -> int:
    """Bytes a stack of running-summary (state-space) layers holds: ``state_size``
    numbers per channel per layer, however long the conversation."""
    state_size = checked_whole("state_size", state_size, minimum=1)
    return m.layers * m.width * state_size * m.bytes_per_number


def hybrid_cache_bytes(
    m: ModelShape, tokens: int, attention_layers: int, state_size: int = 16
) -> int:
    """Bytes a hybrid holds: a cache in ``attention_layers`` layers, a running summary
    in the rest."""
    attention_layers = checked_whole("attention_layers", attention_layers)
    if attention_layers > m.layers:
        raise ValueError(
            f"attention_layers={attention_layers} is more than the model's {m.layers} "
            "layers"
        )
    per_layer_cache = kv_cache_bytes(m, tokens) // m.layers
    per_layer_state = summary_state_bytes(m, state_size) // m.layers
    return (
        attention_layers * per_layer_cache
        + (m.layers - attention_layers) * per_layer_state
    )


def layer_activation_bytes(
    m: ModelShape,
    batch: int,
    seq_len: int,
    *,
    keep_scores: bool = False,
    dropout: bool = False,
) -> dict[str, int]:
    """Bytes one layer keeps for the backward pass, by tensor, counted as Korthikanti et
    al. (2022) count them: activations at ``m.bytes_per_number`` bytes, dropout masks at
    one byte.

    For their layer (LayerNorm, plain multi-head attention, a two-matrix feed-forward
    part of width 4h, dropout) the parts add up to s*b*h*(34 + 5*a*s/h) bytes at two
    bytes a number, and to s*b*h*34 without the score grids (``keep_scores=False``:
    recomputed, or never stored by a fused attention kernel). Grouped keys and values
    are kept at their own width; a gated feed-forward part keeps four inner vectors
    (gate, up, activated gate, product) instead of two."""
    batch = checked_whole("batch", batch, minimum=1)
    seq_len = checked_whole("seq_len", seq_len, minimum=1)
    tokens = batch * seq_len
    n = m.bytes_per_number
    queries, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    grid = (
        m.heads * seq_len * tokens
    )  # one score per head per pair of positions, per sequence
    parts = {
        "normalisation inputs": 2 * tokens * m.width * n,
        "attention input": tokens * m.width * n,
        "queries and keys": tokens * (queries + kv) * n,
        "values": tokens * kv * n,
        "attention output": tokens * queries * n,
        "feed-forward input": tokens * m.width * n,
        "feed-forward inner": (4 if m.gated_ffn else 2) * tokens * m.ffn_width * n,
    }
    if dropout:
        parts["dropout masks"] = 2 * tokens * m.width
    if keep_scores:
        parts["attention weights"] = grid * n
        if dropout:
            parts["attention dropout"] = grid * (1 + n)  # its mask, and its output
    return parts


def activation_bytes(
    m: ModelShape,
    batch: int,
    seq_len: int,
    *,
    keep_scores: bool = False,
    dropout: bool = False,
) -> int:
    """Bytes all layers keep for the backward pass (``layer_activation_bytes`` times the
    layers)."""
    per_layer = layer_activation_bytes(
        m, batch, seq_len, keep_scores=keep_scores, dropout=dropout
    )
    return m.layers * sum(per_layer.values())


def top_activation_bytes(m: ModelShape, batch: int, seq_len: int) -> int:
    """Bytes kept above the last layer for the backward pass: the final
    normalisation's input and the output layer's input, a width-d vector each for
    every position, at ``m.bytes_per_number`` bytes."""
    batch = checked_whole("batch", batch, minimum=1)
    seq_len = checked_whole("seq_len", seq_len, minimum=1)
    return 2 * batch * seq_len * m.width * m.bytes_per_number


def logits_bytes(
    m: ModelShape, batch: int, seq_len: int, bytes_per_number: int = 4
) -> int:
    """Bytes of the logits the loss reads: one score per word of the vocabulary for
    every position of the batch, at ``bytes_per_number`` bytes (4: the loss is taken in
    32-bit floats)."""
    batch = checked_whole("batch", batch, minimum=1)
    seq_len = checked_whole("seq_len", seq_len, minimum=1)
    bytes_per_number = checked_whole("bytes_per_number", bytes_per_number, minimum=1)
    return batch * seq_len * m.vocab * bytes_per_number


def packed_bits_per_weight(
    bits: int, group_size: int, scale_bits: int, zero_bits: int = 0
) -> float:
    """Bits one weight takes when it is stored in ``bits`` bits and every group of
    ``group_size`` weights shares a scale of ``scale_bits`` and a zero point of
    ``zero_bits``: bits + (scale_bits + zero_bits) / group_size."""
    bits = checked_whole("bits", bits, minimum=1)
    group_size = checked_whole("group_size", group_size, minimum=1)
    scale_bits = checked_whole("scale_bits", scale_bits)
    zero_bits = checked_whole("zero_bits", zero_bits)
    return bits + (scale_bits + zero_bits) / group_size


def loss_bytes_per_logit(m: ModelShape) -> int:
    """Bytes each logit costs at the loss's peak, ``cross_entropy(logits.float())``
    in the backward pass: the logit at ``m.bytes_per_number`` (still held by the
    training loop), the 4-byte log-chance the loss kept, the 4-byte gradient arriving
    at it and the 4-byte gradient it hands back (the forward's 4-byte upcast copy is
    freed by then). A loop that drops its logits before the backward pass holds 12."""
    return m.bytes_per_number + 4 + 4 + 4
