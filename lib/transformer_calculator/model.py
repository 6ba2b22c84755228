"""A published model as the calculator sees it: its exact layout and its number
format."""

from __future__ import annotations

from dataclasses import dataclass, field

from .feedforward import Experts, FeedForward
from .formats import CACHE_AS_MODEL, UNPACKED, CacheFormat, WeightFormat
from .layout import Layout
from .mixers import Attention, LatentAttention

__all__ = ["Model"]


@dataclass(frozen=True)
class Model:
    """A published decoder: every part (``layout``), held at ``bytes_per_number`` bytes
    a number, under a ``name``; its matrices stored in the ``weights`` format and its
    key-value cache in the ``cache`` format (by default both as the model's numbers)."""

    layout: Layout
    bytes_per_number: int
    name: str = field(default="model", compare=False)
    weights: WeightFormat = UNPACKED
    cache: CacheFormat = CACHE_AS_MODEL

    def __post_init__(self) -> None:
        if self.bytes_per_number not in (1, 2, 4, 8):
            raise ValueError(
                f"bytes_per_number must be 1, 2, 4 or 8, got {self.bytes_per_number!r}"
            )

    def __str__(self) -> str:
        return f"{self.name}: {self.layout.family}, {'; '.join(self.layout.describe())}"

    def summary(self) -> dict:
        """The model in a few sizes, for display: the first attention layer's heads (a
        latent layer shares one latent among its heads, like multi-query; a model
        without attention shows one head as wide as the model), the first feed-forward
        part's width, and the layout's own sizes."""
        layout = self.layout
        first = next(
            (
                b.mixer
                for b in layout.blocks
                if isinstance(b.mixer, (Attention, LatentAttention))
            ),
            None,
        )
        if isinstance(first, Attention):
            heads, kv_heads, head_dim = first.heads, first.kv_heads, first.head_dim
        elif isinstance(first, LatentAttention):
            heads, kv_heads, head_dim = first.heads, 1, first.nope_dim + first.rope_dim
        else:
            heads, kv_heads, head_dim = 1, 1, layout.width
        ffn = next((b.ffn for b in layout.blocks if b.ffn is not None), None)
        gated = isinstance(ffn, Experts) or (isinstance(ffn, FeedForward) and ffn.gated)
        return {
            "name": self.name,
            "layers": len(layout.blocks),
            "heads": heads,
            "kv_heads": kv_heads,
            "head_dim": head_dim,
            "width": layout.width,
            "ffn_width": ffn.inner if ffn is not None else layout.width,
            "vocab": layout.vocab,
            "gated_ffn": gated,
            "tied_embeddings": layout.tied,
            "norm": layout.norm,
            "bytes_per_number": self.bytes_per_number,
        }
