"""The mixing part of a layer: how positions meet, and what that holds and costs.

Every kind meets one contract, ``Mixer``: its parameters; the numbers each kept token
adds to the cache and how many tokens it keeps; the fixed state it holds whatever the
length; the operations per allowed (query, key) pair; and the operations its state costs
a token. A kind whose attention reads only some of the tokens it keeps (DeepSeek's
sparse attention, ``attention_kinds.py``) also says how many it reads and what a new
token spends on them. Four kinds are built here:

- ``Attention``: query heads sharing key-value heads, over every earlier position or
  over a window of the last ``window`` positions (itself included), whose cache keeps
  ``window - 1`` tokens;
- ``LatentAttention`` (DeepSeek): one compressed vector and one shared rotary key cached
  a token, from which every head's keys and values are rebuilt;
- ``Mamba``: a running summary (a selective state-space layer) that keeps a causal
  filter's last inputs and a summary of fixed size, and no cache at all (Mamba-2 and
  the other running summaries are in ``recurrent.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from enum import Enum

from transformer_arithmetic.masks import causal_pairs, window_pairs

__all__ = [
    "MixerKind",
    "FixedState",
    "Mixer",
    "Attention",
    "LatentAttention",
    "Mamba",
]


class MixerKind(Enum):
    """What a layer uses to let positions affect each other."""

    ATTENTION = "attention"
    LATENT_ATTENTION = "latent attention"
    RUNNING_SUMMARY = "running summary"


@dataclass(frozen=True)
class FixedState:
    """Numbers a layer holds between tokens whatever the length: ``model_format`` at the
    model's bytes a number, ``float32`` at four bytes (``transformers`` keeps a running
    summary's recurrent state in float32)."""

    model_format: int
    float32: int

    def bytes(self, bytes_per_number: int) -> int:
        """Bytes of this state at ``bytes_per_number`` for the model-format part."""
        return self.model_format * bytes_per_number + self.float32 * 4


NO_STATE = FixedState(model_format=0, float32=0)
"""The fixed state of an attention layer: none."""


def _bias(present: bool, size: int) -> int:
    return size if present else 0


class Mixer(ABC):
    """The contract of a layer's mixing part (see the module's docstring)."""

    @property
    @abstractmethod
    def kind(self) -> MixerKind:
        """Which kind of mixing this is."""

    @property
    @abstractmethod
    def parameters(self) -> int:
        """Weights, biases and normalisation numbers of this part, a count."""

    @property
    def active_parameters(self) -> int:
        """Numbers of this part one token multiplies (all of them, unless its heads
        are experts a router picks)."""
        return self.parameters

    def read_parameters(self, tokens: int) -> float:
        """Numbers a step carrying ``tokens`` tokens is expected to read."""
        return self.parameters

    @property
    @abstractmethod
    def cache_numbers(self) -> int:
        """Numbers each kept token adds to this layer's cache (0: no cache)."""

    @property
    def stored_cache_numbers(self) -> int:
        """Numbers each kept token adds to ``transformers``' own cache of this layer."""
        return self.cache_numbers

    @property
    @abstractmethod
    def cache_cap(self) -> int | None:
        """Most tokens this layer's cache ever keeps; None if it keeps every token."""

    def kept_tokens(self, tokens: int) -> int:
        """Tokens this layer keeps (and a new token reads) after ``tokens`` tokens."""
        return tokens if self.cache_cap is None else min(tokens, self.cache_cap)

    @property
    @abstractmethod
    def pair_flops(self) -> int:
        """Operations for one allowed (query, key) pair, over every head (0: no
        pairs)."""

    @abstractmethod
    def prompt_pairs(self, tokens: int) -> int:
        """Allowed (query, key) pairs in a prompt of ``tokens`` tokens."""

    def decode_pair_flops(self, context: int) -> int:
        """Operations one new token spends on pairs after ``context`` tokens (every
        kept token's pair, unless a selection reads fewer)."""
        return self.pair_flops * self.kept_tokens(context)

    def prefill_pair_flops(self, tokens: int) -> int:
        """Operations a prompt of ``tokens`` tokens spends on its allowed pairs."""
        return self.pair_flops * self.prompt_pairs(tokens)

    def read_tokens(self, context: int) -> int:
        """Kept tokens whose cached vectors a new token's attention reads after
        ``context`` tokens (all it keeps, unless a selection reads fewer)."""
        return self.kept_tokens(context)

    @property
    def selector_numbers(self) -> int:
        """Numbers of ``cache_numbers`` that a new token reads for every kept token
        even when its attention reads fewer (a selector's keys; 0: none)."""
        return 0

    def decode_read_numbers(self, context: int) -> int:
        """Numbers of this layer's cache one new token reads after ``context``
        tokens."""
        kept, read = self.kept_tokens(context), self.read_tokens(context)
        return (
            read * (self.cache_numbers - self.selector_numbers)
            + kept * self.selector_numbers
        )

    @property
    @abstractmethod
    def state(self) -> FixedState:
        """Numbers held between tokens whatever the length."""

    @property
    @abstractmethod
    def state_flops(self) -> int:
        """Operations one token spends on the fixed state."""

    @abstractmethod
    def describe(self) -> str:
        """One phrase for the report."""


