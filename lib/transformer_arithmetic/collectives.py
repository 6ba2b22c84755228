"""Collectives and what they cost: the bytes each device sends and the time it takes.

A collective is one operation that every device of a group takes part in: all-reduce
(every device ends with the sum of everyone's array), reduce-scatter (each ends with one
slice of that sum), all-gather (each ends with every device's slice) and all-to-all
(each sends a different slice to every other). The costs follow the model of Thakur,
Rabenseifner and Gropp (2005): a step that moves ``x`` bytes over a link takes
``latency + x / rate`` seconds, so a collective of ``steps`` steps that sends ``sent``
bytes from each device takes ``steps * latency + sent / rate``. It leaves out the
arithmetic of the sums, the start-up of each call and any contention on the links, so
a real collective is slower, never faster.

``X`` below is the size of the array, in bytes, that the collective is about: the array
each device holds for all-reduce and reduce-scatter, the gathered array for all-gather,
and the array each device hands to all-to-all (one slice for each device).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from published import LinkFacts

from .checks import checked_positive, checked_whole

__all__ = [
    "COLLECTIVES",
    "Link",
    "link_of",
    "ring_steps",
    "ring_bytes_sent",
    "ring_time",
    "tree_steps",
    "tree_all_reduce_time",
    "ring_tree_crossover",
    "bus_bandwidth",
    "two_level_all_reduce_time",
    "two_level_network_bytes",
    "ring_all_reduce_schedule",
    "send_time",
]

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
"""The four collectives the book prices."""


@dataclass(frozen=True)
class Link:
    """What joins one device to the others: bytes a second it carries each way, and the
    seconds one step of a collective waits before its first byte arrives."""

    bytes_per_s: float
    step_latency_s: float
    name: str = field(default="link", compare=False)

    def __post_init__(self) -> None:
        checked_positive("bytes_per_s", self.bytes_per_s)
        checked_positive("step_latency_s", self.step_latency_s)

    def __str__(self) -> str:
        return (
            f"{self.name}: {self.bytes_per_s / 1e9:.4g} GB/s each way, "
            f"{self.step_latency_s * 1e6:.4g} µs a step"
        )


def link_of(facts: LinkFacts) -> Link:
    """The ``Link`` a published link gives: its bytes a second each way and its step
    latency."""
    if not isinstance(facts, LinkFacts):
        raise ValueError(f"facts must be a published link, got {type(facts).__name__}")
    return Link(facts.bytes_per_s_each_way, facts.step_latency_s, name=facts.name)


def _kind(collective: str) -> str:
    """``collective`` if it is one of ``COLLECTIVES``, else a ValueError naming it."""
    if collective not in COLLECTIVES:
        raise ValueError(
            f"collective must be one of {', '.join(COLLECTIVES)}, got {collective!r}"
        )
    return collective


def ring_steps(collective: str, devices: int) -> int:
    """Steps a ring of ``devices`` takes: 2(N-1) for all-reduce (a reduce-scatter then
    an all-gather), N-1 for the other three (all-to-all sends to one peer a step)."""
    n = checked_whole("devices", devices, minimum=1)
    return 2 * (n - 1) if _kind(collective) == "all-reduce" else n - 1


def ring_bytes_sent(collective: str, array_bytes: float, devices: int) -> float:
    """Bytes each device sends: X/N a step, so 2(N-1)/N X for all-reduce and (N-1)/N X
    for reduce-scatter, all-gather and all-to-all."""
    x = _bytes(array_bytes)
    n = checked_whole("devices", devices, minimum=1)
    return ring_steps(collective, n) * x / n


def ring_time(collective: str, array_bytes: float, devices: int, link: Link) -> float:
    """Seconds the collective takes over a ring on ``link``: a latency a step plus the
    bytes each device sends at the link's rate."""
    steps = ring_steps(collective, devices)
    return steps * link.step_latency_s + ring_bytes_sent(
        collective, array_bytes, devices
    ) / link.bytes_per_s


def send_time(array_bytes: float, link: Link) -> float:
    """Seconds one device takes to send ``array_bytes`` to one other (a pipeline
    stage's hand-over): one step's latency plus the bytes at the link's rate."""
    return link.step_latency_s + _bytes(array_bytes) / link.bytes_per_s


