"""The feed-forward part of a layer: one dense part, or a mixture of experts.

Both meet one contract, ``FeedForwardPart``: the numbers memory holds, the numbers one
token multiplies, the numbers a step carrying several tokens reads, and the numbers held
in float32 whatever the model's format (DeepSeek's routers).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property

__all__ = ["FeedForwardPart", "DensePart", "FeedForward", "Experts",
           "expected_distinct_experts"]


def _bias(present: bool, size: int) -> int:
    return size if present else 0


class FeedForwardPart(ABC):
    """The contract of a layer's feed-forward part; ``inner`` is the width each token is
    widened to (one expert's, for a mixture)."""

    inner: int

    @property
    @abstractmethod
    def parameters(self) -> int:
        """Every number memory holds for this part, a count."""

    @property
    @abstractmethod
    def active_parameters(self) -> int:
        """Numbers one token multiplies, a count."""

    @abstractmethod
    def read_parameters(self, tokens: int) -> float:
        """Numbers a step carrying ``tokens`` tokens is expected to read."""

    @property
    @abstractmethod
    def float32_parameters(self) -> int:
        """Numbers held in float32 whatever the model's format."""

    @abstractmethod
    def describe(self) -> str:
        """One phrase for the report."""


class DensePart(FeedForwardPart):
    """A feed-forward part every token uses whole (no router): each step reads all of
    it, and none of it is kept in float32."""

    @property
    def active_parameters(self) -> int:
        """Every number: a dense part is used by every token."""
        return self.parameters

    def read_parameters(self, tokens: int) -> float:
        return self.parameters

    @property
    def float32_parameters(self) -> int:
        return 0


@dataclass(frozen=True)
class FeedForward(DensePart):
    """A feed-forward part from ``width`` to ``inner`` and back: two matrices, or three
    when ``gated`` (gate, up, down); ``bias`` adds a bias to each."""

    width: int
    inner: int
    gated: bool
    bias: bool = False

    @property
    def matrices(self) -> int:
        """Weight matrices: gate, up and down when gated, else up and down."""
        return 3 if self.gated else 2

    @cached_property
    def parameters(self) -> int:
        weights = self.matrices * self.width * self.inner
        return weights + _bias(self.bias, (self.matrices - 1) * self.inner + self.width)

    def describe(self) -> str:
        return f"{'gated' if self.gated else 'plain'} feed-forward of {self.inner:,}"


@dataclass(frozen=True)
class Experts(FeedForwardPart):
    """A mixture of experts: ``count`` gated feed-forward experts of ``inner`` each, of
    which a router (one row of ``width`` numbers per expert) picks ``per_token`` for
    each token.

    ``shared`` is an expert every token uses (DeepSeek, Qwen2-MoE; None: no shared
    expert), ``shared_gate`` a learned scalar gate on it (Qwen2-MoE); ``router_float32``
    marks a router held in float32; ``router_extra`` counts numbers held beside the
    router's weights (ERNIE-4.5's score-correction bias, gpt-oss's router bias);
    ``bias``: each expert's matrices have biases (gpt-oss); ``tokens_from`` is the
    number of model copies whose tokens these experts serve (1 for a whole model; a
    device of an expert-parallel group spread over several copies, as attention data
    parallel spreads it, takes each copy's tokens: ``splits``). ``zero``: experts that
    do no work (LongCat-Flash's: the token passes through unchanged), which the router
    may pick like the others; transformers still gives each a gate and an up matrix."""

    width: int
    count: int
    per_token: int
    inner: int
    shared: FeedForward | None = None
    shared_gate: bool = False
    router_float32: bool = False
    router_extra: int = 0
    tokens_from: int = 1
    bias: bool = False
    zero: int = 0

    @property
    def expert_parameters(self) -> int:
        """Numbers of one expert (gate, up and down matrices and any biases), a
        count."""
        biases = _bias(self.bias, 2 * self.inner + self.width)
        return 3 * self.width * self.inner + biases

    @property
    def router_parameters(self) -> int:
        """Weights of the router and any numbers beside them, a count."""
        return (self.count + self.zero) * self.width + self.router_extra

    @property
    def working_per_token(self) -> float:
        """Experts doing work a token is expected to pick: all ``per_token`` of them,
        or with zero experts ``per_token * count / (count + zero)`` (each pick equally
        likely to be any expert)."""
        return self.per_token * self.count / (self.count + self.zero)

    @property
    def always_used(self) -> int:
        """Numbers every token uses: the router, the shared expert and its gate."""
        shared = self.shared.parameters if self.shared else 0
        return self.router_parameters + shared + _bias(self.shared_gate, self.width)

    @cached_property
    def parameters(self) -> int:
        """Every expert, the router and any shared expert (and the unused matrices
        transformers gives zero experts)."""
        unused = self.zero * 2 * self.width * self.inner
        return self.count * self.expert_parameters + unused + self.always_used

    @property
    def active_parameters(self) -> int:
        """Its ``per_token`` experts (for each copy it serves) plus what every token
        uses (with zero experts, those expected to do work, rounded to a whole
        number)."""
        routed = self.working_per_token * self.tokens_from * self.expert_parameters
        return round(routed) + self.always_used

    def touched(self, tokens: int) -> float:
        """Experts doing work that ``tokens`` tokens (from each copy it serves) are
        expected to touch (uniform routing)."""
        every = self.count + self.zero
        picked = tokens * self.tokens_from
        return (expected_distinct_experts(every, self.per_token, picked)
                * self.count / every)

    def read_parameters(self, tokens: int) -> float:
        """The experts ``tokens`` tokens are expected to touch (uniform routing) plus
        what every token uses."""
        return self.touched(tokens) * self.expert_parameters + self.always_used

    @property
    def float32_parameters(self) -> int:
        return self.router_parameters if self.router_float32 else 0

    def describe(self) -> str:
        shared = f" + a shared expert of {self.shared.inner:,}" if self.shared else ""
        return (
            f"{self.count} experts of {self.inner:,}, {self.per_token} a token{shared}"
        )


def expected_distinct_experts(count: int, per_token: int, tokens: int) -> float:
    """Experts, out of ``count``, that ``tokens`` tokens touch when each picks
    ``per_token`` at random: count * (1 - (1 - per_token / count) ** tokens); exactly
    ``per_token`` for one token."""
    if tokens <= 1 or per_token >= count:
        return float(min(count, per_token * max(tokens, 0)))
    untouched = math.exp(tokens * math.log1p(-per_token / count))
    return count * (1.0 - untouched)
