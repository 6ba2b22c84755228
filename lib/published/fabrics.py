"""How real machines join their chips, as published: one row a machine, NCCL's cost
model for each of its protocols, and published measurements of collectives
(``data/fabrics.json``, each row with its source)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .chips import normal_name

__all__ = ["FABRIC_FILE", "MachineFacts", "ProtocolFacts", "AchievedFacts",
           "machines", "machine", "protocols", "protocol", "nvls_efficiency",
           "achieved_rows", "achieved", "ByNodesFacts", "by_nodes_rows", "by_nodes"]

FABRIC_FILE = Path(__file__).parent / "data" / "fabrics.json"
"""The table of machines, protocols and measured collectives."""


@dataclass(frozen=True)
class MachineFacts:
    """One machine: the chips one fast-link domain joins (``devices``), its link (a key
    of ``links``, None where the table has no row for it), whether its switches add the
    arrays they carry (in-switch reduction), its network link and cards a chip."""

    key: str
    name: str
    chip: str | None
    devices: int
    link: str | None
    in_switch_reduction: bool
    network: str | None
    nics_per_device: int
    source: str
    note: str


@dataclass(frozen=True)
class ProtocolFacts:
    """One of NCCL's protocols as its tuning model prices a ring: seconds a call,
    seconds a step by kind of link (``nvlink``, ``pcie``, ``network``), the share of
    the link's bandwidth it keeps and the most bus bandwidth it reaches (None: no
    cap)."""

    name: str
    base_latency_s: float
    step_latency_s: dict[str, float]
    bandwidth_share: float
    bus_cap_bytes_per_s: float | None
    note: str


@dataclass(frozen=True)
class AchievedFacts:
    """A published measurement of a collective: its bus bandwidth (bytes a second as
    nccl-tests reports it), its algorithm bandwidth, or the seconds one call of
    ``array_bytes`` took on ``devices`` (None where not given)."""

    key: str
    link: str | None
    collective: str
    devices: int | None
    array_bytes: int | None
    bus_bytes_per_s: float | None
    alg_bytes_per_s: float | None
    seconds: float | None
    source: str
    note: str


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(FABRIC_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def machines() -> tuple[MachineFacts, ...]:
    """Every machine of the table, in its order."""
    return tuple(MachineFacts(**r) for r in _table()["machines"])


def machine(name: str) -> MachineFacts:
    """The machine called ``name`` (its key or its name, in any case)."""
    return _find(machines(), name, "machine")


@lru_cache(maxsize=1)
def protocols() -> tuple[ProtocolFacts, ...]:
    """NCCL's three protocols, fastest to start first."""
    return tuple(ProtocolFacts(**r) for r in _table()["protocols"]["rows"])


def protocol(name: str) -> ProtocolFacts:
    """The protocol called ``name`` (LL, LL128 or Simple, in any case)."""
    want = normal_name(name) if isinstance(name, str) else None
    for p in protocols():
        if normal_name(p.name) == want:
            return p
    known = ", ".join(p.name for p in protocols())
    raise ValueError(f"no protocol called {name!r}; NCCL's are: {known}")


def nvls_efficiency(generation: str) -> float:
    """The share of the link NCCL's model gives an in-switch all-reduce on a GPU
    generation (``hopper`` or ``blackwell``)."""
    table = _table()["protocols"]["nvls_efficiency"]
    if generation not in table:
        raise ValueError(f"no NVLS efficiency for {generation!r}; known: "
                         f"{', '.join(table)}")
    return float(table[generation])


@lru_cache(maxsize=1)
def achieved_rows() -> tuple[AchievedFacts, ...]:
    """Every published measurement of the table, in its order."""
    return tuple(AchievedFacts(**r) for r in _table()["achieved"])


def achieved(key: str) -> AchievedFacts:
    """The published measurement called ``key``."""
    return _find(achieved_rows(), key, "measurement")


def _find(rows, name, what):
    want = normal_name(name) if isinstance(name, str) else None
    for r in rows:
        if want in (normal_name(r.key), normal_name(getattr(r, "name", r.key))):
            return r
    known = ", ".join(r.key for r in rows)
    raise ValueError(f"no {what} called {name!r}; the shipped ones are: {known}")


@dataclass(frozen=True)
class ByNodesFacts:
    """Collectives' bus bandwidth (bytes a second, as nccl-tests reports it) measured
    over every chip of 1, 2, ... nodes of one ``machine`` (a key of the machines),
    for arrays of ``array_bytes``, by collective (all-reduce, all-gather,
    reduce-scatter), one figure for each of ``nodes``."""

    key: str
    machine: str
    array_bytes: int
    nodes: tuple[int, ...]
    bus_bytes_per_s: dict[str, tuple[float, ...]]
    source: str
    note: str

    def bus(self, collective: str, nodes: float) -> float:
        """Bus bandwidth (bytes a second) of ``collective`` over ``nodes`` nodes:
        straight between the measured counts on logarithmic axes, held at the ends."""
        ys = self.bus_bytes_per_s[collective]
        xs = [math.log(n) for n in self.nodes]
        x = min(max(math.log(max(nodes, 1)), xs[0]), xs[-1])
        for i in range(len(xs) - 1):
            if x <= xs[i + 1]:
                t = (x - xs[i]) / (xs[i + 1] - xs[i])
                return math.exp(math.log(ys[i]) * (1 - t) + math.log(ys[i + 1]) * t)
        return ys[-1]


@lru_cache(maxsize=1)
def by_nodes_rows() -> tuple[ByNodesFacts, ...]:
    """Every measurement of collectives by number of nodes, in the table's order."""
    return tuple(ByNodesFacts(
        key=r["key"], machine=r["machine"], array_bytes=r["array_bytes"],
        nodes=tuple(r["nodes"]),
        bus_bytes_per_s={k: tuple(v) for k, v in r["bus_bytes_per_s"].items()},
        source=r["source"], note=r["note"]) for r in _table()["by_nodes"])


def by_nodes(chip_key: str) -> ByNodesFacts | None:
    """The measurement by number of nodes on the machine of ``chip_key`` (None: the
    table has none)."""
    keys = {m.key for m in machines() if m.chip == chip_key}
    for r in by_nodes_rows():
        if r.machine in keys:
            return r
    return None
