"""Layers that carry a running summary other than Mamba's, as ``transformers`` builds
them: each meets the ``Mixer`` contract (no cache that grows, a fixed state) or the
``FeedForwardPart`` contract.

- ``RwkvTimeMix`` and ``RwkvChannelMix``: RWKV-4's two halves of a block (a decaying
  weighted sum of past values, and a feed-forward part that mixes in the previous
  token);
- ``RgLru``: RecurrentGemma's (Griffin's) recurrent block, a short causal filter and a
  real-gated linear recurrence;
- ``MLstm``: xLSTM's matrix-memory layer, a key-value memory per head that decays and
  is written through gates.
"""

from __future__ import annotations

from dataclasses import dataclass

from .feedforward import DensePart
from .mixers import FixedState, _RunningSummary

__all__ = ["RwkvTimeMix", "RwkvChannelMix", "RgLru", "MLstm"]


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

    @property
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

    @property
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

    @property
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

    @property
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