@dataclass(frozen=True)
class Attention(Mixer):
    """Attention with ``heads`` query heads sharing ``kv_heads`` key-value heads of
    ``head_dim`` channels.

    ``qkv_bias`` adds a bias to the query, key and value projections, ``out_bias`` to
    the output projection; ``qk_norm`` is the count of numbers in the query and key
    normalisations (0 for none). ``window``: the layer looks only at the last ``window``
    positions, itself included, so its cache keeps ``window - 1`` tokens (None: every
    position). ``stored_kv_heads``: key-value heads ``transformers`` keeps in its cache
    when it keeps other than the architecture needs (keys and values copied to every
    query head; 0: it keeps no cache and runs the whole text again for each token;
    None: as many as the architecture). ``sinks``: one learned number a query head
    that every row of scores also competes with (gpt-oss). ``out_gate``: the query
    projection is twice as wide, its second half a gate on each head's output
    (Qwen3-Next, Qwen3.5)."""

    width: int
    heads: int
    kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    out_bias: bool = False
    qk_norm: int = 0
    window: int | None = None
    stored_kv_heads: int | None = None
    sinks: bool = False
    out_gate: bool = False

    @property
    def kind(self) -> MixerKind:
        return MixerKind.ATTENTION

    @property
    def norm_spans_heads(self) -> bool:
        """True when the query and key norms run over every head at once (a scale a
        channel of every head: MiniMax-M2, OLMo 2), so that heads split over devices
        must sum their squares across them (one all-reduce a layer)."""
        both = self.heads + self.kv_heads
        return both > 4 and self.qk_norm >= both * self.head_dim

    @property
    def query_width(self) -> int:
        """Outputs of the query projection: the queries, and the gate when there is
        one."""
        return self.heads * self.head_dim * (2 if self.out_gate else 1)

    @cached_property
    def parameters(self) -> int:
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        qg = self.query_width
        weights = self.width * (qg + 2 * kv) + q * self.width
        biases = _bias(self.qkv_bias, qg + 2 * kv) + _bias(self.out_bias, self.width)
        return weights + biases + self.qk_norm + _bias(self.sinks, self.heads)

    @property
    def cache_numbers(self) -> int:
        """A key and a value per key-value head."""
        return 2 * self.kv_heads * self.head_dim

    @property
    def stored_cache_numbers(self) -> int:
        stored = self.kv_heads if self.stored_kv_heads is None else self.stored_kv_heads
        return 2 * stored * self.head_dim

    @property
    def cache_cap(self) -> int | None:
        return None if self.window is None else self.window - 1

    @property
    def pair_flops(self) -> int:
        """The score and adding the value: two multiply-adds per channel, every head."""
        return 4 * self.heads * self.head_dim

    def prompt_pairs(self, tokens: int) -> int:
        if self.window is None:
            return causal_pairs(tokens)
        return window_pairs(tokens, self.window)

    @property
    def state(self) -> FixedState:
        return NO_STATE

    @property
    def state_flops(self) -> int:
        return 0

    def describe(self) -> str:
        share = (
            "multi-head"
            if self.kv_heads == self.heads
            else "multi-query"
            if self.kv_heads == 1
            else f"{self.kv_heads} key-value heads"
        )
        window = f", window {self.window:,}" if self.window else ""
        gate = ", gated output" if self.out_gate else ""
        return (
            f"attention, {self.heads} heads of {self.head_dim} ({share}){window}{gate}"
        )


