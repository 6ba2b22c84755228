"""Attention of other shapes than ``mixers.Attention``, as ``transformers`` builds
them; each meets the ``Mixer`` contract.

- ``MixtureOfAttention``: JetMoE's attention, whose query and output projections are
  experts a router picks for each token (each picked expert brings its own query
  heads), over keys and values every expert shares.
"""

from __future__ import annotations

from dataclasses import dataclass


from .feedforward import expected_distinct_experts
from .mixers import MixerKind, _CausalAttention

__all__ = ["MixtureOfAttention"]


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

    @property
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
