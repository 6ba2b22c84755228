"""Layer parts of a family without a layout here, as ``transformers`` builds them.

``meta_route.py`` builds such a model with ``transformers`` on the meta device (shapes
only: no weights, no memory) and reads these numbers off it; the parts meet the same
contracts as every other kind (``Mixer``, ``FeedForwardPart``), so the costs, the
report and the command line treat a measured model like any other:

- ``MeasuredMixer``: one layer's parameters outside its experts and what its cache layer
  keeps (numbers a token, for how many tokens, and a fixed state);
- ``MeasuredExperts``: one layer's experts, as many a token as the router picks;
- ``MeasuredLayout``: a layout whose embeddings, head and outer norms are one measured
  count.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from transformer_arithmetic.masks import causal_pairs, window_pairs

from .feedforward import FeedForwardPart, expected_distinct_experts
from .layout import Layout
from .mixers import FixedState, Mixer, MixerKind

__all__ = ["MeasuredMixer", "MeasuredExperts", "MeasuredLayout"]


@dataclass(frozen=True)
class MeasuredMixer(Mixer):
    """A layer as ``transformers`` built it: ``label`` is its cache layer's type
    (``full_attention``, ``sliding_attention``, ``chunked_attention``,
    ``linear_attention``, ``conv``, ``hybrid``, ``dummy``, ...).

    ``numbers``: every parameter of the layer outside its experts; ``per_token``: the
    numbers each kept token adds to its cache, kept for at most ``cap`` tokens (None:
    every token); ``fixed``: what it holds whatever the length; ``pair_numbers``: the
    key and value channels of every query head (a pair costs two operations per
    channel); ``summary``: the numbers of its running summary (two multiply-adds each a
    token, as for Mamba); ``heads``, ``kv_heads`` and ``head_dim``: its query heads and
    the heads and width of the keys it caches (0 for a layer without attention);
    ``passes``: times a token runs through the layer (a looped layer), the cache and
    the pairs being those of every pass together."""

    kind_of_mixing: MixerKind
    label: str
    numbers: int
    per_token: int
    cap: int | None
    fixed: FixedState
    pair_numbers: int
    summary: int = 0
    heads: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    passes: int = 1

    @property
    def kind(self) -> MixerKind:
        return self.kind_of_mixing

    @cached_property
    def parameters(self) -> int:
        return self.numbers

    @property
    def cache_numbers(self) -> int:
        return self.per_token

    @property
    def cache_cap(self) -> int | None:
        return self.cap

    @property
    def pair_flops(self) -> int:
        """A score and a weighted value: two operations per key and value channel."""
        return 2 * self.pair_numbers

    def prompt_pairs(self, tokens: int) -> int:
        if self.pair_numbers == 0:
            return 0
        if self.cap is None:
            return causal_pairs(tokens)
        return window_pairs(tokens, self.cap + 1)

    @property
    def state(self) -> FixedState:
        return self.fixed

    @property
    def state_flops(self) -> int:
        """Two multiply-adds per summary number: update it, read it out."""
        return 4 * self.summary

    def describe(self) -> str:
        words = self.label.replace("_", " ")
        kept = f", keeping {self.cap:,} tokens" if self.cap is not None else ""
        loops = f", run {self.passes} times a token" if self.passes > 1 else ""
        return f"{words}{kept}{loops} (as transformers builds it)"


@dataclass(frozen=True)
class MeasuredExperts(FeedForwardPart):
    """A layer's experts as ``transformers`` built them: ``count`` experts of
    ``per_expert`` numbers each, ``per_token`` of them for each token; ``float32`` of
    their numbers are held at four bytes whatever the model's format."""

    count: int
    per_token: int
    per_expert: int
    float32: int = 0
    inner: int = 0

    @cached_property
    def parameters(self) -> int:
        return self.count * self.per_expert

    @property
    def active_parameters(self) -> int:
        return self.per_token * self.per_expert

    def read_parameters(self, tokens: int) -> float:
        touched = expected_distinct_experts(self.count, self.per_token, tokens)
        return touched * self.per_expert

    @property
    def float32_parameters(self) -> int:
        return self.float32

    def describe(self) -> str:
        return f"{self.count} experts, {self.per_token} a token"


@dataclass(frozen=True)
class MeasuredLayout(Layout):
    """A layout whose numbers outside the blocks (embeddings, head, outer norms, any
    table of the family's own) are one measured count, ``outside``; ``outside_float32``
    numbers outside the experts, in the blocks or not, are held at four bytes."""

    outside: int = 0
    outside_float32: int = 0

    @cached_property
    def outside_blocks(self) -> int:
        return self.outside

    @cached_property
    def float32_parameters(self) -> int:
        return self.outside_float32 + sum(b.float32_parameters for b in self.blocks)
