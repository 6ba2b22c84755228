"""The two things every number in the book depends on: a model's shape and an
accelerator.

Both are frozen dataclasses that check themselves when they are built, so a shape that
cannot exist (a width that the heads do not divide, a negative layer count) fails at
once with a message naming the bad value, instead of drawing a wrong figure later.

A ``ModelShape`` is the book's plain decoder and nothing else: every layer the same,
full attention in every layer, one dense feed-forward part. Published models whose
layers differ (windows, experts, running summaries) are the calculator's business
(``transformer_calculator``), which builds on these formulas but never hands them its
own layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from published import ChipFacts

from .checks import checked_positive, checked_whole
from .units import GIB, KIB, MIB, rates_text, size_text

__all__ = [
    "ModelShape",
    "Accelerator",
    "accelerator_of",
    "EXAMPLE_MODEL",
    "EXAMPLE_ACCELERATOR",
    "GIB",
    "MIB",
    "KIB",
    "kv_head_choices",
    "opening_table",
]


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a plain decoder-only transformer.

    ``kv_heads`` is the number of key-value heads: equal to ``heads`` for plain
    multi-head attention, fewer for grouped-query attention, 1 for multi-query.
    ``width`` defaults to ``heads * head_dim``. ``gated_ffn`` selects a feed-forward
    part of three matrices (gate, up, down) instead of two. ``tied_embeddings`` shares
    one table between the input and the output layer. ``norm_bias`` adds a bias to each
    normalisation (LayerNorm) instead of a scale alone (RMSNorm).
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

    def __post_init__(self) -> None:
        for key in (
            "layers",
            "heads",
            "head_dim",
            "ffn_width",
            "vocab",
            "bytes_per_number",
        ):
            checked_whole(key, getattr(self, key), minimum=1)
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.heads)
        checked_whole("kv_heads", self.kv_heads, minimum=1)
        if self.heads % self.kv_heads:
            raise ValueError(
                f"kv_heads={self.kv_heads} does not divide heads={self.heads}: "
                "every key-value head must serve the same number of query heads"
            )
        if self.width is None:
            object.__setattr__(self, "width", self.heads * self.head_dim)
        checked_whole("width", self.width, minimum=1)

    def __str__(self) -> str:
        kv = "" if self.kv_heads == self.heads else f", {self.kv_heads} key-value heads"
        ffn = "gated feed-forward" if self.gated_ffn else "feed-forward"
        return (
            f"{self.name}: {self.layers} layers, {self.heads} heads of "
            f"{self.head_dim}{kv}, "
            f"width {self.width:,}, {ffn} width {self.ffn_width:,}, "
            f"vocabulary {self.vocab:,}, {self.bytes_per_number} bytes a number"
        )

    @property
    def group_size(self) -> int:
        """Query heads that share one key-value head (1 = plain multi-head
        attention)."""
        return self.heads // self.kv_heads

    @property
    def ffn_matrices(self) -> int:
        """Matrices in one feed-forward part: three when gated (gate, up, down), else
        two."""
        return 3 if self.gated_ffn else 2

    @property
    def embedding_tables(self) -> int:
        """Vocabulary-by-width tables: one shared by input and output when tied, else
        two."""
        return 1 if self.tied_embeddings else 2

    @property
    def norm_numbers(self) -> int:
        """Numbers per channel of one normalisation: a scale and a bias (LayerNorm) or a
        scale (RMSNorm)."""
        return 2 if self.norm_bias else 1


@dataclass(frozen=True)
class Accelerator:
    """A chip's three limits: arithmetic per second, bytes read per second, bytes
    held."""

    flops_per_s: float
    bytes_per_s: float
    memory_bytes: int
    name: str = field(default="accelerator", compare=False)

    def __post_init__(self) -> None:
        checked_positive("flops_per_s", self.flops_per_s)
        checked_positive("bytes_per_s", self.bytes_per_s)
        checked_whole("memory_bytes", self.memory_bytes, minimum=1)

    def __str__(self) -> str:
        return (
            f"{self.name}: {rates_text(self.flops_per_s, self.bytes_per_s)}, "
            f"{self.memory_bytes / GIB:.4g} GiB"
        )


def accelerator_of(chip: ChipFacts) -> Accelerator:
    """The roofline's three limits of a published chip: its dense 16-bit rate, its
    memory bandwidth and the memory the card holds."""
    if not isinstance(chip, ChipFacts):
        raise ValueError(f"chip must be a published chip, got {type(chip).__name__}")
    return Accelerator(
        flops_per_s=chip.bf16_flops_per_s,
        bytes_per_s=chip.bytes_per_s,
        memory_bytes=chip.memory_bytes,
        name=chip.name,
    )


EXAMPLE_MODEL_SIZES: dict[str, int] = {
    "layers": 24,
    "heads": 16,
    "head_dim": 64,
    "ffn_width": 4096,
    "vocab": 32768,
    "bytes_per_number": 2,
}
"""The sizes the pages state for the example model (the rest take ``ModelShape``'s
defaults: width = heads x head_dim, a key-value head per query head, a plain
feed-forward part, tied embeddings, RMSNorm)."""

EXAMPLE_MODEL = ModelShape(**EXAMPLE_MODEL_SIZES, name="the example model")
"""The book's stated example: 24 layers, 16 heads of 64, width 1,024, two bytes a
number."""

EXAMPLE_ACCELERATOR_RATES: dict[str, float] = {
    "flops_per_s": 100e12,
    "bytes_per_s": 1e12,
    "memory_bytes": 24 * GIB,
}
"""The rates and memory the pages state for the example accelerator."""

EXAMPLE_ACCELERATOR = Accelerator(
    **EXAMPLE_ACCELERATOR_RATES, name="the example accelerator"
)
"""The book's stated example chip: 10^14 operations a second, 10^12 bytes a second, 24
GiB."""


def kv_head_choices(m: ModelShape) -> tuple[int, ...]:
    """Key-value head counts to compare for ``m``'s query heads, most first: plain
    attention (one per query head), one grouped choice, and multi-query (one for all).

    The grouped choice is ``m``'s own count when ``m`` already groups its heads;
    otherwise it is the smallest divisor of the head count at least its square root, the
    most even split of the heads into groups (16 heads: 4 groups of 4; 12 heads: 4
    groups of 3). A count that would repeat another is left out, so a model with one or
    two (or a prime number of) heads gets fewer than three choices."""
    if not isinstance(m, ModelShape):
        raise ValueError(f"m must be a ModelShape, got {type(m).__name__}")
    if 1 < m.kv_heads < m.heads:
        grouped = m.kv_heads
    else:
        grouped = next(
            d for d in range(1, m.heads + 1) if m.heads % d == 0 and d * d >= m.heads
        )
    return tuple(sorted({m.heads, grouped, 1}, reverse=True))


def opening_table(m: ModelShape, acc: Accelerator) -> dict[str, int | float | str]:
    """The values a page opening's table states for a model and an accelerator: the
    model's sizes; its layout as the counts the formula sheets use (feed-forward
    matrices, embedding tables, numbers per channel of a normalisation), each with a
    word; the accelerator's rates in TFLOP/s and TB/s; and its memory as a size."""
    if not isinstance(m, ModelShape):
        raise ValueError(f"m must be a ModelShape, got {type(m).__name__}")
    if not isinstance(acc, Accelerator):
        raise ValueError(f"acc must be an Accelerator, got {type(acc).__name__}")
    return {
        "layers": m.layers,
        "heads": m.heads,
        "kv_heads": m.kv_heads,
        "head_dim": m.head_dim,
        "width": m.width,
        "ffn_width": m.ffn_width,
        "vocab": m.vocab,
        "bytes_per_number": m.bytes_per_number,
        "ffn_matrices": m.ffn_matrices,
        "ffn_kind": "gated" if m.gated_ffn else "plain",
        "embed_tables": m.embedding_tables,
        "embed_kind": "shared with the output layer"
        if m.tied_embeddings
        else "one in, one out",
        "norm_numbers": m.norm_numbers,
        "norm_kind": "LayerNorm: a scale and a bias"
        if m.norm_bias
        else "RMSNorm: a scale",
        "tflops": acc.flops_per_s / 1e12,
        "tbps": acc.bytes_per_s / 1e12,
        "acc_memory": size_text(acc.memory_bytes),
    }
