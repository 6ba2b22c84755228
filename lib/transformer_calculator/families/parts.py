"""The pieces a family description is made of, besides rules: switches and query-key
norms."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .reader import Reader

__all__ = ["Flag", "QKNorm", "resolve", "NORM_NUMBERS", "NORM_NAMES"]


@dataclass(frozen=True)
class Flag:
    """A true/false config field that switches a part on, with the family's default."""

    name: str
    default: bool

    def __call__(self, r: Reader) -> bool:
        return r.flag(self.name, self.default)


@dataclass(frozen=True)
class QKNorm:
    """A normalisation of queries and keys inside attention.

    ``scope``: "head" for one set of numbers shared by every head (``head_dim`` each for
    the query and the key norm), "every head" for one set per query head and per
    key-value head; ``per_channel`` numbers per channel (1 for a scale, 2 for a scale
    and a bias); ``flag``: the field that switches it on, or None when the family always
    has it."""

    scope: str
    per_channel: int = 1
    flag: Flag | None = None

    def numbers(self, r: Reader, heads: int, kv_heads: int, head_dim: int) -> int:
        """Numbers of the query and key norms of one layer (0 when switched off)."""
        if self.flag is not None and not self.flag(r):
            return 0
        channels = (
            2 * head_dim if self.scope == "head" else (heads + kv_heads) * head_dim
        )
        return self.per_channel * channels


def resolve(value: bool | Flag | Callable[[Reader], Any], r: Reader) -> Any:
    """A part's setting for the config in ``r``: a constant, a flag's value or a
    rule's."""
    return value(r) if callable(value) else value


NORM_NUMBERS = {"rms": 1, "layer": 2, "scale": 1, "fixed": 0}
"""Numbers per channel of one normalisation: RMSNorm has a scale; LayerNorm a scale and
a bias; Cohere's LayerNorm a scale only; OLMo's none."""

NORM_NAMES = {1: "RMSNorm", 2: "LayerNorm", 0: "LayerNorm without trainable numbers"}
