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

from .checks import checked_positive, checked_whole
from .collectives import Link, ring_bytes_sent, ring_time
from .memory import parameter_count, training_memory
from .search import first_true
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
    "fsdp_layer_times",
    "fsdp_hidden_from",
    "hidden_tokens_bound",
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


def zero_step_bytes(
    m: ModelShape,
    stage: int,
    devices: int,
    gradient_bytes: int | None = None,
    micro_batches: int = 1,
) -> dict[str, float]:
    """Bytes each of ``devices`` sends in one step, by collective (rings): stage 0
    all-reduces the gradients; stages 1 and 2 reduce-scatter them and all-gather the
    updated weights; stage 3 all-gathers the weights for the forward pass and again for
    the backward pass, and reduce-scatters the gradients. Gradients travel at
    ``gradient_bytes`` a number (the model's b unless given: Megatron-LM and Llama 3
    reduce them in four-byte numbers). With ``micro_batches`` of gradient accumulation,
    stage 2 reduce-scatters after every micro-batch (it keeps only its share of the
    gradients) and stage 3 also gathers the weights twice for every one."""
    stage = _stage(stage)
    n = checked_whole("devices", devices, minimum=1)
    k = checked_whole("micro_batches", micro_batches, minimum=1)
    g = m.bytes_per_number if gradient_bytes is None else checked_whole(
        "gradient_bytes", gradient_bytes, minimum=1)
    p = parameter_count(m)
    x, grads = p * m.bytes_per_number, p * g  # the weights, the gradients
    if stage == 0:
        return {"all-reduce of the gradients": ring_bytes_sent("all-reduce", grads, n)}
    again = k if stage >= 2 else 1
    sent = {
        "reduce-scatter of the gradients": again * ring_bytes_sent(
            "reduce-scatter", grads, n),
        "all-gather of the weights": (k if stage == 3 else 1) * ring_bytes_sent(
            "all-gather", x, n),
    }
    if stage == 3:
        sent["all-gather of the weights again"] = k * ring_bytes_sent(
            "all-gather", x, n)
    return sent


def data_parallel_times(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    devices: int,
    batch: int,
    seq_len: int,
    gradient_bytes: int | None = None,
) -> dict[str, float]:
    """Seconds of one data-parallel step on ``devices`` sharing ``batch`` sequences:
    each device's arithmetic (its share of the batch at the chip's rate), its backward
    pass alone (two thirds of that), and the gradient all-reduce on ``link`` (at
    ``gradient_bytes`` a number, the model's b unless given)."""
    n = checked_whole("devices", devices, minimum=1)
    batch = checked_whole("batch", batch, minimum=1)
    if batch % n:
        raise ValueError(f"batch={batch} does not divide among devices={n}")
    arithmetic = training_step_flops(m, batch // n, seq_len) / acc.flops_per_s
    g = m.bytes_per_number if gradient_bytes is None else checked_whole(
        "gradient_bytes", gradient_bytes, minimum=1)
    x = parameter_count(m) * g
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


def fsdp_layer_times(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    devices: int,
    tokens: int,
    gradient_bytes: int | None = None,
) -> dict[str, float]:
    """Seconds one layer spends under fully sharded data parallelism (ZeRO stage 3) on
    each of ``devices`` working on ``tokens`` positions: its forward arithmetic, the
    all-gather of the next layer's weights that FSDP prefetches meanwhile, its backward
    arithmetic (twice the forward), and the gather of the previous layer's weights with
    the reduce-scatter of this layer's gradients that run under it."""
    n = checked_whole("devices", devices, minimum=1)
    tokens = checked_whole("tokens", tokens, minimum=1)
    g = m.bytes_per_number if gradient_bytes is None else gradient_bytes
    numbers = parameter_count(m) // m.layers  # about one layer's share
    forward = 2 * tokens * numbers / acc.flops_per_s
    gather = ring_time("all-gather", numbers * m.bytes_per_number, n, link)
    scatter = ring_time("reduce-scatter", numbers * g, n, link)
    return {"forward arithmetic": forward, "all-gather": gather,
            "backward arithmetic": 2 * forward, "all-gather and reduce-scatter":
            gather + scatter}


def fsdp_hidden_from(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    devices: int,
    gradient_bytes: int | None = None,
) -> int:
    """The fewest tokens a device for FSDP's prefetched collectives to hide under the
    arithmetic of the layer they overlap, forward and backward (latencies included)."""

    def hidden(tokens: int) -> bool:
        t = fsdp_layer_times(m, acc, link, devices, tokens, gradient_bytes)
        return (t["all-gather"] <= t["forward arithmetic"]
                and t["all-gather and reduce-scatter"] <= t["backward arithmetic"])

    found = first_true(hidden)
    assert found is not None  # the arithmetic grows with the tokens, the sending not
    return found


def hidden_tokens_bound(
    acc: Accelerator, link: Link, devices: int, bytes_a_number: float,
    flops_a_number: float = 2.0,
) -> float:
    """Tokens a device above which a collective that moves (N-1)/N of an array of
    ``bytes_a_number`` a parameter hides under arithmetic of ``flops_a_number``
    operations a parameter a token, waits left out: (N-1)/N b R / (c S). With c = 2
    it is FSDP's forward gather; with the gradients' bytes and c = 4, data
    parallelism's all-reduce under the backward pass (2(N-1)/N b_g R / (4 S))."""
    n = checked_whole("devices", devices, minimum=1)
    b = checked_positive("bytes_a_number", bytes_a_number)
    c = checked_positive("flops_a_number", flops_a_number)
    return (n - 1) / n * b * acc.flops_per_s / (c * link.bytes_per_s)