def tree_steps(devices: int) -> int:
    """Steps of one pass down (or up) a binomial tree of ``devices``: ceil(log2 N), the
    number of doublings that reach them all."""
    n = checked_whole("devices", devices, minimum=1)
    return math.ceil(math.log2(n)) if n > 1 else 0


def tree_all_reduce_time(array_bytes: float, devices: int, link: Link) -> float:
    """Seconds an all-reduce takes as a reduction up a binomial tree and a broadcast
    back down: 2 ceil(log2 N) steps, each moving the whole array."""
    x = _bytes(array_bytes)
    return 2 * tree_steps(devices) * (link.step_latency_s + x / link.bytes_per_s)


def ring_tree_crossover(devices: int, link: Link) -> float | None:
    """The array size, in bytes, above which the ring all-reduce is quicker than the
    tree (below it the tree's fewer steps win); None when the ring is never slower."""
    n = checked_whole("devices", devices, minimum=2)
    steps_ring, steps_tree = 2 * (n - 1), 2 * tree_steps(n)
    share_ring = 2 * (n - 1) / n  # of X, sent by each device; the tree sends 2 log N
    if steps_ring <= steps_tree:
        return None
    return (
        link.bytes_per_s
        * link.step_latency_s
        * (steps_ring - steps_tree)
        / (steps_tree - share_ring)
    )


def bus_bandwidth(array_bytes: float, devices: int, seconds: float) -> float:
    """What nccl-tests calls the bus bandwidth of an all-reduce of X bytes that took
    ``seconds``: X / seconds times 2(N-1)/N, the rate each device's link really ran
    at."""
    t = checked_positive("seconds", seconds)
    return ring_bytes_sent("all-reduce", array_bytes, devices) / t


def two_level_all_reduce_time(
    array_bytes: float, per_machine: int, machines: int, inside: Link, between: Link
) -> float:
    """Seconds an all-reduce over ``machines`` of ``per_machine`` devices takes in two
    levels: a reduce-scatter inside each machine, an all-reduce of each slice between
    machines, an all-gather inside again."""
    x = _bytes(array_bytes)
    g = checked_whole("per_machine", per_machine, minimum=1)
    checked_whole("machines", machines, minimum=1)
    inner = ring_time("reduce-scatter", x, g, inside) + ring_time(
        "all-gather", x, g, inside
    )
    return inner + ring_time("all-reduce", x / g, machines, between)


def two_level_network_bytes(
    array_bytes: float, per_machine: int, machines: int
) -> float:
    """Bytes each device sends between machines in the two-level all-reduce: 2(M-1)/M of
    its slice X / N_node."""
    g = checked_whole("per_machine", per_machine, minimum=1)
    return ring_bytes_sent("all-reduce", _bytes(array_bytes) / g, machines)


def ring_all_reduce_schedule(
    devices: int,
) -> list[tuple[str, list[tuple[int, int, int]]]]:
    """The ring all-reduce step by step: for each step its phase ('reduce-scatter' or
    'all-gather') and, for every device, (sender, receiver, chunk). In step s of the
    first phase device i sends chunk (i - s) mod N to i + 1, which adds it to its own;
    after N-1 steps device i holds the whole sum of chunk (i + 1) mod N, and in step s
    of the second phase it passes chunk (i + 1 - s) mod N on."""
    n = checked_whole("devices", devices, minimum=1)
    steps = []
    for phase, first in (("reduce-scatter", 0), ("all-gather", 1)):
        for s in range(n - 1):
            steps.append(
                (phase, [(i, (i + 1) % n, (i + first - s) % n) for i in range(n)])
            )
    return steps


def _bytes(array_bytes: float) -> float:
    """``array_bytes`` as a float if it is a size of at least 0 bytes."""
    try:
        x = float(array_bytes)
    except (TypeError, ValueError):
        raise ValueError(f"array_bytes must be a number, got {array_bytes!r}") from None
    if not (x >= 0 and math.isfinite(x)):
        raise ValueError(f"array_bytes must be a finite size of 0 or more, got {x!r}")
    return x
