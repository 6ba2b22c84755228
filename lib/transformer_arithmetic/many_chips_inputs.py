"""What the page "Past one accelerator" states beyond the book's example, in one place.

Three kinds of link between chips, one real chip to set beside the example accelerator,
how many chips one machine holds, and the rule that grows the example model into a model
too large for one chip. Each number is a page input with its public source; replace
them here (or by the calculator's table of named chips and links, once it has one) and
every section of the page follows.

Sources
-------
- Link rates: NVIDIA's H100 datasheet (NVLink 4: 900 GB/s a GPU, both ways together;
  PCIe 5.0 x16: 128 GB/s, both ways together) and a 400 Gb/s network port (NDR
  InfiniBand, as in a DGX H100: one port a GPU).
- Step latencies: NCCL 2.30's own tuning model (``src/graph/tuning.cc``, the ring's
  per-step hardware latency for its low-latency protocol, the one it picks for small
  arrays): 0.6 µs over NVLink, 1.0 µs over PCIe, 2.7 µs over the network; and the
  fixed cost it adds to each call of a ring collective, 6.6 µs.
- The real chip: NVIDIA's H100 SXM datasheet: 989 TFLOP/s dense bfloat16 (the 1,979
  printed is with 2:4 sparsity), 3.35 TB/s from HBM3, 80 GB (binary gigabytes: its HBM
  stacks hold 16 GiB each).
"""

from __future__ import annotations

import dataclasses

from .collectives import Link
from .shapes import Accelerator, ModelShape
from .units import GIB

__all__ = ["LINKS", "NVLINK", "PCIE", "NETWORK", "CALL_LATENCY_S", "REAL_CHIP",
           "MACHINE_DEVICES", "GROWTH", "grown"]

NVLINK = Link(450e9, 0.6e-6, name="NVLink 4")
"""The link inside one H100 machine: 450 GB/s each way a GPU, through NVSwitch."""

PCIE = Link(64e9, 1.0e-6, name="PCIe 5 x16")
"""A card in a plain server slot: about 64 GB/s each way."""

NETWORK = Link(50e9, 2.7e-6, name="400 Gb/s network")
"""One network port a GPU between machines: 400 Gb/s, 50 GB/s each way."""

LINKS = {"NVLink": NVLINK, "PCIe": PCIE, "network": NETWORK}
"""The three links the page compares, fastest first."""

CALL_LATENCY_S = 6.6e-6
"""The fixed cost NCCL's model adds to each call of a ring collective (its base latency
for the low-latency protocol), which the page's step costs leave out."""

MACHINE_DEVICES = 8
"""Chips one machine joins by its fast link (a DGX H100 or HGX board holds eight)."""

REAL_CHIP = Accelerator(989e12, 3.35e12, 80 * GIB, name="H100 SXM")
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
