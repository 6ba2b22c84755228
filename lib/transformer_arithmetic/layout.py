"""The exact parts of a published decoder, layer by layer, and what they hold and cost.

``ModelShape`` describes the book's plain decoder with a handful of sizes. Real model
families differ in details that change the counts: biases, learned position tables,
how many normalisations a block has, grouped, multi-query or latent (compressed)
attention, windowed layers, mixtures of experts, and running-summary (state-space)
layers in place of attention. A ``Layout`` lists those parts exactly, one ``Block``
per layer, so that the counts below are sums over what is really there:

- ``parameters``: every trainable number (tied matrices once);
- ``active_parameters``: the numbers one token's step multiplies (only the experts the
  router picks, plus everything outside the experts);
- the cache: each attention layer keeps keys and values for every earlier token, or
  only for the last ``window - 1`` on a windowed layer (a windowed layer looks at
  ``window`` positions, itself included); latent attention keeps one compressed
  vector a token instead; a running-summary layer keeps a fixed state however long
  the conversation is.

Counts are in numbers; the byte figures take ``bytes_per_number`` and keep two
exceptions that ``transformers`` makes: a running summary's recurrent state and
DeepSeek's router weights are held in float32 (4 bytes) whatever the model's type.
``families.py`` builds a ``Layout`` from a ``config.json``.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from .masks import causal_pairs, window_pairs

__all__ = [
    "FLOAT32_BYTES", "Attention", "LatentAttention", "Mamba", "Mamba2", "FeedForward", "Experts",
    "Block", "Layout", "expected_distinct_experts",
]

FLOAT32_BYTES = 4
"""Bytes of one float32 number: recurrent states and DeepSeek's router are kept at this size."""


def _bias(present: bool, size: int) -> int:
    return size if present else 0


@dataclass(frozen=True)
class Attention:
    """Attention with ``heads`` query heads sharing ``kv_heads`` key-value heads of ``head_dim`` channels.

    ``qkv_bias`` adds a bias to the query, key and value projections, ``out_bias`` to the
    output projection; ``qk_norm`` is the count of numbers in the query and key
    normalisations (0 for none). ``window``: the layer looks only at the last ``window``
    positions, itself included, so its cache keeps ``window - 1`` tokens.
    ``stored_kv_heads``: key-value heads ``transformers`` keeps in its cache when it keeps
    more than the architecture needs (keys and values copied out to every query head)."""

    width: int
    heads: int
    kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    out_bias: bool = False
    qk_norm: int = 0
    window: int | None = None
    stored_kv_heads: int | None = None

    @property
    def parameters(self) -> int:
        """Weights, biases and normalisation numbers of this attention part, a count."""
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        weights = self.width * (q + 2 * kv) + q * self.width
        return weights + _bias(self.qkv_bias, q + 2 * kv) + _bias(self.out_bias, self.width) + self.qk_norm

    @property
    def cache_numbers(self) -> int:
        """Numbers each token adds to this layer's cache: a key and a value per key-value head."""
        return 2 * self.kv_heads * self.head_dim

    @property
    def stored_cache_numbers(self) -> int:
        """Numbers each token adds to ``transformers``' own cache of this layer."""
        return 2 * (self.stored_kv_heads or self.kv_heads) * self.head_dim

    @property
    def pair_flops(self) -> int:
        """Operations for one allowed (query, key) pair: the score and adding the value, every head."""
        return 4 * self.heads * self.head_dim

    def describe(self) -> str:
        """One phrase: heads, sharing, window."""
        share = ("multi-head" if self.kv_heads == self.heads else
                 "multi-query" if self.kv_heads == 1 else f"{self.kv_heads} key-value heads")
        window = f", window {self.window:,}" if self.window else ""
        return f"attention, {self.heads} heads of {self.head_dim} ({share}){window}"


