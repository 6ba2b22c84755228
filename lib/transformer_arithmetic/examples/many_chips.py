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
import math

import published

from ..collectives import Link, achieved_link, link_of
from ..shapes import Accelerator, ModelShape, accelerator_of

__all__ = ["LINKS", "NVLINK", "PCIE", "NETWORK", "CALL_LATENCY_S", "REAL_CHIP_KEY",
           "REAL_CHIP", "MACHINE_DEVICES", "MACHINE", "NVLINK_ACHIEVED",
           "NETWORK_ACHIEVED", "IN_SWITCH", "SMALL_ALL_REDUCE", "PROTOCOLS",
           "NVLS_EFFICIENCY", "DOMAINS", "GROWTH", "grown"]

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

MACHINE = published.machine("hgx-h100")
"""The machine the real chip comes in: its fast-link domain, in-switch reduction and
network cards."""

NVLINK_ACHIEVED: Link = achieved_link(
    NVLINK, published.achieved("h100-nvlink-ring").bus_bytes_per_s,
    f"{NVLINK.name}, as NCCL's rings reach it")
"""The fast link at the bus bandwidth NCCL's ring collectives reach on it."""

NETWORK_ACHIEVED: Link = achieved_link(
    NETWORK, published.achieved("ndr-400-nic").bus_bytes_per_s,
    f"{NETWORK.name}, as NCCL reaches it")
"""One network card at the bus bandwidth NCCL reaches on it."""

IN_SWITCH = published.achieved("h100-nvls-all-reduce")
"""The published all-reduce of a machine whose switches add (NVLink SHARP)."""

SMALL_ALL_REDUCE = published.achieved("h100-small-all-reduce")
"""The published time of a tiny all-reduce on two of the real chips."""

PROTOCOLS = published.protocols()
"""NCCL's three protocols as its tuning model prices them."""

NVLS_EFFICIENCY = published.nvls_efficiency("hopper")
"""The share of the link NCCL's model gives the real chip's in-switch all-reduce."""

DOMAINS = {m.name: m.devices for m in published.machines() if m.link is not None}
"""How many chips each published machine joins by its fast link."""

GROWTH = {"layers": 4, "heads": 4, "head_dim": 2, "ffn_width": 8, "group": 8}
"""How the page grows the example model: four times the layers, four times the query
heads, twice the numbers per head (so eight times the width), eight times the
feed-forward width, and at least eight query heads to each key-value head (grouped-query
attention, as Llama 3 70B and 405B have); the vocabulary and the bytes a number stay."""


def grown(m: ModelShape) -> ModelShape:
    """The page's large model: ``m`` grown by ``GROWTH`` (the book's example becomes a
    model of about 67 billion parameters with 8 key-value heads for its 64 query
    heads). Its key-value heads are its query heads over the larger of the group and
    the example's own grouping, or the nearest count that divides the query heads and
    that a machine's chips can share out (it divides them, or they divide it)."""
    if not isinstance(m, ModelShape):
        raise ValueError(f"m must be a ModelShape, got {type(m).__name__}")
    heads = m.heads * GROWTH["heads"]
    target = heads / max(GROWTH["group"], m.group_size)
    fits = [k for k in range(1, heads + 1) if heads % k == 0
            and (k % MACHINE_DEVICES == 0 or MACHINE_DEVICES % k == 0)]
    kv = min(fits, key=lambda k: (abs(math.log(k / target)), -k))
    return dataclasses.replace(
        m,
        layers=m.layers * GROWTH["layers"],
        heads=heads,
        kv_heads=kv,
        head_dim=m.head_dim * GROWTH["head_dim"],
        width=m.width * GROWTH["heads"] * GROWTH["head_dim"],
        ffn_width=m.ffn_width * GROWTH["ffn_width"],
        name="the large model",
    )
