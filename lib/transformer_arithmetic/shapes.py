"""The two things every number in the book depends on: a model's shape and an accelerator.

Both are frozen dataclasses that check themselves when they are built, so a shape
that cannot exist (a width that the heads do not divide, a negative layer count)
fails at once with a message naming the bad value, instead of drawing a wrong
figure later.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._checks import count, positive

if TYPE_CHECKING:  # a published architecture's exact parts (see layout.py)
    from .layout import Layout

__all__ = ["ModelShape", "Accelerator", "EXAMPLE_MODEL", "EXAMPLE_ACCELERATOR", "GIB", "MIB", "KIB",
           "kv_head_choices"]

KIB = 1024
MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer.

    ``kv_heads`` is the number of key-value heads: equal to ``heads`` for plain
    multi-head attention, fewer for grouped-query attention, 1 for multi-query.
    ``width`` defaults to ``heads * head_dim``. ``gated_ffn`` selects a feed-forward
    part of three matrices (gate, up, down) instead of two. ``norm_bias`` adds a
    bias to each normalisation (LayerNorm) instead of a scale alone (RMSNorm).

    ``layout`` (optional) lists the exact parts of a published architecture, layer by
    layer (biases, position tables, windows, experts, running-summary layers; see
    ``layout.py``). When it is set, the counting functions in ``memory``, ``work`` and
    ``timing`` use it, and the fields above only summarise the model for display.
    """

    layers: int
    heads: int
    head_dim: int
    ffn_width: int
    vocab: int
    kv_heads: int | None = None
    width: int | None = None
    bytes_per_number: int = 2
    gated_ffn: bool = False
    tied_embeddings: bool = True
    norm_bias: bool = False
    name: str = field(default="model", compare=False)
    layout: Layout | None = None

    def __post_init__(self) -> None:
        for key in ("layers", "heads", "head_dim", "ffn_width", "vocab", "bytes_per_number"):
            count(key, getattr(self, key), minimum=1)
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.heads)
        count("kv_heads", self.kv_heads, minimum=1)
        if self.heads % self.kv_heads:
            raise ValueError(
                f"kv_heads={self.kv_heads} does not divide heads={self.heads}: "
                "every key-value head must serve the same number of query heads"
            )
        if self.width is None:
            object.__setattr__(self, "width", self.heads * self.head_dim)
        count("width", self.width, minimum=1)

    def __str__(self) -> str:
        if self.layout is not None:
            return f"{self.name}: {self.layout.family}, {'; '.join(self.layout.describe())}"
        kv = "" if self.kv_heads == self.heads else f", {self.kv_heads} key-value heads"
        ffn = "gated feed-forward" if self.gated_ffn else "feed-forward"
        return (f"{self.name}: {self.layers} layers, {self.heads} heads of {self.head_dim}{kv}, "
                f"width {self.width:,}, {ffn} width {self.ffn_width:,}, vocabulary {self.vocab:,}, "
                f"{self.bytes_per_number} bytes a number")

    @property
    def group_size(self) -> int:
        """Query heads that share one key-value head (1 = plain multi-head attention)."""
        return self.heads // self.kv_heads


@dataclass(frozen=True)
class Accelerator:
    """A chip's three limits: arithmetic per second, bytes read per second, bytes held."""

    flops_per_s: float
    bytes_per_s: float
    memory_bytes: int
    name: str = field(default="accelerator", compare=False)

    def __post_init__(self) -> None:
        positive("flops_per_s", self.flops_per_s)
        positive("bytes_per_s", self.bytes_per_s)
        count("memory_bytes", self.memory_bytes, minimum=1)

    def __str__(self) -> str:
        return f"{self.name}: {rates_text(self.flops_per_s, self.bytes_per_s)}, {self.memory_bytes / 2**30:.4g} GiB"


def rates_text(flops_per_s: float, bytes_per_s: float) -> str:
    """An accelerator's two rates in the units engineers read: '100 TFLOP/s, 1 TB/s'."""
    return f"{flops_per_s / 1e12:.4g} TFLOP/s, {bytes_per_s / 1e12:.4g} TB/s"


EXAMPLE_MODEL = ModelShape(
    layers=24, heads=16, head_dim=64, ffn_width=4096, vocab=32768, bytes_per_number=2,
    name="the example model",
)
"""The book's stated example: 24 layers, 16 heads of 64, width 1,024, two bytes a number."""

EXAMPLE_ACCELERATOR = Accelerator(
    flops_per_s=100e12, bytes_per_s=1e12, memory_bytes=24 * GIB,
    name="the example accelerator",
)
"""The book's stated example chip: 100 million million operations a second, 10^12 bytes a second, 24 GiB."""


def kv_head_choices(m: ModelShape) -> tuple[int, ...]:
    """Key-value head counts to compare for ``m``'s query heads, most first: plain attention
    (one per query head), one grouped choice, and multi-query (one for all).

    The grouped choice is ``m``'s own count when ``m`` already groups its heads; otherwise it
    is the smallest divisor of the head count at least its square root, the most even split
    of the heads into groups (16 heads: 4 groups of 4; 12 heads: 4 groups of 3). A count that
    would repeat another is left out, so a model with one or two (or a prime number of)
    heads gets fewer than three choices."""
    if not isinstance(m, ModelShape):
        raise ValueError(f"m must be a ModelShape, got {type(m).__name__}")
    if 1 < m.kv_heads < m.heads:
        grouped = m.kv_heads
    else:
        grouped = next(d for d in range(1, m.heads + 1) if m.heads % d == 0 and d * d >= m.heads)
    return tuple(sorted({m.heads, grouped, 1}, reverse=True))
