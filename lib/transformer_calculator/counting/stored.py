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
from functools import lru_cache

from transformer_arithmetic.search import last_true

from ..anatomy.formats import CacheAsModel, Unpacked
from ..anatomy.feedforward import Experts
from ..anatomy.layout import FLOAT32_BYTES, Block
from ..anatomy.matrices import Matrix, expert_matrices, matrices
from ..anatomy.attention_kinds import SparseLatentAttention
from ..anatomy.mixers import Attention, LatentAttention
from ..anatomy.model import Model

__all__ = [
    "weight_bytes",
    "packed_numbers",
    "read_bytes",
    "packed_numbers_read",
    "active_packed_numbers",
    "dequant_flops_read",
    "gathered_numbers",
    "matrix_bytes",
    "expert_kinds",
    "one_expert",
    "caching_kinds",
    "tables",
    "cache_token_bytes",
    "cache_bytes",
    "cache_bytes_per_token",
    "cache_bytes_per_token_past_windows",
    "longest_conversation",
    "cache_vectors",
    "attention_layers",
]


@lru_cache(maxsize=512)
def _packed(model: Model) -> tuple[Matrix, ...]:
    if isinstance(model.weights, Unpacked):
        return ()
    return tuple(m for m in matrices(model.layout) if model.weights.packs(m.role))


def packed_numbers(model: Model) -> int:
    """Weights held in the packed format (0 when nothing is packed)."""
    return sum(m.numbers for m in _packed(model))


@lru_cache(maxsize=4096)  # asked by every cost of a step, for the same stages
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
    """Every expert layer's part, each as often as layers hold it."""
    return [e for e, n in expert_kinds(model.layout) for _ in range(n)]


@lru_cache(maxsize=512)
def expert_kinds(layout) -> tuple[tuple[Experts, int], ...]:
    """Each distinct expert part of ``layout`` and how many layers hold it."""
    kinds: dict[Experts, int] = {}
    for b in layout.blocks:
        if isinstance(b.ffn, Experts):
            kinds[b.ffn] = kinds.get(b.ffn, 0) + 1
    return tuple(kinds.items())


@lru_cache(maxsize=2048)
def one_expert(model: Model, e: Experts) -> tuple[int, int]:
    """(bytes, packed numbers) of one expert of ``e`` in the model's format."""
    if not model.weights.packs("experts"):
        return e.expert_parameters * model.bytes_per_number, 0
    ms = expert_matrices(e)
    numbers = sum(m.numbers for m in ms)
    biases = (e.expert_parameters - numbers) * model.bytes_per_number
    return sum(model.weights.matrix_bytes(m) for m in ms) + biases, numbers


def matrix_bytes(model: Model, m: Matrix) -> int:
    """Bytes of ``m`` in the model's format (packed, or at the model's bytes)."""
    fmt = model.weights.part(m.role)
    if fmt is None:
        return m.numbers * model.bytes_per_number
    return fmt.matrix_bytes(m)


@lru_cache(maxsize=512)
def tables(model: Model) -> tuple[Matrix, ...]:
    """The tables a step gathers rows from instead of multiplying by them: an untied
    input table (a tied one is the head, multiplied whole) and a learned position
    table (read off the layout itself, so a model counted from its tensors has them
    too)."""
    layout = model.layout
    found = []
    if (not layout.tied or not layout.head) and layout.vocab:  # a first stage's too
        e = layout.embedding_width or layout.width
        found.append(Matrix(layout.vocab, e, 1, "embeddings", "embed_tokens"))
    if layout.positions:
        found.append(
            Matrix(layout.positions, layout.width, 1, "embeddings", "embed_positions")
        )
    return tuple(found)


def gathered_numbers(model: Model) -> int:
    """Numbers of the tables a step gathers rows from (no operation a number)."""
    return sum(m.numbers for m in tables(model))


def _unread_table_bytes(model: Model, tokens: int, positions: int) -> float:
    """Bytes of the gathered tables a step does not touch: it reads one row of the
    input table a token (at most every row) and one row of the position table a
    distinct position."""
    unread = 0.0
    for m in tables(model):
        rows = min(positions if m.name == "embed_positions" else tokens, m.rows)
        unread += matrix_bytes(model, m) * (m.rows - rows) / m.rows
    return unread


