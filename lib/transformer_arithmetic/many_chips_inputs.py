"""What the page "Past one accelerator" chooses beyond the book's example, in one place.

Which three kinds of link it compares, which real chip it sets beside the example
accelerator, how many chips one machine joins, and the rule that grows the example
model into a model too large for one chip. The chip's and the links' figures are not
stated here: they are the published rows of ``published`` (``data/chips.json`` and
``data/links.json``, each figure with its source), read once; change a choice here and
every section of the page follows.
"""

from __future__ import annotations

import dataclasses

import published

from .collectives import Link, link_of
from .shapes import Accelerator, ModelShape, accelerator_of

__all__ = ["LINKS", "NVLINK", "PCIE", "NETWORK", "CALL_LATENCY_S", "REAL_CHIP_KEY",
           "REAL_CHIP", "MACHINE_DEVICES", "GROWTH", "grown"]

REAL_CHIP_KEY = "h100-sxm"
"""The real chip the page sets beside the example accelerator."""

NVLINK: Link = link_of(published.link(published.chip(REAL_CHIP_KEY).link))
"""The link inside one machine of the real chip (NVLink 4 for an H100 board)."""

PCIE: Link = link_of(published.link("pcie-5-x16"))
"""A card in a plain server slot."""

NETWORK: Link = link_of(published.link(published.chip(REAL_CHIP_KEY).network))
"""One network port a GPU between machines (400 Gb/s for an H100 machine)."""

LINKS = {"NVLink": NVLINK, "PCIe": PCIE, "network": NETWORK}
"""The three links the page compares, fastest first."""

CALL_LATENCY_S = published.call_latency_s()
"""The fixed cost NCCL's model adds to each call of a ring collective (its base latency
for the low-latency protocol), which the page's step costs leave out."""

MACHINE_DEVICES: int = published.chip(REAL_CHIP_KEY).link_domain
"""Chips one machine joins by its fast link (an HGX H100 board holds eight)."""

REAL_CHIP: Accelerator = accelerator_of(published.chip(REAL_CHIP_KEY))
"""A real chip to set beside the example accelerator (dense bfloat16 rate)."""

GROWTH = {"layers": 4, "heads": 4, "head_dim": 2, "ffn_width": 8}
"""How the page grows the example model: four times the layers, four times the query
and key-value heads, twice the numbers per head (so eight times the width), eight times
the feed-forward width; the vocabulary and the bytes a number stay."""


def grown(m: ModelShape) -> ModelShape:
    """The page's large model: ``m`` grown by ``GROWTH`` (the book's example becomes a
    model of about 78 billion parameters, 155 GB of weights)."""
    if not isinstance(m, ModelShape):
        raise ValueError(f"m must be a ModelShape, got {type(m).__name__}")
    return dataclasses.replace(
        m,
        layers=m.layers * GROWTH["layers"],
        heads=m.heads * GROWTH["heads"],
        kv_heads=m.kv_heads * GROWTH["heads"],
        head_dim=m.head_dim * GROWTH["head_dim"],
        width=m.width * GROWTH["heads"] * GROWTH["head_dim"],
        ffn_width=m.ffn_width * GROWTH["ffn_width"],
        name="the large model",
    )
