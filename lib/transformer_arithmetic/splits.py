"""Choosing a split: memory and time per device for a training run and for a service.

A training run on N_dev = N_dp x N_tp x N_pp devices is priced from the pieces of the
page: each device holds 1 / (N_tp N_pp) of the model (ZeRO cuts the parts its stage
cuts by N_dp too) and the activations of the micro-batches it has in flight; a step
takes the device's share of the arithmetic, the pipeline's bubble, the tensor-parallel
all-reduces (which wait on the arithmetic and are counted in full) and whatever part of
the data-parallel collectives the last backward pass does not cover. Devices are
numbered with the tensor-parallel group innermost (as Megatron-LM numbers them), so a
group of devices that fits in one machine talks over the machine's own link and a larger
one over the network.

Assumptions stated once: a micro-batch is one sequence; activations are kept as
Korthikanti et al. (2023) count them with the score grids recomputed and sequence
parallelism (so they split by N_tp); the logits are cut by vocabulary; every
communication moves at its link's rate and never contends with another. By default
nothing but the data-parallel collectives overlaps the arithmetic (the simple count);
``overlap=True`` charges, as schedules that overlap do, only what sticks out: each
tensor-parallel collective beyond the matrix product it runs beside
(``tensor_parallel.tp_overlap_pairs``, backward products twice as long), and each
stage-to-stage send beyond one micro-batch's pass through the stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import checked_whole
from .collectives import Link, ring_time, send_time
from .data_parallel import (SHARDED_FROM, share, training_state_bytes,
                            training_step_flops)
from .memory import layer_activation_bytes, logits_bytes, parameter_count
from .pipeline import micro_batches_held
from .shapes import Accelerator, ModelShape
from .tensor_parallel import (check_split, tp_cache_bytes_per_token, tp_decode_parts,
                              tp_layer_numbers, tp_overlap_pairs, tp_weight_bytes,
                              vocab_rows)

__all__ = ["Split", "splits_of", "stage_numbers", "device_memory", "step_times",
           "serving_point"]


@dataclass(frozen=True)
class Split:
    """How a training run cuts its devices: data-, tensor- and pipeline-parallel group
    sizes, and the ZeRO stage of the data-parallel group."""

    dp: int
    tp: int
    pp: int
    zero: int = 1

    @property
    def devices(self) -> int:
        """N_dev = N_dp x N_tp x N_pp."""
        return self.dp * self.tp * self.pp

    def __str__(self) -> str:
        return f"dp {self.dp} x tp {self.tp} x pp {self.pp}"


def splits_of(m: ModelShape, devices: int, batch: int, zero: int = 1) -> list[Split]:
    """Every split of ``devices`` that the model and a batch of ``batch`` sequences
    allow: N_tp divides the layer (``tensor_parallel.check_split``), N_pp the layers,
    N_dp the batch."""
    n = checked_whole("devices", devices, minimum=1)
    batch = checked_whole("batch", batch, minimum=1)
    found = []
    for tp in range(1, n + 1):
        for pp in range(1, n // tp + 1):
            if n % (tp * pp):
                continue
            dp = n // (tp * pp)
            try:
                check_split(m, tp)
            except ValueError:
                continue
            if m.layers % pp == 0 and batch % dp == 0:
                found.append(Split(dp, tp, pp, zero))
    return found


def stage_numbers(m: ModelShape, split: Split) -> int:
    """Numbers of the model one device of the fullest pipeline stage holds. With one
    stage, its tensor-parallel share of everything; with more, the last stage: its
    share of L / N_pp layers and of the output table (a copy of the input table when
    the two are tied, as Megatron-LM keeps one) and the final normalisation, one
    normalisation more than the first stage holds with its input table."""
    n = split.tp
    if split.pp == 1:
        return tp_weight_bytes(m, n) // m.bytes_per_number
    layers = m.layers // split.pp * tp_layer_numbers(m, n)
    return layers + vocab_rows(m, n) * m.width + m.norm_numbers * m.width


def device_memory(
    m: ModelShape, split: Split, batch: int, seq_len: int
) -> dict[str, int]:
    """Bytes the busiest device holds, by part: the training state of its share of the
    model (the fuller end stage, ``stage_numbers``), the activations
    of the micro-batches it keeps for their backward pass, and the logits the last
    stage keeps (when the first stage is also the last)."""
    check = _valid(m, split, batch)
    per_stage = stage_numbers(m, split)
    p = parameter_count(m)
    held = {}
    for part, whole in training_state_bytes(m).items():
        cut = split.zero >= SHARDED_FROM[part]
        held[part] = (share(per_stage, split.dp) if cut else per_stage) * (whole // p)
    micro = check // split.dp  # micro-batches of one sequence on each device
    layer = sum(layer_activation_bytes(m, 1, seq_len, keep_scores=False).values())
    kept = micro_batches_held(split.pp, micro, "1F1B", 0)
    held["activations"] = kept * (m.layers // split.pp) * layer // split.tp
    if split.pp == 1:
        held["logits"] = logits_bytes(m, 1, seq_len) // split.tp
    return held


def step_times(
    m: ModelShape,
    acc: Accelerator,
    split: Split,
    batch: int,
    seq_len: int,
    inside: Link,
    between: Link,
    machine: int,
    overlap: bool = False,
) -> dict[str, float]:
    """Seconds one training step spends on the busiest device, by cause: its share of
    the arithmetic, the bubble, the tensor-parallel all-reduces, the stage-to-stage
    sends and the exposed data-parallel collectives (links chosen by ``machine``, the
    devices one machine joins by ``inside``); with ``overlap``, only the parts of the
    tensor-parallel collectives and the sends that outlast the work beside them."""
    _valid(m, split, batch)
    machine = checked_whole("machine", machine, minimum=1)
    micro = batch // split.dp
    flops = training_step_flops(m, batch, seq_len)
    arithmetic = flops / split.devices / acc.flops_per_s
    one_micro = arithmetic / micro
    tp_link = inside if split.tp <= machine else between
    pp_link = inside if split.devices <= machine else between
    dp_link = inside if split.tp * split.dp <= machine else between
    activations = seq_len * m.width * m.bytes_per_number
    per_layer = 4 * ring_time("all-reduce", activations, split.tp, tp_link)
    sends = 2 * micro * send_time(activations, pp_link)
    if overlap:
        pairs = tp_overlap_pairs(m, acc, tp_link, split.tp, seq_len)
        per_layer = sum(max(0.0, c - a) + max(0.0, c - 2 * a)
                        for a, c in pairs.values())
        sends = 2 * micro * max(0.0, send_time(activations, pp_link) - one_micro / 3)
    state = stage_numbers(m, split) * m.bytes_per_number  # the device's gradients
    kind = "all-reduce" if split.zero == 0 else "reduce-scatter"
    dp = ring_time(kind, state, split.dp, dp_link)
    if split.zero:
        dp += (2 if split.zero == 3 else 1) * ring_time(
            "all-gather", state, split.dp, dp_link
        )
    return {
        "arithmetic": arithmetic,
        "bubble": one_micro * (split.pp - 1),
        "tensor-parallel": per_layer * (m.layers // split.pp) * micro
        if split.tp > 1 else 0.0,
        "pipeline sends": sends if split.pp > 1 else 0.0,
        "data-parallel": max(0.0, dp - one_micro * 2 / 3) if split.dp > 1 else 0.0,
    }


def serving_point(
    m: ModelShape,
    acc: Accelerator,
    link: Link,
    tp: int,
    context: int,
    batch: int,
) -> dict[str, float] | None:
    """One service of ``tp`` devices (tensor parallel) answering ``batch``
    conversations of ``context`` tokens: seconds a token, tokens a second per device,
    and the bytes each device holds; None when the caches do not fit."""
    parts = tp_decode_parts(m, acc, link, tp, context, batch)
    held = tp_weight_bytes(m, tp) + batch * context * tp_cache_bytes_per_token(m, tp)
    if held > acc.memory_bytes:
        return None
    step = max(parts["reading"], parts["arithmetic"]) + parts["all-reduces"]
    return {"seconds a token": step, "tokens a second a device": batch / step / tp,
            "bytes held": float(held), "all-reduces": parts["all-reduces"]}


def _valid(m: ModelShape, split: Split, batch: int) -> int:
    """``batch`` if ``split`` is one that ``splits_of`` would list."""
    batch = checked_whole("batch", batch, minimum=1)
    if not isinstance(split, Split):
        raise ValueError(f"split must be a Split, got {type(split).__name__}")
    for name in ("dp", "tp", "pp"):
        checked_whole(name, getattr(split, name), minimum=1)
    check_split(m, split.tp)
    if m.layers % split.pp:
        raise ValueError(f"layers={m.layers} do not divide among pp={split.pp} stages")
    if batch % split.dp:
        raise ValueError(f"batch={batch} does not divide among dp={split.dp} groups")
    if split.zero not in (0, 1, 2, 3):
        raise ValueError(f"zero must be 0, 1, 2 or 3, got {split.zero}")
    return batch
