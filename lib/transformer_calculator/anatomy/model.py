"""A published model as the calculator sees it: its exact layout and its number
format."""

from __future__ import annotations

from dataclasses import dataclass, field

from .context import ContextLimit
from .feedforward import Experts, FeedForward
from .formats import CACHE_AS_MODEL, UNPACKED, CacheFormat, WeightFormat
from .layout import Layout
from .measured import MeasuredMixer
from .mixers import Attention, LatentAttention

__all__ = ["Model"]


@dataclass(frozen=True)
class Model:
    """A published decoder: every part (``layout``), held at ``bytes_per_number`` bytes
    a number, under a ``name``; its matrices stored in the ``weights`` format and its
    key-value cache in the ``cache`` format (by default both as the model's numbers);
    ``route`` says how it was counted: ``"layout"`` from the calculator's own layout of
    its family, ``"transformers"`` from the model ``transformers`` builds on the meta
    device (``meta_route.py``); ``context``: the longest sequence it was built for,
    when its config states one."""

    layout: Layout
    bytes_per_number: int
    name: str = field(default="model", compare=False)
    route: str = field(default="layout", compare=False)
    context: ContextLimit | None = field(default=None, compare=False)
    weights: WeightFormat = UNPACKED
    cache: CacheFormat = CACHE_AS_MODEL

    def __post_init__(self) -> None:
        if self.route not in ("layout", "transformers"):
            raise ValueError(
                f"route must be layout or transformers, got {self.route!r}"
            )
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
        part's width and whether it is gated (None for a model counted from what
        ``transformers`` builds, whose parts are measured, not laid out), and the
        layout's own sizes."""
        layout = self.layout
        first = next(
            (
                b.mixer
                for b in layout.blocks
                if isinstance(b.mixer, (Attention, LatentAttention))
            ),
            None,
        )
        measured = next(
            (
                b.mixer
                for b in layout.blocks
                if isinstance(b.mixer, MeasuredMixer) and b.mixer.heads
            ),
            None,
        )
        if first is None and measured is not None:
            heads, kv_heads = measured.heads, measured.kv_heads
            head_dim = measured.head_dim
        elif isinstance(first, Attention):
            heads, kv_heads, head_dim = first.heads, first.kv_heads, first.head_dim
        elif isinstance(first, LatentAttention):
            heads, kv_heads, head_dim = first.heads, 1, first.nope_dim + first.rope_dim
        else:
            heads, kv_heads, head_dim = 1, 1, layout.width
        ffn = next((b.ffn for b in layout.blocks if b.ffn is not None), None)
        gated = isinstance(ffn, Experts) or (isinstance(ffn, FeedForward) and ffn.gated)
        inner = ffn.inner if ffn is not None else layout.width
        if self.route == "transformers":
            inner = gated = None
        return {
            "name": self.name,
            "layers": len(layout.blocks),
            "heads": heads,
            "kv_heads": kv_heads,
            "head_dim": head_dim,
            "width": layout.width,
            "ffn_width": inner,
            "vocab": layout.vocab,
            "gated_ffn": gated,
            "tied_embeddings": layout.tied,
            "norm": layout.norm,
            "bytes_per_number": self.bytes_per_number,
        }