def read_bytes(model: Model, tokens: int, positions: int | None = None) -> int:
    """Bytes of weights one step carrying ``tokens`` tokens at ``positions`` distinct
    positions (``tokens`` unless given) reads: every matrix it multiplies by (for
    experts, those the tokens are expected to touch, routing uniform) and, of the
    tables it gathers from, only the rows its tokens and positions pick."""
    total = weight_bytes(model)
    untouched = _unread_table_bytes(
        model, tokens, tokens if positions is None else positions
    )
    for e, n in expert_kinds(model.layout):
        untouched += n * (e.count - e.touched(tokens)) * one_expert(model, e)[0]
    for b in model.layout.blocks:  # attention heads that are experts (JetMoE)
        m = b.mixer
        untouched += (m.parameters - m.read_parameters(tokens)) * model.bytes_per_number
    again = sum(  # a looped layer's weights, read again on each later pass
        (b.passes - 1) * b.parameters for b in model.layout.blocks if b.passes > 1
    ) * model.bytes_per_number
    return round(total - untouched) + again


def active_packed_numbers(model: Model) -> dict[str, float]:
    """Packed weights one token multiplies by, by the rate their format multiplies at
    (``fp4``, ``fp8``, ``bf16``): every packed matrix outside the experts, and the
    experts a token is routed to."""
    return dict(_active_packed(model))


@lru_cache(maxsize=4096)  # asked by every cost of a step, for the same stages
def _active_packed(model: Model) -> tuple[tuple[str, float], ...]:
    """``active_packed_numbers`` as pairs, kept for the next ask."""
    out: dict[str, float] = {}
    experts = expert_kinds(model.layout)
    for m in _packed(model):
        if m.role == "experts":
            continue
        key = model.weights.part(m.role).compute
        out[key] = out.get(key, 0.0) + m.numbers
    fmt = model.weights.part("experts")
    if fmt is not None and experts:
        chosen = sum(n * e.per_token * e.expert_parameters for e, n in experts)
        out[fmt.compute] = out.get(fmt.compute, 0.0) + chosen
    return tuple(out.items())


def dequant_flops_read(model: Model, tokens: int) -> float:
    """Operations a step carrying ``tokens`` tokens spends turning the packed weights it
    reads back into numbers (each one once a step, at its format's cost)."""
    total = 0.0
    for m in _packed(model):
        if m.role != "experts":
            total += model.weights.part(m.role).dequant_ops * m.numbers
    fmt = model.weights.part("experts")
    if fmt is not None:
        for e, n in expert_kinds(model.layout):
            total += n * fmt.dequant_ops * e.touched(tokens) * one_expert(model, e)[1]
    return total


def packed_numbers_read(model: Model, tokens: int) -> float:
    """Packed weights one step carrying ``tokens`` tokens reads back (each is turned
    back into a number once a step)."""
    total = float(packed_numbers(model))
    for e, n in expert_kinds(model.layout):
        total -= n * (e.count - e.touched(tokens)) * one_expert(model, e)[1]
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
    if type(m) is SparseLatentAttention:
        return [m.kv_rank, m.rope_dim] + ([m.index_dim] if m.own_indexer else [])
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
    for mixer, per_token, layers in caching_kinds(model):
        kept = math.ceil(mixer.kept_tokens(tokens) / block_size) * block_size
        kv += layers * (kept * per_token + model.cache.layer_bytes)
    return kv + model.layout.state_bytes(model.bytes_per_number)


def selector_token_bytes(model: Model, mixer: object) -> int:
    """Bytes of the part of a kept token's cache that every new token reads even when
    its attention reads fewer tokens (a sparse attention's indexer key; 0: none)."""
    n = mixer.selector_numbers
    if n == 0:
        return 0
    if isinstance(model.cache, CacheAsModel):
        return n * model.bytes_per_number
    return model.cache.vector_bytes(n, model.bytes_per_number)


def cache_read_bytes(model: Model, context: int) -> int:
    """Bytes of one conversation's cache a decode step reads after ``context`` tokens:
    every kept token of each layer (a sparse attention's chosen tokens, and its
    indexer's key of every kept one), the format's fixed scales and any
    running-summary state."""
    if context == 0:
        return 0
    kv = 0
    for mixer, per_token, layers in caching_kinds(model):
        kept, read = mixer.kept_tokens(context), mixer.read_tokens(context)
        selector = selector_token_bytes(model, mixer)
        kv += layers * (read * (per_token - selector) + kept * selector
                        + model.cache.layer_bytes)
    return kv + model.layout.state_bytes(model.bytes_per_number)


@lru_cache(maxsize=512)
def caching_kinds(model: Model) -> tuple[tuple[object, int, int], ...]:
    """Each distinct mixer that keeps a cache, the bytes a kept token adds to it, and
    how many layers hold it."""
    kinds: dict[object, list] = {}
    for b in model.layout.blocks:
        if b.mixer.cache_numbers:
            if b.mixer not in kinds:
                kinds[b.mixer] = [cache_token_bytes(model, b), 0]
            kinds[b.mixer][1] += 1
    return tuple((m, per, n) for m, (per, n) in kinds.items())


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
