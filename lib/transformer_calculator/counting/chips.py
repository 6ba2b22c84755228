"""Accelerators: the book's example, three numbers given on the command line, or a real
chip by name from the published table (``published``: each row's rates, memory, link
and power with the public source of its figures).

A ``Chip`` is an ``Accelerator`` (its 16-bit rate, its bandwidth, its memory) that also
knows its 8-bit floating-point rate, its link to other chips and its published row.
``derated`` scales the two rates by the fractions of peak a real program reaches, which
turns the roofline's floor into an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

import published
from published import ChipFacts
from published.chips import normal_name
from transformer_arithmetic import EXAMPLE_ACCELERATOR, Accelerator
from transformer_arithmetic.checks import checked_fraction
from transformer_arithmetic.units import GIB

__all__ = [
    "ACCELERATOR_RANGES",
    "parse_accelerator",
    "Chip",
    "chips",
    "chip",
    "chip_note",
    "derated",
    "matrix_flops_per_s",
    "rate_for",
    "compute_on",
]


@dataclass(frozen=True)
class Chip(Accelerator):
    """A published chip: its dense 16-bit rate (``flops_per_s``), its dense 8-bit and
    4-bit floating-point rates (None: no such arithmetic), its memory bandwidth and
    memory, its
    link to other chips (``interconnect``, at ``interconnect_bytes_per_s`` both ways
    together), and its published row (``facts``: every figure with its source)."""

    fp8_flops_per_s: float | None = None
    fp4_flops_per_s: float | None = None
    interconnect: str = ""
    interconnect_bytes_per_s: float | None = None
    key: str = ""
    source: str = ""
    note: str = ""
    flops_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    facts: ChipFacts | None = field(default=None, compare=False, repr=False)


def _chip(c: ChipFacts) -> Chip:
    link = published.link(c.link) if c.link else None
    return Chip(
        flops_per_s=c.bf16_flops_per_s,
        bytes_per_s=c.bytes_per_s,
        memory_bytes=c.memory_bytes,
        name=c.name,
        fp8_flops_per_s=c.fp8_flops_per_s,
        fp4_flops_per_s=c.fp4_flops_per_s,
        interconnect=link.name if link else "",
        interconnect_bytes_per_s=link.both_ways_bytes_per_s if link else None,
        key=c.key,
        source=c.source,
        note=c.note,
        facts=c,
    )


@lru_cache(maxsize=1)
def chips() -> tuple[Chip, ...]:
    """Every chip of the published table, in its order."""
    return tuple(_chip(c) for c in published.chips())


def chip(name: str) -> Chip:
    """The published chip called ``name`` (its key, its name or an alias, in any
    case)."""
    key = published.chip(name).key
    return next(c for c in chips() if c.key == key)


def chip_note(name: str, found: Chip) -> str | None:
    """What to say when ``name`` took ``found`` but begins the key or name of another
    published chip too (``h100``: the SXM card, though a PCIe one is published): which
    it took, and how to ask for the others; None when ``name`` fits one chip alone."""
    short = normal_name(name)
    others = [c for c in chips() if c.key != found.key
              and any(normal_name(n).startswith(short) for n in (c.key, c.name))]
    if not others:
        return None
    rest = " or ".join(f"--chip {c.key} ({c.name})" for c in others)
    return (f"--chip {name}: taken as {found.name} ({found.key}), one of "
            f"{len(others) + 1} published chips the name fits; for another say {rest}")


def derated(
    acc: Accelerator, flops_efficiency: float, memory_efficiency: float
) -> Chip:
    """``acc`` running at ``flops_efficiency`` of its peak arithmetic (both rates) and
    ``memory_efficiency`` of its peak bandwidth, each a fraction in (0, 1]."""
    f = checked_fraction("flops_efficiency", flops_efficiency)
    m = checked_fraction("memory_efficiency", memory_efficiency)
    base = (
        acc
        if isinstance(acc, Chip)
        else Chip(
            flops_per_s=acc.flops_per_s,
            bytes_per_s=acc.bytes_per_s,
            memory_bytes=acc.memory_bytes,
            name=acc.name,
        )
    )
    fp8 = base.fp8_flops_per_s * f if base.fp8_flops_per_s is not None else None
    fp4 = base.fp4_flops_per_s * f if base.fp4_flops_per_s is not None else None
    return replace(
        base,
        flops_per_s=base.flops_per_s * f,
        bytes_per_s=base.bytes_per_s * m,
        fp8_flops_per_s=fp8,
        fp4_flops_per_s=fp4,
        flops_efficiency=f,
        memory_efficiency=m,
    )


def compute_on(acc: Accelerator, compute: str) -> str:
    """The rate (``fp4``, ``fp8`` or ``bf16``) matrices of a format that multiplies at
    ``compute`` use on ``acc``: ``mxfp8`` (4-bit weights with power-of-two scales
    a block, times 8-bit activations) is the 8-bit rate only on a chip with 4-bit
    arithmetic, whose tensor cores apply the block scales (Blackwell's block-scaled
    products); elsewhere (Hopper) engines multiply such weights as weight-only, turned
    back into 16-bit numbers (vLLM's ``SM90_FI_MXFP4_BF16``, ``MARLIN`` and
    ``TRITON`` backends, ``mxfp4_w4a16``)."""
    if compute == "mxfp8":
        return "fp8" if getattr(acc, "fp4_flops_per_s", None) is not None else "bf16"
    return compute


def rate_for(acc: Accelerator, compute: str) -> float:
    """Operations a second matrices of a format that multiplies at ``compute`` (``fp4``,
    ``fp8``, ``mxfp8`` or ``bf16``, ``compute_on``) reach on ``acc``: that rate where
    the chip has it, else the 16-bit rate (the narrow numbers are turned back into
    16-bit ones first)."""
    compute = compute_on(acc, compute)
    if compute not in ("fp4", "fp8", "bf16"):
        raise ValueError(f"compute must be fp4, fp8, mxfp8 or bf16, got {compute!r}")
    narrow = getattr(acc, f"{compute}_flops_per_s", None) if compute != "bf16" else None
    return narrow if narrow is not None else acc.flops_per_s


def matrix_flops_per_s(acc: Accelerator, fp8_weights: bool) -> float:
    """Operations a second the weight matrices multiply at on ``acc``: the 8-bit
    floating-point rate for fp8 weights on a chip that has one, else the 16-bit rate."""
    return rate_for(acc, "fp8" if fp8_weights else "bf16")


ACCELERATOR_RANGES = ((1.0, 1e30), (1.0, 1e30), (1e-6, 1e12))
"""Accepted ranges of an accelerator's operations a second, bytes a second and memory in
GiB: far beyond any real chip, yet narrow enough that every time and count stays a
finite number."""


def parse_accelerator(text: str) -> Accelerator:
    """``"example"`` for the book's example accelerator, or
    ``"FLOPS,BYTES_PER_S,MEMORY_GIB"`` (operations a second, bytes read a second, memory
    in GiB), e.g. ``"100e12,1e12,24"``."""
    if text.strip().lower() == "example":
        return EXAMPLE_ACCELERATOR
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3:
        raise ValueError(
            "accelerator must be 'example' or three numbers "
            "FLOPS,BYTES_PER_S,MEMORY_GIB, "
            f"got {text!r}"
        )
    names = ("FLOPS", "BYTES_PER_S", "MEMORY_GIB")
    values = []
    for name, part, (low, high) in zip(names, parts, ACCELERATOR_RANGES):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(
                f"accelerator {name} must be a number, got {part!r}"
            ) from None
        if not value > 0 or value == float("inf"):
            raise ValueError(
                f"accelerator {name} must be a positive finite number, got {part!r}"
            )
        if not low <= value <= high:
            raise ValueError(
                f"accelerator {name} must lie between {low:g} and {high:g}, got "
                f"{part!r}"
            )
        values.append(value)
    flops, bytes_per_s, gib = values
    memory_bytes = round(gib * GIB)
    if memory_bytes < 1:
        raise ValueError(f"accelerator MEMORY_GIB is too small, got {parts[2]!r}")
    return Accelerator(
        flops_per_s=flops,
        bytes_per_s=bytes_per_s,
        memory_bytes=memory_bytes,
        name="the given accelerator",
    )