@dataclass(frozen=True)
class LatentAttention:
    """DeepSeek's latent attention: keys and values are rebuilt for every head from one
    compressed vector of ``kv_rank`` numbers a token plus one rotary key of ``rope_dim``
    numbers shared by all heads, and only those two are cached.

    Queries come through a compressed vector of ``q_rank`` numbers (or straight from the
    model's width when ``q_rank`` is None); each head's key has ``nope_dim + rope_dim``
    channels and its value ``v_dim``; ``bias`` adds biases to the two down-projections
    and the output projection."""

    width: int
    heads: int
    kv_rank: int
    q_rank: int | None
    nope_dim: int
    rope_dim: int
    v_dim: int
    bias: bool = False
    window = None

    @property
    def parameters(self) -> int:
        """Weights, biases and the two latent normalisations, a count."""
        qk = self.nope_dim + self.rope_dim
        if self.q_rank is None:
            query = self.width * self.heads * qk
        else:
            query = (self.width * self.q_rank + _bias(self.bias, self.q_rank) + self.q_rank
                     + self.q_rank * self.heads * qk)
        down = self.width * (self.kv_rank + self.rope_dim) + _bias(self.bias, self.kv_rank + self.rope_dim)
        up = self.kv_rank + self.kv_rank * self.heads * (self.nope_dim + self.v_dim)
        out = self.heads * self.v_dim * self.width + _bias(self.bias, self.width)
        return query + down + up + out

    @property
    def cache_numbers(self) -> int:
        """Numbers each token adds to the cache: the compressed vector and the shared rotary key."""
        return self.kv_rank + self.rope_dim

    stored_cache_numbers = cache_numbers

    @property
    def pair_flops(self) -> int:
        """Operations for one allowed pair: scores over the key channels, values over the value channels."""
        return 2 * self.heads * (self.nope_dim + self.rope_dim) + 2 * self.heads * self.v_dim

    def describe(self) -> str:
        """One phrase: heads and the cached latent."""
        return (f"latent attention, {self.heads} heads, caching {self.kv_rank} + {self.rope_dim} "
                "numbers a token")


@dataclass(frozen=True)
class Mamba:
    """A selective state-space mixer (Mamba): the input is widened to ``inner`` channels, each
    carrying ``state`` numbers of running summary, after a causal filter ``conv`` tokens long.

    ``dt_rank`` is the width of the step-size projection; ``inner_norms`` adds Jamba's three
    small normalisations (step size, B and C). Between tokens the layer holds the filter's
    window of ``conv`` inputs per channel and the ``inner * state`` summary, in float32."""

    width: int
    inner: int
    state: int
    conv: int
    dt_rank: int
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = False
    window = None
    cache_numbers = 0
    stored_cache_numbers = 0
    pair_flops = 0

    @property
    def parameters(self) -> int:
        """Projections, filter, step-size and decay numbers of this mixer, a count."""
        i = self.inner
        return (self.width * 2 * i + _bias(self.proj_bias, 2 * i)
                + i * self.conv + _bias(self.conv_bias, i)
                + i * (self.dt_rank + 2 * self.state)
                + self.dt_rank * i + i
                + i * self.state + i
                + i * self.width + _bias(self.proj_bias, self.width)
                + (self.dt_rank + 2 * self.state if self.inner_norms else 0))

    @property
    def state_numbers(self) -> int:
        """Numbers of the filter's window kept between tokens (at the model's bytes a number)."""
        return self.inner * self.conv

    @property
    def float32_state_numbers(self) -> int:
        """Numbers of the running summary kept between tokens (in float32)."""
        return self.inner * self.state

    @property
    def state_flops(self) -> int:
        """Operations one token spends on the summary: two multiply-adds per state number."""
        return 4 * self.inner * self.state

    def describe(self) -> str:
        """One phrase: channels and state."""
        return f"Mamba mixer, {self.inner:,} channels x {self.state} state numbers"


