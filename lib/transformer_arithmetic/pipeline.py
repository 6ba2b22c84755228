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

Three schedules shrink the bubble further. The interleaved 1F1B schedule of Narayanan et
al. (2021) gives each device v chunks of L / (v N_pp) layers spread along the model, so
a pass through a chunk is v times shorter and the bubble shrinks v times, for v times
the sends. Zero-bubble schedules (Qi et al., 2024) split each backward pass into its
input gradients (B, which the stage before waits for) and its weight gradients (W, which
can wait), and put the W passes into the bubble. DualPipe (DeepSeek-AI, 2024) feeds
micro-batches in from both ends of a pipeline that holds the model twice, and overlaps
one micro-batch's forward chunk with another's backward chunk. Their bubbles are given
as their papers state them (``bubble_time``); the two 1F1B schedules are also simulated
(``pipeline_schedule``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import checked_positive, checked_whole
from .shapes import ModelShape
from .work import head_flops, layer_pair_flops, layer_weight_flops

__all__ = [
    "SCHEDULES",
    "Slot",
    "bubble_share",
    "pipeline_schedule",
    "schedule_length",
    "micro_batches_held",
    "stage_send_bytes",
    "INTERLEAVED",
    "BUBBLE_SCHEDULES",
    "interleaved_bubble_share",
    "bubble_time",
    "peak_in_flight",
    "stage_layers",
    "stage_forward_flops",
    "interleaved_micro_batches_held",
    "uneven_stage_layers",
]

SCHEDULES = ("GPipe", "1F1B")
"""The two schedules the page draws first."""

INTERLEAVED = "interleaved 1F1B"
"""Narayanan et al.'s schedule with several chunks of layers a device."""

BUBBLE_SCHEDULES = ("1F1B", INTERLEAVED, "ZB-H1", "ZB-H2", "DualPipe")
"""The schedules ``bubble_time`` prices."""


@dataclass(frozen=True)
class Slot:
    """One pass of one micro-batch through one stage, and when it runs."""

    stage: int
    kind: str  # "forward" or "backward"
    micro_batch: int
    start: float
    end: float
    chunk: int = 0  # which of the device's chunks of layers (interleaved schedule)


def bubble_share(stages: int, micro_batches: int) -> float:
    """Share of each device's time spent idle in the bubble: (N_pp - 1) / (N_mb + N_pp -
    1), for GPipe and 1F1B alike."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    return (p - 1) / (m + p - 1)


def _order(
    schedule: str, stage: int, stages: int, micro: int, chunks: int = 1
) -> list[tuple[str, int, int]]:
    """The passes one stage runs, in its order: (kind, micro-batch, chunk)."""
    if schedule == "GPipe":
        return [("forward", i, 0) for i in range(micro)] + [
            ("backward", i, 0) for i in reversed(range(micro))
        ]
    if schedule == "1F1B":
        warm = min(stages - stage - 1, micro)
        order = [("forward", i, 0) for i in range(warm)]
        for i in range(micro - warm):
            order += [("forward", warm + i, 0), ("backward", i, 0)]
        return order + [("backward", i, 0) for i in range(micro - warm, micro)]
    # Megatron-LM's interleaved order: micro-batches in groups of N_pp, each group
    # through chunk 0, then chunk 1, ...; backward passes through the chunks in reverse
    p, v, total = stages, chunks, micro * chunks

    def pass_of(k: int, forward: bool) -> tuple[int, int]:
        chunk = (k % (p * v)) // p
        return (k // (p * v)) * p + k % p, chunk if forward else v - 1 - chunk

    warm = min((p - stage - 1) * 2 + (v - 1) * p, total)
    order = [("forward", *pass_of(k, True)) for k in range(warm)]
    for k in range(total - warm):
        order += [("forward", *pass_of(warm + k, True)),
                  ("backward", *pass_of(k, False))]
    rest = range(total - warm, total)
    return order + [("backward", *pass_of(k, False)) for k in rest]


def pipeline_schedule(
    stages: int,
    micro_batches: int,
    schedule: str = "1F1B",
    backward: float = 2.0,
    chunks: int = 1,
) -> list[Slot]:
    """Every pass of every micro-batch through every stage, each started as soon as its
    stage is free and what it needs has arrived: a forward pass needs the stage before
    to have passed that micro-batch forward, a backward pass needs the stage after to
    have passed it back (the last stage, its own forward pass). Under the interleaved
    schedule (``chunks`` of layers a device, N_mb a multiple of N_pp, as Megatron-LM
    asks) the model's order of chunks is chunk 0 of every device, then chunk 1, ..., and
    each pass takes 1 / chunks of a stage's time."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    back = checked_positive("backward", backward)
    v = checked_whole("chunks", chunks, minimum=1)
    _schedule(schedule, v)
    if schedule == INTERLEAVED and m % p:
        raise ValueError(f"micro_batches={m} is not a multiple of stages={p}, which "
                         "the interleaved schedule needs")
    orders = [_order(schedule, s, p, m, v) for s in range(p)]
    done: dict[tuple[str, int, int], float] = {}
    free, nxt, slots = [0.0] * p, [0] * p, []
    last = v * p - 1  # the model's last chunk, as an index along the model
    while any(nxt[s] < len(orders[s]) for s in range(p)):
        moved = False
        for s in range(p):
            if nxt[s] == len(orders[s]):
                continue
            kind, i, c = orders[s][nxt[s]]
            at = c * p + s  # this chunk's place along the model
            if kind == "forward":
                ready = 0.0 if at == 0 else done.get(("forward", at - 1, i))
            elif at == last:
                ready = done.get(("forward", at, i))
            else:
                ready = done.get(("backward", at + 1, i))
            if ready is None:
                continue
            start = max(free[s], ready)
            end = start + (1.0 if kind == "forward" else back) / v
            done[(kind, at, i)], free[s], nxt[s] = end, end, nxt[s] + 1
            slots.append(Slot(s, kind, i, start, end, c))
            moved = True
        if not moved:  # cannot happen for these schedules; a guard, not a case
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


def _schedule(schedule: str, chunks: int = 1) -> str:
    """``schedule`` if it is one of ``SCHEDULES`` (one chunk a device) or the
    interleaved one (more)."""
    if schedule not in (*SCHEDULES, INTERLEAVED):
        raise ValueError(
            f"schedule must be one of {', '.join((*SCHEDULES, INTERLEAVED))}, "
            f"got {schedule!r}"
        )
    if (schedule == INTERLEAVED) != (chunks > 1):
        raise ValueError(f"{schedule} with chunks={chunks}: only the interleaved "
                         "schedule has more than one chunk a device")
    return schedule


def stage_send_bytes(m: ModelShape, tokens: int) -> int:
    """Bytes one stage sends the next for one micro-batch of ``tokens`` positions in the
    forward pass (the same come back as gradients): one vector of d numbers each."""
    tokens = checked_whole("tokens", tokens)
    return tokens * m.width * m.bytes_per_number


def interleaved_bubble_share(stages: int, micro_batches: int, chunks: int) -> float:
    """Share of each device's time idle under the interleaved schedule with ``chunks``
    of layers a device: the bubble (N_pp - 1) / v stage-passes long against N_mb of
    work, (N_pp - 1) / (v N_mb + N_pp - 1) (Narayanan et al.'s (p - 1) / (v m) of the
    ideal time)."""
    p = checked_whole("stages", stages, minimum=1)
    m = checked_whole("micro_batches", micro_batches, minimum=1)
    v = checked_whole("chunks", chunks, minimum=1)
    return (p - 1) / (v * m + p - 1)


def bubble_time(
    schedule: str,
    stages: int,
    forward: float = 1.0,
    backward_input: float = 1.0,
    backward_weight: float = 1.0,
    chunks: int = 2,
) -> float:
    """Idle time of each device in a step, in the units of the passes, as each
    schedule's paper states it, with F, B and W a micro-batch's forward pass, input-
    gradient pass and weight-gradient pass through one stage: 1F1B (N_pp - 1)(F + B +
    W); interleaved with v chunks, that over v; ZB-H1 (N_pp - 1)(F + B - W) and ZB-H2
    (N_pp - 1)(F + B - 2W) (Qi et al., 2024); DualPipe (N_pp / 2 - 1)(F&B + B + W - 3W)
    with its full backward B + W, and F&B, a forward chunk overlapped with a backward
    one, taken as F + B + W (no gain from the overlap) (DeepSeek-AI, 2024)."""
    p = checked_whole("stages", stages, minimum=1)
    f = checked_positive("forward", forward)
    b = checked_positive("backward_input", backward_input)
    w = checked_positive("backward_weight", backward_weight)
    if schedule == "1F1B":
        return (p - 1) * (f + b + w)
    if schedule == INTERLEAVED:
        return (p - 1) * (f + b + w) / checked_whole("chunks", chunks, minimum=1)
    if schedule == "ZB-H1":
        return (p - 1) * max(f + b - w, 0.0)
    if schedule == "ZB-H2":
        return (p - 1) * max(f + b - 2 * w, 0.0)
    if schedule == "DualPipe":
        if p % 2:
            raise ValueError(f"DualPipe needs an even number of stages, got {p}")
        return (p / 2 - 1) * max((f + b + w) + (b + w) - 3 * w, 0.0)
    raise ValueError(f"schedule must be one of {', '.join(BUBBLE_SCHEDULES)}, "
                     f"got {schedule!r}")


def peak_in_flight(plan: list[Slot], stage: int, chunks: int = 1) -> float:
    """The most micro-batches' activations ``stage`` holds at once in a simulated
    ``plan`` (forward passes done whose backward pass has not ended), counted in whole
    stages' worth: a chunk of an interleaved schedule counts 1 / chunks."""
    v = checked_whole("chunks", chunks, minimum=1)
    events = sorted((x.end, x.kind == "forward")
                    for x in plan if x.stage == stage)
    held = best = 0
    for _, forward in events:  # at equal times a backward pass frees first
        held += 1 if forward else -1
        best = max(best, held)
    return best / v


def stage_layers(
    layers: int, stages: int, fewer_first: int = 0, fewer_last: int = 0
) -> list[int]:
    """Layers on each of ``stages`` when the first and last stages take ``fewer_first``
    and ``fewer_last`` layers less than the others, which share the rest evenly (the
    earlier stages one more where it does not divide); Llama 3 takes one layer off each
    end, which hold the input table and the output layer."""
    n = checked_whole("layers", layers, minimum=1)
    p = checked_whole("stages", stages, minimum=1)
    a = checked_whole("fewer_first", fewer_first)
    z = checked_whole("fewer_last", fewer_last)
    if p == 1:
        return [n]
    base, extra = divmod(n + a + z, p)
    counts = [base + (1 if s < extra else 0) for s in range(p)]
    counts[0] -= a
    counts[-1] -= z
    if min(counts) < 0 or sum(counts) != n:
        raise ValueError(f"{n} layers cannot be cut into {p} stages with "
                         f"{a} fewer first and {z} fewer last")
    return counts


def stage_forward_flops(
    m: ModelShape, layers_per_stage: list[int], tokens: int
) -> list[int]:
    """Operations of one micro-batch of ``tokens`` positions through each stage's
    forward pass: its layers, and on the last stage the output layer too (the input
    table is looked up, not multiplied)."""
    tokens = checked_whole("tokens", tokens, minimum=1)
    layer = layer_weight_flops(m, tokens) + layer_pair_flops(m, tokens)
    flops = [checked_whole("layers", k) * layer for k in layers_per_stage]
    flops[-1] += head_flops(m, tokens)
    return flops


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
