"""The book's plain decoder as the calculator sees it: the bridge the agreement test
crosses.

``model_of(shape)`` lays out a ``transformer_arithmetic.ModelShape`` part by part (every
layer full attention with the shape's heads, one dense feed-forward part, two
normalisations a layer, embeddings tied or not). Every calculator quantity of that
layout must equal the formula the pages teach (``tests/test_calculator_agrees.py``).
"""

from __future__ import annotations

from transformer_arithmetic import ModelShape

from .feedforward import FeedForward
from .layout import Block, Layout
from .mixers import Attention
from .model import Model

__all__ = ["PLAIN_FAMILY", "model_of"]

PLAIN_FAMILY = "the book's plain decoder"
"""The family name a plain layout reports."""


def model_of(shape: ModelShape) -> Model:
    """The calculator's ``Model`` of the plain decoder ``shape``, part by part."""
    if not isinstance(shape, ModelShape):
        raise ValueError(f"shape must be a ModelShape, got {type(shape).__name__}")
    norm = shape.norm_numbers * shape.width
    attention = Attention(
        width=shape.width,
        heads=shape.heads,
        kv_heads=shape.kv_heads,
        head_dim=shape.head_dim,
    )
    ffn = FeedForward(width=shape.width, inner=shape.ffn_width, gated=shape.gated_ffn)
    block = Block(mixer=attention, ffn=ffn, norms=2 * norm)
    layout = Layout(
        vocab=shape.vocab,
        width=shape.width,
        blocks=(block,) * shape.layers,
        tied=shape.tied_embeddings,
        final_norm=norm,
        norm_numbers=shape.norm_numbers,
        norm="LayerNorm" if shape.norm_bias else "RMSNorm",
        family=PLAIN_FAMILY,
    )
    return Model(
        layout=layout, bytes_per_number=shape.bytes_per_number, name=shape.name
    )
