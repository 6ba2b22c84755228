"""Attention of other shapes than ``mixers.Attention``, as ``transformers`` builds
them; each meets the ``Mixer`` contract.

- ``MixtureOfAttention``: JetMoE's attention, whose query and output projections are
  experts a router picks for each token (each picked expert brings its own query
  heads), over keys and values every expert shares;
- ``SparseLatentAttention``: DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5), latent
  attention beside a lightning indexer that scores every kept token with a key of its
  own and lets each query read only the ``topk`` best.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from transformer_arithmetic.masks import causal_pairs, window_pairs

from .feedforward import expected_distinct_experts
from .mixers import LatentAttention, MixerKind, _CausalAttention

__all__ = ["MixtureOfAttention", "SparseLatentAttention"]


@dataclass(frozen=True)
class MixtureOfAttention(_CausalAttention):
    """JetMoE's mixture of attention heads (``JetMoeAttention``, ``JetMoeMoA``):
    ``experts`` experts, ``per_token`` of them for each token, each a query projection
    to ``kv_heads`` heads of ``head_dim`` and an output projection back; one key and
    value projection (``kv_heads`` heads) every expert shares, a router and an output
    bias. A token's query heads are ``per_token * kv_heads``; the cache keeps the shared
    keys and values."""

    width: int
    experts: int
    per_token: int
    kv_heads: int
    head_dim: int

    @property
    def kind(self) -> MixerKind:
        return MixerKind.ATTENTION

    @property
    def _expert(self) -> int:
        return 2 * self.width * self.kv_heads * self.head_dim

    @property
    def _shared(self) -> int:
        """The key-value projection, the router and the output bias."""
        kv = 2 * self.width * self.kv_heads * self.head_dim
        return kv + self.experts * self.width + self.width

    @cached_property
    def parameters(self) -> int:
        return self.experts * self._expert + self._shared

    @property
    def active_parameters(self) -> int:
        return self.per_token * self._expert + self._shared

    def read_parameters(self, tokens: int) -> float:
        touched = expected_distinct_experts(self.experts, self.per_token, tokens)
        return touched * self._expert + self._shared

    @property
    def cache_numbers(self) -> int:
        return 2 * self.kv_heads * self.head_dim

    @property
    def cache_cap(self) -> int | None:
        return None

    @property
    def pair_flops(self) -> int:
        """A score and a weighted value for every query head a token brings."""
        return 4 * self.per_token * self.kv_heads * self.head_dim

    def describe(self) -> str:
        return (
            f"mixture of attention, {self.experts} experts of {self.kv_heads} heads of "
            f"{self.head_dim}, {self.per_token} a token"
        )


@dataclass(frozen=True)
class SparseLatentAttention(LatentAttention):
    """DeepSeek Sparse Attention (``DeepseekV32Attention``, ``GlmMoeDsaAttention``):
    latent attention (``LatentAttention``'s fields) whose queries each read only the
    ``topk`` kept tokens a lightning indexer scores highest.

    The indexer (``DeepseekV32Indexer``) has ``index_heads`` query heads of
    ``index_dim`` channels, projected from the compressed query (``q_rank``), one key
    of ``index_dim`` channels a token from the model's width (with a LayerNorm) and a
    weight a head from the width; each kept token's indexer key is cached beside the
    latent. A layer with ``own_indexer`` False (GLM's "shared" layers) has none: it
    reuses the previous layer's choice, and caches only the latent."""

    index_heads: int = 0
    index_dim: int = 0
    topk: int = 1
    own_indexer: bool = True

    @property
    def indexer_parameters(self) -> int:
        """The indexer's projections and its key norm (0 without one)."""
        if not self.own_indexer:
            return 0
        q_rank = self.q_rank or 0
        return (
            q_rank * self.index_heads * self.index_dim
            + self.width * self.index_dim
            + 2 * self.index_dim
            + self.width * self.index_heads
        )

    @cached_property
    def parameters(self) -> int:
        return super().parameters + self.indexer_parameters

    @property
    def selector_numbers(self) -> int:
        """The indexer's key, read for every kept token."""
        return self.index_dim if self.own_indexer else 0

    @property
    def cache_numbers(self) -> int:
        """The latent, the shared rotary key and the indexer's key."""
        return super().cache_numbers + self.selector_numbers

    def read_tokens(self, context: int) -> int:
        return min(self.kept_tokens(context), self.topk)

    @property
    def index_pair_flops(self) -> int:
        """The indexer's score of one (query, key) pair: a multiply-add a channel a
        head, then a multiply-add a head to weigh the heads (0 without an indexer)."""
        return 2 * self.index_heads * (self.index_dim + 1) if self.own_indexer else 0

    def decode_pair_flops(self, context: int) -> int:
        """Attention over the ``topk`` chosen tokens, the indexer over every kept one
        (picking the best is comparisons, not counted)."""
        kept = self.kept_tokens(context)
        chosen = self.pair_flops * self.read_tokens(context)
        return chosen + self.index_pair_flops * kept

    def prefill_pair_flops(self, tokens: int) -> int:
        """Each query's attention over at most ``topk`` tokens, and the indexer over
        every allowed pair."""
        if tokens == 0:
            return 0
        chosen = window_pairs(tokens, self.topk)
        return self.pair_flops * chosen + self.index_pair_flops * causal_pairs(tokens)

    def describe(self) -> str:
        picks = (
            f"an indexer of {self.index_heads} heads of {self.index_dim}"
            if self.own_indexer
            else "the previous layer's indexer"
        )
        return (
            f"sparse latent attention, {self.heads} heads, caching {self.kv_rank} + "
            f"{self.rope_dim} + {self.selector_numbers} numbers a token, {picks} "
            f"picking {self.topk:,}"
        )
