"""Which link each group of a split talks over, and what its collectives cost there.

Devices are numbered tensor parallel innermost, then context, data and pipeline
parallel (``plan.py``). A group of ``size`` devices ``stride`` apart fits one machine
when size x stride devices do; otherwise its members spread over machines, ``g`` to a
machine, and its collectives run in two levels (``collectives.hierarchical_time``), or
over the network alone when each member sits in a machine of its own. The costs are the
teaching module's: rings a latency a step, an all-to-all posting to every peer at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer_arithmetic.collectives import (
    Link,
    all_to_all_time,
    hierarchical_time,
    ring_time,
    send_time,
)

from .plan import Split

__all__ = ["Group", "groups", "collective_time", "send_seconds", "crossing_notes",
           "GROUP_NAMES"]

GROUP_NAMES = {"tp": "tensor parallel", "cp": "context parallel",
               "ep": "expert parallel", "dp": "data parallel", "pp": "pipeline"}
"""Each group's name in words."""


@dataclass(frozen=True)
class Group:
    """One group of a split: ``size`` devices ``stride`` apart in the numbering, of
    which ``per_machine`` share a machine, over ``machines`` machines."""

    name: str
    size: int
    stride: int
    per_machine: int
    machines: int

    @property
    def crosses(self) -> bool:
        """True when the group spans more than one machine."""
        return self.machines > 1


def _group(name: str, size: int, stride: int, machine: int | None) -> Group:
    if machine is None or size * stride <= machine or size == 1:
        return Group(name, size, stride, size, 1)
    per = max(1, min(size, machine // stride)) if stride < machine else 1
    while size % per:
        per -= 1
    return Group(name, size, stride, per, size // per)


def groups(s: Split) -> dict[str, Group]:
    """Every group of ``s`` with where its devices sit."""
    expert_stride = s.cp if s.ep > s.tp else 1  # a stage's tp x dp devices, cp apart
    return {
        "tp": _group("tp", s.tp, 1, s.machine),
        "cp": _group("cp", s.cp, s.tp, s.machine),
        "ep": _group("ep", s.ep, expert_stride, s.machine),
        "dp": _group("dp", s.dp, s.tp * s.cp, s.machine),
        "pp": _group("pp", s.pp, s.tp * s.cp * s.dp, s.machine),
    }


def _links(s: Split) -> tuple[Link, Link]:
    inside = s.link
    if inside is None:
        raise ValueError("argument --interconnect: no link between the devices")
    return inside, s.network or inside


def collective_time(s: Split, group: str, collective: str, array_bytes: float) -> float:
    """Seconds of ``collective`` over ``group`` of ``s`` for an array of
    ``array_bytes`` (the teaching module's X): on the machine's link when the group
    fits one machine, in two levels when it spans several, over the network when each
    member sits in a machine of its own."""
    g = groups(s)[group]
    if g.size == 1:
        return 0.0
    inside, network = _links(s)
    if not g.crosses:
        if collective == "all-to-all":
            return all_to_all_time(array_bytes, g.size, g.size, inside, inside)
        return ring_time(collective, array_bytes, g.size, inside)
    if g.per_machine == 1 and collective != "all-to-all":
        return ring_time(collective, array_bytes, g.size, network)
    return hierarchical_time(collective, array_bytes, g.per_machine, g.machines,
                             inside, network)


def send_seconds(s: Split, array_bytes: float) -> float:
    """Seconds one pipeline stage takes to hand the next ``array_bytes`` (one
    point-to-point send, over the network when the stages sit in different
    machines)."""
    if s.pp == 1:
        return 0.0
    inside, network = _links(s)
    g = groups(s)["pp"]
    return send_time(array_bytes, network if g.crosses else inside)


def crossing_notes(s: Split) -> list[str]:
    """One note for each group that spans machines, naming the link it lands on."""
    if s.machine is None or s.network is None:
        return []
    notes = []
    for key, g in groups(s).items():
        if g.crosses:
            how = ("over the network, one member a machine"
                   if g.per_machine == 1 else
                   f"in two levels, {g.per_machine} a machine on {s.link.name} and "
                   f"{g.machines} machines over the network")
            notes.append(f"{GROUP_NAMES[key]} of {g.size} spans {g.machines} machines "
                         f"of {s.machine}: its collectives run {how} "
                         f"({s.network.name}, "
                         f"{s.network.bytes_per_s / 1e9:,.4g} GB/s each way a device)")
    return notes