@dataclass(frozen=True)
class Mamba2:
    """A Mamba-2 mixer: ``heads`` heads of ``head_dim`` channels (``inner`` in all), each with a
    ``head_dim`` by ``state`` summary; B and C come in ``groups`` groups. The causal filter
    (``conv`` tokens) runs over the ``inner + 2 * groups * state`` channels of x, B and C."""

    width: int
    inner: int
    heads: int
    head_dim: int
    groups: int
    state: int
    conv: int
    conv_bias: bool = True
    proj_bias: bool = False
    window = None
    cache_numbers = 0
    stored_cache_numbers = 0
    pair_flops = 0

    @property
    def conv_channels(self) -> int:
        """Channels the causal filter runs over: x, B and C."""
        return self.inner + 2 * self.groups * self.state

    @property
    def parameters(self) -> int:
        """Projections, filter, per-head step, decay and skip numbers and the gated norm, a count."""
        c = self.conv_channels
        projected = self.inner + c + self.heads
        return (self.width * projected + _bias(self.proj_bias, projected)
                + c * self.conv + _bias(self.conv_bias, c)
                + 3 * self.heads + self.inner
                + self.inner * self.width + _bias(self.proj_bias, self.width))

    @property
    def state_numbers(self) -> int:
        """Numbers of the filter's window kept between tokens (at the model's bytes a number)."""
        return self.conv_channels * self.conv

    @property
    def float32_state_numbers(self) -> int:
        """Numbers of the running summaries kept between tokens (in float32)."""
        return self.heads * self.head_dim * self.state

    @property
    def state_flops(self) -> int:
        """Operations one token spends on the summaries: two multiply-adds per state number."""
        return 4 * self.heads * self.head_dim * self.state

    def describe(self) -> str:
        """One phrase: heads and state."""
        return f"Mamba-2 mixer, {self.heads} heads of {self.head_dim} x {self.state} state numbers"


@dataclass(frozen=True)
class FeedForward:
    """A feed-forward part from ``width`` to ``inner`` and back: two matrices, or three when
    ``gated`` (gate, up, down); ``bias`` adds a bias to each."""

    width: int
    inner: int
    gated: bool
    bias: bool = False

    @property
    def parameters(self) -> int:
        """Weights and biases, a count."""
        matrices = (3 if self.gated else 2) * self.width * self.inner
        return matrices + _bias(self.bias, (2 if self.gated else 1) * self.inner + self.width)

    active_parameters = parameters

    def describe(self) -> str:
        """One phrase: kind and width."""
        return f"{'gated' if self.gated else 'plain'} feed-forward of {self.inner:,}"


@dataclass(frozen=True)
class Experts:
    """A mixture of experts: ``count`` gated feed-forward experts of ``inner`` each, of which a
    router (one row of ``width`` numbers per expert) picks ``per_token`` for each token.

    ``shared`` is an expert every token uses (DeepSeek, Qwen2-MoE), ``shared_gate`` a
    learned scalar gate on it (Qwen2-MoE); ``router_float32`` marks a router held in float32."""

    width: int
    count: int
    per_token: int
    inner: int
    shared: FeedForward | None = None
    shared_gate: bool = False
    router_float32: bool = False

    @property
    def expert_parameters(self) -> int:
        """Weights of one expert (gate, up and down matrices), a count."""
        return 3 * self.width * self.inner

    @property
    def router_parameters(self) -> int:
        """Weights of the router, a count."""
        return self.count * self.width

    @property
    def always_used(self) -> int:
        """Numbers every token uses: the router, the shared expert and its gate."""
        shared = self.shared.parameters if self.shared else 0
        return self.router_parameters + shared + _bias(self.shared_gate, self.width)

    @property
    def parameters(self) -> int:
        """Every expert, the router and any shared expert, a count."""
        return self.count * self.expert_parameters + self.always_used

    @property
    def active_parameters(self) -> int:
        """Numbers one token multiplies: its ``per_token`` experts plus what every token uses."""
        return self.per_token * self.expert_parameters + self.always_used

    def read_parameters(self, tokens: int) -> float:
        """Numbers one step reads when it carries ``tokens`` tokens: the experts they are
        expected to touch (uniform routing) plus what every token uses."""
        return expected_distinct_experts(self.count, self.per_token, tokens) * self.expert_parameters + self.always_used

    def describe(self) -> str:
        """One phrase: experts, picks, shared."""
        shared = f" + a shared expert of {self.shared.inner:,}" if self.shared else ""
        return f"{self.count} experts of {self.inner:,}, {self.per_token} a token{shared}"


