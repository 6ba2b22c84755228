"""What a model holds in its formats, summed over its layout: the bytes of its weights
(packed or not), the bytes a step reads, the bytes of its cache, and the operations that
reading packed numbers back costs.

With both formats as the model's own numbers every figure equals the layout's own
(``Layout.weight_bytes``, ``Layout.cache_bytes``); a packed format changes only the
parts
it packs (``formats.py``, ``matrices.py``).
"""

from __future__ import annotations

import math

from transformer_arithmetic.search import last_true

from .formats import CacheAsModel, Unpacked
from .feedforward import Experts
from .layout import FLOAT32_BYTES, Block
from .matrices import Matrix, expert_matrices, matrices
from .mixers import Attention, LatentAttention
from .model import Model

__all__ = [
    "weight_bytes",
    "packed_numbers",
    "read_bytes",
    "packed_numbers_read",
    "cache_token_bytes",
    "cache_bytes",
    "cache_bytes_per_token",
    "cache_bytes_per_token_past_windows",
    "longest_conversation",
    "cache_vectors",
    "attention_layers",
]


def _packed(model: Model) -> list[Matrix]:
    if isinstance(model.weights, Unpacked):
        return []
    return [m for m in matrices(model.layout) if model.weights.packs(m.role)]


def packed_numbers(model: Model) -> int:
    """Weights held in the packed format (0 when nothing is packed)."""
    return sum(m.numbers for m in _packed(model))


def weight_bytes(model: Model) -> int:
    """Bytes of all the weights: packed matrices at their format's bytes, every other
    number at the model's bytes a number, float32 parts at four."""
    layout, bpn = model.layout, model.bytes_per_number
    packed = _packed(model)
    if not packed:
        return layout.weight_bytes(bpn)
    f32 = layout.float32_parameters
    rest = layout.parameters - sum(m.numbers for m in packed) - f32
    packed_bytes = sum(model.weights.matrix_bytes(m) for m in packed)
    return packed_bytes + rest * bpn + f32 * FLOAT32_BYTES


def _expert_layers(model: Model) -> list[Experts]:
    return [b.ffn for b in model.layout.blocks if isinstance(b.ffn, Experts)]


def _one_expert(model: Model, e: Experts) -> tuple[int, int]:
    """(bytes, packed numbers) of one expert of ``e`` in the model's format."""
    if not model.weights.packs("experts"):
        return e.expert_parameters * model.bytes_per_number, 0
    ms = expert_matrices(e)
    return sum(model.weights.matrix_bytes(m) for m in ms), sum(m.numbers for m in ms)


def read_bytes(model: Model, tokens: int) -> int:
    """Bytes of weights one step carrying ``tokens`` tokens reads: every weight for a
    dense model; for experts, those the tokens are expected to touch (uniform
    routing); a looped layer's once a pass."""
    total = weight_bytes(model)
    untouched = 0.0
    for e in _expert_layers(model):
        idle = e.count - e.touched(tokens)
        untouched += idle * _one_expert(model, e)[0]
    for b in model.layout.blocks:  # attention heads that are experts (JetMoE)
        m = b.mixer
        untouched += (m.parameters - m.read_parameters(tokens)) * model.bytes_per_number
    again = sum(  # a looped layer's weights, read again on each later pass
        (b.passes - 1) * b.parameters for b in model.layout.blocks
    ) * model.bytes_per_number
    return round(total - untouched) + again


def packed_numbers_read(model: Model, tokens: int) -> float:
    """Packed weights one step carrying ``tokens`` tokens reads back (each is turned
    back into a number once a step)."""
    total = float(packed_numbers(model))
    for e in _expert_layers(model):
        idle = e.count - e.touched(tokens)
        total -= idle * _one_expert(model, e)[1]
    return total


def cache_vectors(block: Block) -> list[int]:
    """Lengths of the vectors one token adds to ``block``'s cache: a key and a value per
    key-value head, or a latent and a shared rotary key; none for a running summary."""
    m = block.mixer
    if m.cache_numbers == 0:
        return []
    if type(m) is Attention:
        return [m.head_dim] * (2 * m.kv_heads)
    if type(m) is LatentAttention:
        return [m.kv_rank, m.rope_dim]
    raise ValueError(
        f"the cache vectors of a {type(m).__name__} layer are not known (a model "
        "counted by the transformers route keeps its cache in its own format)"
    )


def cache_token_bytes(model: Model, block: Block) -> int:
    """Bytes one kept token adds to ``block``'s cache in the model's cache format."""
    if isinstance(model.cache, CacheAsModel):
        return block.mixer.cache_numbers * model.bytes_per_number
    return sum(
        model.cache.vector_bytes(n, model.bytes_per_number)
        for n in cache_vectors(block)
    )


def attention_layers(model: Model) -> int:
    """Layers that keep a cache of tokens."""
    return sum(1 for b in model.layout.blocks if b.mixer.cache_numbers)


def cache_bytes(model: Model, tokens: int, block_size: int = 1) -> int:
    """Bytes one conversation of ``tokens`` tokens holds: each layer's kept tokens
    (rounded up to whole blocks of ``block_size`` tokens, as a paged cache allocates
    them), the format's fixed scales, and any running-summary state (none at 0)."""
    if tokens == 0:
        return 0
    kv = 0
    for b in model.layout.blocks:
        if b.mixer.cache_numbers:
            kept = math.ceil(b.mixer.kept_tokens(tokens) / block_size) * block_size
            kv += kept * cache_token_bytes(model, b) + model.cache.layer_bytes
    return kv + model.layout.state_bytes(model.bytes_per_number)


def cache_bytes_per_token(model: Model) -> int:
    """Bytes each of the first tokens adds (every attention layer still growing)."""
    return sum(cache_token_bytes(model, b) for b in model.layout.blocks)


def cache_bytes_per_token_past_windows(model: Model) -> int:
    """Bytes each token adds once every window is full."""
    return sum(
        cache_token_bytes(model, b)
        for b in model.layout.blocks
        if b.mixer.cache_cap is None
    )


def longest_conversation(model: Model, free: int, block_size: int = 1) -> int | None:
    """Most tokens one conversation can hold in ``free`` bytes; None when its cache
    stops growing and fits however long it gets."""
    layout = model.layout
    growth = cache_bytes_per_token_past_windows(model)
    whole = cache_bytes(model, max(layout.longest_window, 1), block_size)
    if growth == 0 and whole <= free:
        return None
    upper = layout.longest_window + block_size + (free // growth if growth else 0)
    return last_true(lambda n: cache_bytes(model, n, block_size) <= free, upper)
