"""Accelerators as their makers publish them: one ``ChipFacts`` a row of
``data/chips.json``, each figure with its source."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["CHIP_FILE", "ChipFacts", "chips", "chip", "normal_name"]

CHIP_FILE = Path(__file__).parent / "data" / "chips.json"
"""The table of chips."""

_MIB = 2**20


@dataclass(frozen=True)
class ChipFacts:
    """One published chip of an ``architecture`` (its maker's name for its
    generation): dense 16-bit, 8-bit and 4-bit floating-point rates (operations a
    second; None: no such arithmetic), memory bandwidth (bytes a second), the card's
    memory in GiB and the total the driver reports in MiB (None: no public figure),
    its link to its peers (a key of ``links``), how many chips that link joins, the
    network between machines, its board power in watts, the sources, and the figures
    as the source prints them (``printed``)."""

    key: str
    name: str
    aliases: tuple[str, ...]
    architecture: str
    bf16_flops_per_s: float
    fp8_flops_per_s: float | None
    fp4_flops_per_s: float | None
    bytes_per_s: float
    memory_gib: float
    driver_memory_mib: int | None
    link: str | None
    link_domain: int | None
    network: str | None
    board_power_w: float | None
    source: str
    note: str
    driver_memory_source: str | None
    power_source: str | None
    power_note: str | None
    printed: dict[str, float | bool | None]

    @property
    def memory_bytes(self) -> int:
        """Bytes the card holds: its memory in binary gigabytes."""
        return round(self.memory_gib * 1024 * _MIB)

    @property
    def driver_memory_bytes(self) -> int | None:
        """Bytes the driver reports as the card's total (None: not published)."""
        if self.driver_memory_mib is None:
            return None
        return self.driver_memory_mib * _MIB


@lru_cache(maxsize=1024)  # every lookup of a chip or a link by name asks it
def normal_name(name: str) -> str:
    """``name`` in lower case with everything but letters and digits dropped."""
    return "".join(c for c in name.lower() if c.isalnum())


@lru_cache(maxsize=1)
def chips() -> tuple[ChipFacts, ...]:
    """Every chip of the table, in its order."""
    rows = json.loads(CHIP_FILE.read_text(encoding="utf-8"))["chips"]
    return tuple(
        ChipFacts(
            key=r["key"],
            name=r["name"],
            aliases=tuple(r["aliases"]),
            architecture=r["architecture"],
            bf16_flops_per_s=r["bf16_flops"],
            fp8_flops_per_s=r["fp8_flops"],
            fp4_flops_per_s=r["fp4_flops"],
            bytes_per_s=r["bytes_per_s"],
            memory_gib=r["memory_gib"],
            driver_memory_mib=r["driver_memory_mib"],
            link=r["link"],
            link_domain=r["link_domain"],
            network=r["network"],
            board_power_w=r["board_power_w"],
            source=r["source"],
            note=r["note"],
            driver_memory_source=r["driver_memory_source"],
            power_source=r["power_source"],
            power_note=r["power_note"],
            printed=r["printed"],
        )
        for r in rows
    )


@lru_cache(maxsize=1)
def _by_name() -> dict[str, ChipFacts]:
    found: dict[str, ChipFacts] = {}
    for c in chips():
        for name in (c.key, c.name, *c.aliases):
            found[normal_name(name)] = c
    return found


def chip(name: str) -> ChipFacts:
    """The chip called ``name`` (its key, its name or an alias, in any case)."""
    found = _by_name().get(normal_name(name)) if isinstance(name, str) else None
    if found is None:
        known = ", ".join(c.key for c in chips())
        raise ValueError(f"no chip called {name!r}; the shipped ones are: {known}")
    return found
