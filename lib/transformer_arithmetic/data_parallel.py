"""Data parallel training and ZeRO: what each device holds and what a step sends.

Under data parallelism every one of N_dp devices holds the whole model and works on its
own share of the batch; after the backward pass the devices add up their gradients with
an all-reduce, so that every copy takes the same step. ZeRO (Rajbhandari et al., 2020)
keeps that arithmetic but stops the copies from repeating each other: stage 1 cuts the
optimiser's states (and the four-byte master copy) into N_dp shares, stage 2 the
gradients too, stage 3 the weights too (PyTorch's FSDP with full sharding is stage 3).
A device then updates only its own share, and the collectives that move the shares
around cost about what the all-reduce cost (stage 3: half as much again).

The parts of training memory are those of ``memory.training_memory``; a share is the
larger one when the parameters do not divide evenly (the last device's share is padded,
as FSDP pads it).
"""

from __future__ import annotations

from collections.abc import Mapping

from .checks import checked_whole
from .collectives import Link, ring_bytes_sent, ring_time
from .memory import parameter_count, training_memory
from .shapes import Accelerator, ModelShape
from .work import prefill_flops

__all__ = [
    "ZERO_STAGES",
    "STATE_PARTS",
    "SHARDED_FROM",
    "training_step_flops",
    "training_state_bytes",
    "zero_part_bytes",
    "share",
    "zero_state_bytes",
    "zero_step_bytes",
    "data_parallel_times",
    "smallest_zero_group",
]

ZERO_STAGES = (0, 1, 2, 3)
"""Stage 0 is plain data parallelism; 1, 2 and 3 are ZeRO's stages."""

STATE_PARTS = ("weights", "gradients", "optimiser", "master copy")
"""The parts of training memory that grow with the parameters."""

SHARDED_FROM = {"optimiser": 1, "master copy": 1, "gradients": 2, "weights": 3}
"""The first ZeRO stage that cuts each part into shares."""


def training_step_flops(m: ModelShape, batch: int, seq_len: int) -> int:
    """Operations of one training step on ``batch`` sequences of ``seq_len`` tokens:
    the forward pass (a prefill of each sequence) and a backward pass that costs twice
    as much, so 6 P a token plus the pairs, three times over."""
    batch = checked_whole("batch", batch, minimum=1)
    return 3 * batch * prefill_flops(m, seq_len)


def training_state_bytes(m: ModelShape) -> dict[str, int]:
    """Bytes of the weights, gradients, optimiser states and master copy the whole
    model's training holds (``memory.training_memory``'s parts that grow with P)."""
    parts = training_memory(m, batch=1, seq_len=1)
    return {k: parts[k] for k in STATE_PARTS}


def share(numbers: int, devices: int) -> int:
    """The larger share when ``numbers`` are cut into ``devices`` shares: ceil(P /
    N)."""
    numbers = checked_whole("numbers", numbers)
    devices = checked_whole("devices", devices, minimum=1)
    return -(-numbers // devices)


def zero_state_bytes(m: ModelShape, stage: int, devices: int) -> dict[str, int]:
    """Bytes of each part one of ``devices`` holds under ZeRO ``stage`` (0 to 3): a part
    the stage cuts is one share of the parameters at that part's bytes a number, the
    others are whole."""
    p = parameter_count(m)
    per_number = {part: whole // p for part, whole in training_state_bytes(m).items()}
    return zero_part_bytes(p, per_number, stage, devices)


def zero_part_bytes(
    parameters: int, bytes_a_number: Mapping[str, int], stage: int, devices: int
) -> dict[str, int]:
    """Bytes of each part (``bytes_a_number``: its bytes for each parameter, keyed by
    the names of ``SHARDED_FROM``) one of ``devices`` holds under ZeRO ``stage``, after
    Rajbhandari et al. (2020): a part the stage cuts is ceil(P / N) numbers, the others
    all P."""
    stage = _stage(stage)
    p = checked_whole("parameters", parameters)
    n = checked_whole("devices", devices, minimum=1)
    return {
        part: (share(p, n) if stage >= SHARDED_FROM[part] else p) * b
        for part, b in bytes_a_number.items()
    }


def zero_step_bytes(m: ModelShape, stage: int, devices: int) -> dict[str, float]:
    """Bytes each of ``devices`` sends in one step, by collective (rings): stage 0
    all-reduces the gradients; stages 1 and 2 reduce-scatter them and all-gather the
    updated weights; stage 3 all-gathers the weights for the forward pass and again for
    the backward pass, and reduce-scatters the gradients."""
    stage = _stage(stage)
    n = checked_whole("devices", devices, minimum=1)
    x = parameter_count(m) * m.bytes_per_number  # the gradients, and the weights
    if stage == 0:
        return {"all-reduce of the gradients": ring_bytes_sent("all-reduce", x, n)}
    sent = {
        "reduce-scatter of the gradients": ring_bytes_sent("reduce-scatter", x, n),
        "all-gather of the weights": ring_bytes_sent("all-gather", x, n),
    }
    if stage == 3:
        sent["all-gather of the weights again"] = ring_bytes_sent("all-gather", x, n)
    return sent


def data_parallel_times(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    devices: int,
    batch: int,
    seq_len: int,
) -> dict[str, float]:
    """Seconds of one data-parallel step on ``devices`` sharing ``batch`` sequences:
    each device's arithmetic (its share of the batch at the chip's rate), its backward
    pass alone (two thirds of that), and the gradient all-reduce on ``link``."""
    n = checked_whole("devices", devices, minimum=1)
    batch = checked_whole("batch", batch, minimum=1)
    if batch % n:
        raise ValueError(f"batch={batch} does not divide among devices={n}")
    arithmetic = training_step_flops(m, batch // n, seq_len) / acc.flops_per_s
    x = parameter_count(m) * m.bytes_per_number
    return {
        "arithmetic": arithmetic,
        "backward": arithmetic * 2 / 3,
        "all-reduce": ring_time("all-reduce", x, n, link),
    }


def smallest_zero_group(m: ModelShape, stage: int, memory_bytes: int) -> int | None:
    """The fewest devices over which ZeRO ``stage`` fits the training state in
    ``memory_bytes`` each (before any activations); None when no number of devices
    does (a part the stage keeps whole is already too large)."""
    stage = _stage(stage)
    memory_bytes = checked_whole("memory_bytes", memory_bytes, minimum=1)
    whole = training_state_bytes(m)
    kept = sum(v for k, v in whole.items() if stage < SHARDED_FROM[k])
    cut = [k for k in whole if stage >= SHARDED_FROM[k]]
    if not cut:
        return 1 if kept <= memory_bytes else None
    p = parameter_count(m)
    per_number = sum(whole[k] // p for k in cut)
    room = (memory_bytes - kept) // per_number  # numbers of a share that fit
    return -(-p // room) if room >= 1 else None


def _stage(stage: object) -> int:
    """``stage`` if it is one of ZeRO's stages (0 to 3)."""
    s = checked_whole("stage", stage)
    if s not in ZERO_STAGES:
        raise ValueError(f"stage must be 0, 1, 2 or 3, got {s}")
    return s