def expected_distinct_experts(count: int, per_token: int, tokens: int) -> float:
    """Experts, out of ``count``, that ``tokens`` tokens touch when each picks ``per_token``
    at random: count * (1 - (1 - per_token / count) ** tokens); exactly ``per_token`` for one token."""
    if tokens <= 1 or per_token >= count:
        return float(min(count, per_token * max(tokens, 0)))
    untouched = math.exp(tokens * math.log1p(-per_token / count))
    return count * (1.0 - untouched)


Mixer = Attention | LatentAttention | Mamba | Mamba2
FeedForwardPart = FeedForward | Experts


@dataclass(frozen=True)
class Block:
    """One layer: a mixer (attention or a running summary), an optional feed-forward part, and
    ``norms`` numbers of normalisation (scales and biases of every norm in the block)."""

    mixer: Mixer
    ffn: FeedForwardPart | None
    norms: int

    @property
    def parameters(self) -> int:
        """Every trainable number in the block, a count."""
        return self.mixer.parameters + (self.ffn.parameters if self.ffn else 0) + self.norms

    @property
    def active_parameters(self) -> int:
        """Numbers one token's step multiplies in this block, a count."""
        return self.mixer.parameters + (self.ffn.active_parameters if self.ffn else 0) + self.norms

    def read_parameters(self, tokens: int) -> float:
        """Numbers a step carrying ``tokens`` tokens reads from this block (experts expected to be touched)."""
        ffn = 0.0 if self.ffn is None else (
            self.ffn.read_parameters(tokens) if isinstance(self.ffn, Experts) else self.ffn.parameters)
        return self.mixer.parameters + ffn + self.norms

    @property
    def kept(self) -> int | None:
        """Tokens this layer's cache keeps at most (``window - 1``), or None if it keeps them all."""
        return None if self.mixer.window is None else self.mixer.window - 1

    def kept_at(self, tokens: int) -> int:
        """Tokens this layer's cache holds (and a new token reads) after ``tokens`` tokens."""
        return tokens if self.kept is None else min(tokens, self.kept)

    def cache_numbers_at(self, tokens: int) -> int:
        """Numbers this layer's key-value cache holds after ``tokens`` tokens."""
        return self.kept_at(tokens) * self.mixer.cache_numbers

    def state_bytes(self, bytes_per_number: int) -> int:
        """Bytes of running-summary state this layer holds, whatever the length (0 for attention)."""
        return (getattr(self.mixer, "state_numbers", 0) * bytes_per_number
                + getattr(self.mixer, "float32_state_numbers", 0) * FLOAT32_BYTES)


