"""Pipeline parallel: the layers cut into N_pp stages, one stage a device.

A batch is cut into N_mb micro-batches. Each stage runs a micro-batch's forward pass
through its layers and hands the activations on; the backward pass comes back the other
way. A stage waits at the start for the first micro-batch to reach it and at the end
for the last gradients to come back: that idle time is the bubble. GPipe (Huang et al.,
2019) runs every forward pass, then every backward pass; the one-forward-one-backward
schedule of PipeDream-Flush (Narayanan et al., 2021) alternates them once the pipeline
is full, so a stage keeps the activations of at most N_pp micro-batches instead of
N_mb, for the same bubble.

Times are in units of one micro-batch's forward pass through one stage; a backward pass
takes ``backward`` of them (2 by default: it computes two products for each one of the
forward pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import checked_positive, checked_whole
from .shapes import ModelShape

__all__ = [
    "SCHEDULES",
    "Slot",
    "bubble_share",
    "pipeline_schedule",
    "schedule_length",
    "micro_batches_held",
    "stage_send_bytes",
    "interleaved_bubble_share",
    "interleaved_micro_batches_held",
    "uneven_stage_layers",
]

SCHEDULES = ("GPipe", "1F1B")
"""The two schedules the page draws."""


@dataclass(frozen=True)
class Slot:
    """One pass of one micro-batch through one stage, and when it runs."""

    stage: int
    kind: str  # "forward" or "backward"
    micro_batch: int
    start: float
    end: float


def bubble_share(stages: int, micro_batches: int) -> float:
    """Share of each device's time spent idle in the bubble: (N_pp - 1) / (N_mb + N_pp -
    1), for GPipe and 1F1B alike."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    return (p - 1) / (m + p - 1)


def _order(schedule: str, stage: int, stages: int, micro: int) -> list[tuple[str, int]]:
    """The passes one stage runs, in its order."""
    if schedule == "GPipe":
        return [("forward", i) for i in range(micro)] + [
            ("backward", i) for i in reversed(range(micro))
        ]
    warm = min(stages - stage - 1, micro)
    order = [("forward", i) for i in range(warm)]
    for i in range(micro - warm):
        order += [("forward", warm + i), ("backward", i)]
    return order + [("backward", i) for i in range(micro - warm, micro)]


def pipeline_schedule(
    stages: int, micro_batches: int, schedule: str = "1F1B", backward: float = 2.0
) -> list[Slot]:
    """Every pass of every micro-batch through every stage, each started as soon as its
    stage is free and what it needs has arrived: a forward pass needs the stage before
    to have passed that micro-batch forward, a backward pass needs the stage after to
    have passed it back (the last stage, its own forward pass)."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    back = checked_positive("backward", backward)
    _schedule(schedule)
    orders = [_order(schedule, s, p, m) for s in range(p)]
    done: dict[tuple[str, int, int], float] = {}
    free, nxt, slots = [0.0] * p, [0] * p, []
    while any(nxt[s] < len(orders[s]) for s in range(p)):
        moved = False
        for s in range(p):
            if nxt[s] == len(orders[s]):
                continue
            kind, i = orders[s][nxt[s]]
            forward = kind == "forward"
            need = ("forward", s - 1, i) if forward else ("backward", s + 1, i)
            if kind == "forward" and s == 0:
                ready = 0.0
            elif kind == "backward" and s == p - 1:
                ready = done.get(("forward", s, i))
            else:
                ready = done.get(need)
            if ready is None:
                continue
            start = max(free[s], ready)
            end = start + (1.0 if kind == "forward" else back)
            done[(kind, s, i)], free[s], nxt[s] = end, end, nxt[s] + 1
            slots.append(Slot(s, kind, i, start, end))
            moved = True
        if not moved:  # cannot happen for the two schedules; a guard, not a case
            raise RuntimeError("the pipeline schedule is stuck")
    return sorted(slots, key=lambda x: (x.stage, x.start))


def schedule_length(stages: int, micro_batches: int, backward: float = 2.0) -> float:
    """Time from the first forward pass to the last backward pass, in forward-pass
    units: (N_mb + N_pp - 1) (1 + backward), for both schedules."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    return (m + p - 1) * (1.0 + checked_positive("backward", backward))


def micro_batches_held(
    stages: int, micro_batches: int, schedule: str, stage: int
) -> int:
    """The most micro-batches whose activations ``stage`` (0 = the first) holds at once,
    waiting for their backward pass: all N_mb under GPipe, N_pp - stage under 1F1B."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    s = checked_whole("stage", stage)
    if s >= p:
        raise ValueError(f"stage={s} is not one of the {p} stages")
    _schedule(schedule)
    return m if schedule == "GPipe" else min(p - s, m)


def _schedule(schedule: str) -> str:
    """``schedule`` if it is one of ``SCHEDULES``."""
    if schedule not in SCHEDULES:
        raise ValueError(
            f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}"
        )
    return schedule


def stage_send_bytes(m: ModelShape, tokens: int) -> int:
    """Bytes one stage sends the next for one micro-batch of ``tokens`` positions in the
    forward pass (the same come back as gradients): one vector of d numbers each."""
    tokens = checked_whole("tokens", tokens)
    return tokens * m.width * m.bytes_per_number


def interleaved_bubble_share(stages: int, micro_batches: int, virtual: int) -> float:
    """Share of each device's time idle in the bubble of the interleaved 1F1B schedule
    (Narayanan et al., 2021), each device holding ``virtual`` chunks of L / (N_pp v)
    layers: the bubble is (N_pp - 1) / v micro-batch passes against N_mb of work, a
    share (N_pp - 1) / (v N_mb + N_pp - 1); v = 1 is ``bubble_share``."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    v = checked_whole("virtual", virtual, minimum=1)
    return (p - 1) / (v * m + p - 1)


def interleaved_micro_batches_held(
    stages: int, micro_batches: int, virtual: int, stage: int
) -> float:
    """Micro-batches' worth of one stage's activations ``stage`` holds at most under the
    interleaved schedule: Megatron-LM warms up 2 (N_pp - stage - 1) + (v - 1) N_pp
    chunks before its first backward pass and holds one more, each 1 / v of the stage
    (the first stage: N_pp + (N_pp - 1) / v, Korthikanti et al.'s factor 1 + (N_pp -
    1) / (N_pp v)), and never more than all N_mb; v = 1 is 1F1B's N_pp - stage."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    v = checked_whole("virtual", virtual, minimum=1)
    s = checked_whole("stage", stage)
    if s >= p:
        raise ValueError(f"stage={s} is not one of the {p} stages")
    if v == 1:
        return float(min(p - s, m))
    chunks = 2 * (p - s - 1) + (v - 1) * p + 1
    return min(chunks / v, float(m))


def uneven_stage_layers(layers: int, stages: int) -> list[int]:
    """Layers of each stage, first to last, as even as they go, the stages holding one
    fewer taken from the ends inwards (first, last, second, second to last, ...): the
    end stages also hold the input table and the output head, so they take the fewer
    layers (Llama 3's 126 layers over 16 stages: 7, fourteen of 8, 7)."""
    n = checked_whole("layers", layers, minimum=1)
    p = checked_whole("stages", stages, minimum=1)
    if p > n:
        raise ValueError(f"{n} layers cannot fill {p} stages")
    per = -(-n // p)
    counts = [per] * p
    ends = [i // 2 if i % 2 == 0 else p - 1 - i // 2 for i in range(p)]
    for i in ends[: per * p - n]:
        counts[i] -= 1
    return counts