class _CausalAttention(Mixer):
    """What attention over every earlier token shares (latent attention, and
    attention_kinds.py's mixture of attention): the causal pairs, no fixed state."""

    def prompt_pairs(self, tokens: int) -> int:
        return causal_pairs(tokens)

    @property
    def state(self) -> FixedState:
        return NO_STATE

    @property
    def state_flops(self) -> int:
        return 0


@dataclass(frozen=True)
class LatentAttention(_CausalAttention):
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

    @property
    def kind(self) -> MixerKind:
        return MixerKind.LATENT_ATTENTION

    @cached_property
    def parameters(self) -> int:
        """Weights, biases and the two latent normalisations."""
        qk = self.nope_dim + self.rope_dim
        if self.q_rank is None:
            query = self.width * self.heads * qk
        else:
            query = (
                self.width * self.q_rank
                + _bias(self.bias, self.q_rank)
                + self.q_rank
                + self.q_rank * self.heads * qk
            )
        down = self.width * (self.kv_rank + self.rope_dim) + _bias(
            self.bias, self.kv_rank + self.rope_dim
        )
        up = self.kv_rank + self.kv_rank * self.heads * (self.nope_dim + self.v_dim)
        out = self.heads * self.v_dim * self.width + _bias(self.bias, self.width)
        return query + down + up + out

    @property
    def cache_numbers(self) -> int:
        """The compressed vector and the shared rotary key."""
        return self.kv_rank + self.rope_dim

    @property
    def cache_cap(self) -> int | None:
        return None

    @property
    def pair_flops(self) -> int:
        """Scores over the key channels, values over the value channels, every head."""
        return (
            2 * self.heads * (self.nope_dim + self.rope_dim)
            + 2 * self.heads * self.v_dim
        )

    def describe(self) -> str:
        return (
            f"latent attention, {self.heads} heads, caching {self.kv_rank} + "
            f"{self.rope_dim} numbers a token"
        )


class _RunningSummary(Mixer):
    """What every running summary shares (Mamba, Mamba-2, and recurrent.py's RWKV,
    RG-LRU and mLSTM): no cache that grows, no pairs, a fixed state."""

    @property
    def kind(self) -> MixerKind:
        return MixerKind.RUNNING_SUMMARY

    @property
    def cache_numbers(self) -> int:
        return 0

    @property
    def cache_cap(self) -> int | None:
        return 0

    @property
    def pair_flops(self) -> int:
        return 0

    def prompt_pairs(self, tokens: int) -> int:
        return 0


@dataclass(frozen=True)
class Mamba(_RunningSummary):
    """A selective state-space mixer (Mamba): the input is widened to ``inner``
    channels, each carrying ``state_size`` numbers of running summary, after a causal
    filter ``conv`` tokens long.

    ``dt_rank`` is the width of the step-size projection; ``inner_norms`` adds Jamba's
    three small normalisations (step size, B and C). Between tokens the layer holds the
    filter's window of ``conv`` inputs per channel and the ``inner * state_size``
    summary, in float32."""

    width: int
    inner: int
    state_size: int
    conv: int
    dt_rank: int
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = False

    @cached_property
    def parameters(self) -> int:
        """Projections, filter, step-size and decay numbers."""
        i, n = self.inner, self.state_size
        return (
            self.width * 2 * i
            + _bias(self.proj_bias, 2 * i)
            + i * self.conv
            + _bias(self.conv_bias, i)
            + i * (self.dt_rank + 2 * n)
            + self.dt_rank * i
            + i
            + i * n
            + i
            + i * self.width
            + _bias(self.proj_bias, self.width)
            + (self.dt_rank + 2 * n if self.inner_norms else 0)
        )

    @property
    def state(self) -> FixedState:
        """The filter's window (model format) and the summary (float32)."""
        return FixedState(
            model_format=self.inner * self.conv, float32=self.inner * self.state_size
        )

    @property
    def state_flops(self) -> int:
        """Two multiply-adds per state number: update it, read it out."""
        return 4 * self.inner * self.state_size

    def describe(self) -> str:
        return f"Mamba mixer, {self.inner:,} channels x {self.state_size} state numbers"