@dataclass(frozen=True)
class Layout:
    """Every part of a decoder: token embeddings, an optional learned position table
    (``positions`` rows), an optional normalisation right after the embeddings
    (``embedding_norm`` numbers), the blocks, the final normalisation (``final_norm``
    numbers) and the output head (its own matrix unless ``tied``, with a bias if ``head_bias``).

    ``embedding_width`` differs from ``width`` only for OPT's small models, whose
    embeddings are narrower and projected in and out of the blocks."""

    vocab: int
    width: int
    blocks: tuple[Block, ...]
    tied: bool
    final_norm: int
    positions: int = 0
    embedding_norm: int = 0
    embedding_width: int | None = None
    head_bias: bool = False
    family: str = "decoder"
    norm: str = "RMSNorm"

    # --- parameters ------------------------------------------------------------------------

    def _outside_blocks(self) -> int:
        e = self.embedding_width or self.width
        embeddings = self.vocab * e * (1 if self.tied else 2)
        projections = 2 * self.width * e if e != self.width else 0
        return (embeddings + projections + self.positions * self.width + self.embedding_norm
                + self.final_norm + _bias(self.head_bias, self.vocab))

    @cached_property
    def parameters(self) -> int:
        """Every trainable number, tied matrices counted once."""
        return self._outside_blocks() + sum(b.parameters for b in self.blocks)

    @cached_property
    def active_parameters(self) -> int:
        """Numbers one token's step uses: all but the experts the router does not pick."""
        return self._outside_blocks() + sum(b.active_parameters for b in self.blocks)

    @cached_property
    def float32_parameters(self) -> int:
        """Numbers held in float32 whatever the model's type (DeepSeek's routers)."""
        return sum(b.ffn.router_parameters for b in self.blocks
                   if isinstance(b.ffn, Experts) and b.ffn.router_float32)

    def weight_bytes(self, bytes_per_number: int) -> int:
        """Bytes of all the weights."""
        f32 = self.float32_parameters
        return (self.parameters - f32) * bytes_per_number + f32 * FLOAT32_BYTES

    def read_bytes(self, bytes_per_number: int, tokens: int) -> int:
        """Bytes of weights one step reads when it carries ``tokens`` tokens at once (all of
        them for a dense model; for experts, those the tokens are expected to touch)."""
        if not self.has_experts:
            return self.weight_bytes(bytes_per_number)
        f32 = self.float32_parameters
        numbers = self._outside_blocks() + sum(b.read_parameters(tokens) for b in self.blocks)
        return round((numbers - f32) * bytes_per_number + f32 * FLOAT32_BYTES)

    @cached_property
    def has_experts(self) -> bool:
        """True if any layer is a mixture of experts."""
        return any(isinstance(b.ffn, Experts) for b in self.blocks)

    # --- the cache -------------------------------------------------------------------------

    def state_bytes(self, bytes_per_number: int) -> int:
        """Bytes of running-summary state a conversation holds, whatever its length."""
        return sum(b.state_bytes(bytes_per_number) for b in self.blocks)

    def cache_bytes(self, bytes_per_number: int, tokens: int) -> int:
        """Bytes one conversation of ``tokens`` tokens holds: keys and values (each windowed
        layer only its last ``window - 1``) plus any running-summary state (none at 0 tokens)."""
        if tokens == 0:
            return 0
        kv = sum(b.cache_numbers_at(tokens) for b in self.blocks) * bytes_per_number
        return kv + self.state_bytes(bytes_per_number)

    def stored_cache_bytes(self, bytes_per_number: int, tokens: int) -> int:
        """Bytes ``transformers``' own cache holds after ``tokens`` tokens (it may keep more than
        the architecture needs)."""
        if tokens == 0:
            return 0
        kv = sum(b.kept_at(tokens) * b.mixer.stored_cache_numbers for b in self.blocks) * bytes_per_number
        return kv + self.state_bytes(bytes_per_number)

    def cache_bytes_per_token(self, bytes_per_number: int) -> int:
        """Bytes each of the first tokens adds (every attention layer still growing)."""
        return sum(b.mixer.cache_numbers for b in self.blocks) * bytes_per_number

    def cache_bytes_per_token_past_windows(self, bytes_per_number: int) -> int:
        """Bytes each token adds once every window is full (only the unwindowed layers grow)."""
        return sum(b.mixer.cache_numbers for b in self.blocks if b.kept is None) * bytes_per_number

    @cached_property
    def longest_window(self) -> int:
        """Tokens after which every windowed layer's cache stops growing (0 without windows)."""
        return max((b.kept for b in self.blocks if b.kept is not None), default=0)

    def longest_conversation(self, bytes_per_number: int, free: int) -> int | None:
        """Most tokens one conversation can hold in ``free`` bytes; None when its cache stops
        growing (every layer windowed or a running summary) and fits however long it gets."""
        growth = self.cache_bytes_per_token_past_windows(bytes_per_number)
        if growth == 0 and self.cache_bytes(bytes_per_number, max(self.longest_window, 1)) <= free:
            return None
        return _largest(lambda n: self.cache_bytes(bytes_per_number, n) <= free,
                        upper=self.longest_window + 1 + (free // growth if growth else 0))

    # --- work ------------------------------------------------------------------------------

    def decode_pair_flops(self, context: int) -> int:
        """Operations every attention layer spends on pairs when one new token reads the
        ``context`` earlier ones (a windowed layer reads at most ``window - 1`` of them)."""
        return sum(b.mixer.pair_flops * b.kept_at(context) for b in self.blocks)

    def prefill_pair_flops(self, tokens: int) -> int:
        """Operations every attention layer spends on the allowed pairs of a ``tokens``-long prompt."""
        return sum(b.mixer.pair_flops * (causal_pairs(tokens) if b.mixer.window is None
                                         else window_pairs(tokens, b.mixer.window)) for b in self.blocks)

    @cached_property
    def state_flops(self) -> int:
        """Operations the running summaries spend on one more token."""
        return sum(getattr(b.mixer, "state_flops", 0) for b in self.blocks)

    def pairs_pass_weights_at(self) -> int | None:
        """Shortest sequence, in tokens, at which the pair work of all attention layers over the
        whole sequence exceeds the work of the blocks' weights for it; None if it never does
        (no attention, or windows that cap the pair work below the weight work)."""
        weights = 2 * sum(b.active_parameters - b.norms for b in self.blocks)  # operations a token

        def passes(n: int) -> bool:
            return self.prefill_pair_flops(n) > weights * n

        final_rate = sum(b.mixer.pair_flops * (b.mixer.window or 0) for b in self.blocks)
        if all(b.mixer.pair_flops == 0 for b in self.blocks):
            return None
        if all(b.mixer.window for b in self.blocks if b.mixer.pair_flops) and final_rate <= weights:
            return None
        upper = 1
        while not passes(upper):
            upper *= 2
        return _largest(lambda n: not passes(n), upper=upper) + 1

    # --- single-part views (only when every layer has the same part) -------------------------

    def uniform(self, part: Callable[[Block], object], what: str):
        """The one ``part`` all blocks share, or a ValueError saying the layers differ."""
        parts = {part(b) for b in self.blocks}
        parts.discard(None)
        if not parts:
            raise ValueError(f"{self.family} has no {what}")
        if len(parts) != 1:
            raise ValueError(f"{self.family}'s layers do not all have the same {what}: "
                             "count the whole model with parameter_count")
        return parts.pop()

    def describe(self) -> list[str]:
        """The layers in words, one line per run of identical layers."""
        lines: list[str] = []
        run_start = 0
        for i in range(1, len(self.blocks) + 1):
            if i == len(self.blocks) or self.blocks[i] != self.blocks[run_start]:
                b = self.blocks[run_start]
                where = f"layer {run_start}" if i - run_start == 1 else f"layers {run_start}-{i - 1}"
                ffn = f"; {b.ffn.describe()}" if b.ffn else ""
                lines.append(f"{where}: {b.mixer.describe()}{ffn}")
                run_start = i
        if len(lines) > 6:  # a repeating pattern: say how many layers of each kind instead
            kinds: dict[str, int] = {}
            for b in self.blocks:
                key = b.mixer.describe() + (f"; {b.ffn.describe()}" if b.ffn else "")
                kinds[key] = kinds.get(key, 0) + 1
            lines = [f"{n} layers: {k}" for k, n in kinds.items()]
        return lines


def _largest(ok: Callable[[int], bool], upper: int) -> int:
    """The largest n in [0, upper] with ok(n), for an ``ok`` that is true up to some n and false after."""
    lo, hi = 0, max(upper, 0)
    if ok(hi):
        return hi
    while hi - lo > 1:  # ok(lo) holds (ok(0) is taken as true), ok(hi) does not
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo
