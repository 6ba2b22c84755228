"""The book's plain decoder as the calculator sees it: the bridge the agreement test
crosses.

``model_of(shape)`` lays out a ``transformer_arithmetic.ModelShape`` part by part (every
layer full attention with the shape's heads, one dense feed-forward part, two
normalisations a layer, embeddings tied or not). Every calculator quantity of that
layout must equal the formula the pages teach (``tests/test_calculator_agrees.py``).

``shape_of(model)`` goes the other way for a published model that is a plain decoder
(Llama-3-8B, say): the ``ModelShape`` whose layout is exactly the model's, or a
ValueError naming what the plain shape cannot hold. The book's pages take a real model's
sizes so, from its published ``config.json``, never typed.
"""

from __future__ import annotations

import dataclasses

import published
from transformer_arithmetic import ModelShape

from .config import example_config_path, read_config
from ..anatomy.feedforward import FeedForward
from ..anatomy.layout import Block, Layout
from ..anatomy.mixers import Attention
from ..anatomy.model import Model

__all__ = ["PLAIN_FAMILY", "model_of", "shape_of", "shipped_shape"]

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


def shape_of(model: Model, name: str | None = None) -> ModelShape:
    """The plain decoder whose layout is exactly ``model``'s (named ``name``, else after
    the model), or a ValueError saying why ``model`` is not one."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model, got {type(model).__name__}")
    lay = model.layout
    first = lay.blocks[0] if lay.blocks else None
    mixer, ffn = getattr(first, "mixer", None), getattr(first, "ffn", None)
    if not isinstance(mixer, Attention) or not isinstance(ffn, FeedForward):
        raise ValueError(f"{model.name} is not a plain decoder: its first layer is not "
                         "full attention with one dense feed-forward part")
    shape = ModelShape(
        layers=len(lay.blocks),
        heads=mixer.heads,
        kv_heads=mixer.kv_heads,
        head_dim=mixer.head_dim,
        width=lay.width,
        ffn_width=ffn.inner,
        vocab=lay.vocab,
        bytes_per_number=model.bytes_per_number,
        gated_ffn=ffn.gated,
        tied_embeddings=lay.tied,
        norm_bias=lay.norm == "LayerNorm",
        name=name or model.name,
    )
    plain = model_of(shape)
    if dataclasses.replace(lay, family=PLAIN_FAMILY) != plain.layout or (
        model.weights != plain.weights or model.cache != plain.cache
    ):
        raise ValueError(f"{model.name} is not a plain decoder: its layers differ from "
                         "one another or hold parts the plain shape has not (biases, "
                         "windows, experts, position tables, packed weights)")
    return shape


def shipped_shape(name: str) -> ModelShape:
    """The plain decoder of the shipped config ``name`` (a published model's, from its
    ``config.json``), named after the repository it was published in."""
    model, _ = read_config(example_config_path(name))
    if name in published.model_names():
        return shape_of(model, name=published.model_hub_id(name).split("/")[-1])
    return shape_of(model)
