"""Layers that carry a running summary other than Mamba's, as ``transformers`` builds
them: each meets the ``Mixer`` contract (no cache that grows, a fixed state) or the
``FeedForwardPart`` contract.

- ``Mamba2``: Mamba-2's state-space mixer, a summary a head;
- ``RwkvTimeMix`` and ``RwkvChannelMix``: RWKV-4's two halves of a block (a decaying
  weighted sum of past values, and a feed-forward part that mixes in the previous
  token);
- ``RgLru``: RecurrentGemma's (Griffin's) recurrent block, a short causal filter and a
  real-gated linear recurrence;
- ``MLstm``: xLSTM's matrix-memory layer, a key-value memory per head that decays and
  is written through gates;
- ``GatedDeltaNet``: Qwen3-Next's and Qwen3.5's linear attention, a key-by-value
  memory per head that decays and is corrected by the delta rule (Yang et al.'s Gated
  DeltaNet), after a short causal filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .feedforward import DensePart
from .mixers import FixedState, _bias, _RunningSummary

__all__ = ["Mamba2", "RwkvTimeMix", "RwkvChannelMix", "RgLru", "MLstm",
           "GatedDeltaNet"]


@dataclass(frozen=True)
class Mamba2(_RunningSummary):
    """A Mamba-2 mixer: ``heads`` heads of ``head_dim`` channels (``inner`` in all),
    each with a ``head_dim`` by ``state_size`` summary; B and C come in ``groups``
    groups. The causal filter (``conv`` tokens) runs over the ``inner + 2 * groups *
    state_size`` channels of x, B and C."""

    width: int
    inner: int
    heads: int
    head_dim: int
    groups: int
    state_size: int
    conv: int
    conv_bias: bool = True
    proj_bias: bool = False

    @property
    def conv_channels(self) -> int:
        """Channels the causal filter runs over: x, B and C."""
        return self.inner + 2 * self.groups * self.state_size

    @cached_property
    def parameters(self) -> int:
        """Projections, filter, per-head step, decay and skip numbers and the gated
        norm."""
        c = self.conv_channels
        projected = self.inner + c + self.heads
        return (
            self.width * projected
            + _bias(self.proj_bias, projected)
            + c * self.conv
            + _bias(self.conv_bias, c)
            + 3 * self.heads
            + self.inner
            + self.inner * self.width
            + _bias(self.proj_bias, self.width)
        )

    @property
    def state(self) -> FixedState:
        """The filter's window (model format) and every head's summary (float32)."""
        return FixedState(
            model_format=self.conv_channels * self.conv,
            float32=self.heads * self.head_dim * self.state_size,
        )

    @property
    def state_flops(self) -> int:
        """Two multiply-adds per state number: update it, read it out."""
        return 4 * self.heads * self.head_dim * self.state_size

    def describe(self) -> str:
        return (
            f"Mamba-2 mixer, {self.heads} heads of {self.head_dim} x {self.state_size} "
            "state numbers"
        )


@dataclass(frozen=True)
class RwkvTimeMix(_RunningSummary):
    """RWKV-4's time mix (``RwkvSelfAttention``): key, value and receptance
    projections from ``width`` to ``inner`` channels and an output projection back, a
    decay and a bonus per channel, and three token-shift mixing vectors.

    Between tokens a layer holds the previous token's input to each half of the block
    (``width`` numbers each, at the model's format) and, in float32, the running
    numerator, denominator and largest exponent (``width`` numbers each: transformers
    keeps them at the model's width)."""

    width: int
    inner: int

    @cached_property
    def parameters(self) -> int:
        return 4 * self.width * self.inner + 2 * self.inner + 3 * self.width

    @property
    def state(self) -> FixedState:
        return FixedState(model_format=2 * self.width, float32=3 * self.width)

    @property
    def state_flops(self) -> int:
        """Two multiply-adds for each of the numerator and denominator channels."""
        return 8 * self.inner

    def describe(self) -> str:
        return f"RWKV time mix of {self.inner:,} channels"


@dataclass(frozen=True)
class RwkvChannelMix(DensePart):
    """RWKV-4's channel mix (``RwkvFeedForward``): a key projection to ``inner``
    channels and a value projection back, a receptance gate of ``width`` by ``width``,
    and two token-shift mixing vectors."""

    width: int
    inner: int

    @cached_property
    def parameters(self) -> int:
        return 2 * self.width * self.inner + self.width**2 + 2 * self.width

    def describe(self) -> str:
        return f"RWKV channel mix of {self.inner:,}"


@dataclass(frozen=True)
class RgLru(_RunningSummary):
    """RecurrentGemma's recurrent block (``RecurrentGemmaRecurrentBlock``): two
    projections from ``width`` to ``inner`` channels (one gates the other), a causal
    filter ``conv`` tokens long over one of them, the real-gated linear recurrence
    (RG-LRU: an input gate and a recurrence gate, block-diagonal in ``heads`` blocks,
    and a decay per channel) and a projection back, every projection with a bias.

    Between tokens it holds the filter's last ``conv - 1`` inputs (the model's format)
    and the recurrence's ``inner`` numbers (float32)."""

    width: int
    inner: int
    heads: int
    conv: int

    @cached_property
    def parameters(self) -> int:
        block = self.inner // self.heads
        projections = 3 * self.width * self.inner + 2 * self.inner + self.width
        gates = 2 * self.heads * block * block + 2 * self.inner
        return projections + self.inner * self.conv + self.inner + gates + self.inner

    @property
    def state(self) -> FixedState:
        return FixedState(model_format=self.inner * (self.conv - 1), float32=self.inner)

    @property
    def state_flops(self) -> int:
        """Two multiply-adds a channel: decay the state, add the gated input."""
        return 4 * self.inner

    def describe(self) -> str:
        return f"RG-LRU recurrent block of {self.inner:,} channels"


@dataclass(frozen=True)
class MLstm(_RunningSummary):
    """xLSTM's mLSTM layer (``xLSTMLayer``): queries and keys of ``qk`` channels,
    values and an output gate of ``v`` channels, an input and a forget gate per head
    (with biases), a norm over the ``heads`` heads' outputs and a projection back;
    ``bias`` adds biases to the projections and the norm.

    Between tokens each head holds its memory matrix, its normaliser and its
    stabiliser, at the model's format, ``state_qk`` by ``state_v`` channels a head as
    transformers' cache shapes them."""

    width: int
    qk: int
    v: int
    heads: int
    bias: bool
    state_qk: int
    state_v: int

    @cached_property
    def parameters(self) -> int:
        b = 1 if self.bias else 0
        out = 2 * self.qk + 2 * self.v
        projections = (self.width + b) * out
        gates = 2 * (self.width * self.heads + self.heads)
        norm = self.v * (1 + b)
        return projections + gates + norm + self.v * self.width + b * self.width

    @property
    def state(self) -> FixedState:
        per_head = self.state_qk * self.state_v + self.state_qk + 1
        return FixedState(model_format=self.heads * per_head, float32=0)

    @property
    def state_flops(self) -> int:
        """Two multiply-adds per memory number: write it, read it out."""
        return 4 * self.heads * self.state_qk * self.state_v

    def describe(self) -> str:
        return (
            f"mLSTM layer, {self.heads} heads of a {self.state_qk} x {self.state_v} "
            "memory"
        )


@dataclass(frozen=True)
class GatedDeltaNet(_RunningSummary):
    """Gated DeltaNet (``Qwen3NextGatedDeltaNet``, ``Qwen3_5GatedDeltaNet``):
    ``key_heads`` heads of queries and keys of ``key_dim`` channels, ``value_heads``
    heads of values of ``value_dim`` (each key head shared by ``value_heads /
    key_heads`` value heads); projections from ``width`` to the queries, keys and
    values, to an output gate as wide as the values, and to a decay and a write
    strength a value head; a causal filter ``conv`` tokens long over the queries, keys
    and values (no bias); a step bias and a decay rate a value head; an RMSNorm of
    ``value_dim`` numbers shared by the heads; and a projection back.

    Between tokens it holds the filter's last ``conv`` inputs (the model's format, as
    transformers' cache keeps them) and every value head's ``key_dim`` by ``value_dim``
    memory (float32)."""

    width: int
    key_heads: int
    key_dim: int
    value_heads: int
    value_dim: int
    conv: int

    @property
    def conv_channels(self) -> int:
        """Channels the causal filter runs over: queries, keys and values."""
        return 2 * self.key_heads * self.key_dim + self.value_heads * self.value_dim

    @cached_property
    def parameters(self) -> int:
        """Projections, filter, step bias, decay rate, the gated norm."""
        values = self.value_heads * self.value_dim
        projections = self.width * (self.conv_channels + values + 2 * self.value_heads)
        return (
            projections
            + self.conv_channels * self.conv
            + 2 * self.value_heads
            + self.value_dim
            + values * self.width
        )

    @property
    def memory_numbers(self) -> int:
        """Numbers of every value head's memory."""
        return self.value_heads * self.key_dim * self.value_dim

    @property
    def state(self) -> FixedState:
        return FixedState(
            model_format=self.conv_channels * self.conv, float32=self.memory_numbers
        )

    @property
    def state_flops(self) -> int:
        """A token's filter (a multiply-add a channel a tap) and three multiply-adds a
        memory number: read it with the key, write the correction (the delta rule),
        read it with the query (the decay, one multiply a number, is elementwise and
        left out, as ``linear_attention.walk_flops_per_token`` leaves it)."""
        return 2 * self.conv_channels * self.conv + 6 * self.memory_numbers

    def describe(self) -> str:
        return (
            f"Gated DeltaNet, {self.value_heads} heads of a {self.key_dim} x "
            f"{self.value_dim} memory"
        )
