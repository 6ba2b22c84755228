"""Links between chips as published: one ``LinkFacts`` a row of ``data/links.json``,
with the latency NCCL's own model gives one step of a collective over that kind of
link."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .chips import normal_name

__all__ = ["LINK_FILE", "LinkFacts", "links", "link", "call_latency_s"]

LINK_FILE = Path(__file__).parent / "data" / "links.json"
"""The table of links."""


@dataclass(frozen=True)
class LinkFacts:
    """One link: its name, its kind as NCCL models it (``nvlink``, ``pcie`` or
    ``network``), the bytes a second it carries each way, the seconds one step of a
    collective waits before its first byte arrives, and the sources."""

    key: str
    name: str
    kind: str
    bytes_per_s_each_way: float
    step_latency_s: float
    source: str
    note: str

    @property
    def both_ways_bytes_per_s(self) -> float:
        """Bytes a second in both directions together, as vendors print it."""
        return 2 * self.bytes_per_s_each_way


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(LINK_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def links() -> tuple[LinkFacts, ...]:
    """Every link of the table, in its order."""
    return tuple(LinkFacts(**r) for r in _table()["links"])


@lru_cache(maxsize=256)  # a split asks for its chip's links by name, often
def link(name: str) -> LinkFacts:
    """The link called ``name`` (its key or its name, in any case)."""
    want = normal_name(name) if isinstance(name, str) else None
    for f in links():
        if want in (normal_name(f.key), normal_name(f.name)):
            return f
    known = ", ".join(f.key for f in links())
    raise ValueError(f"no link called {name!r}; the shipped ones are: {known}")


def call_latency_s() -> float:
    """Seconds NCCL's model adds to each call of a ring collective, beyond its steps."""
    return float(_table()["collective_call_latency_s"])
