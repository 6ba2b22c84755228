"""One training step's work and time on one device, and a run's days and chip-hours.

Work, in operations: the forward pass multiplies every token by every matrix it uses
(2 operations a number; the input table is looked up, not multiplied, and the
normalisations only scale) and meets every allowed earlier position (the pairs); the
backward pass does 2 a number for the inputs' gradients and 2 for each trainable
weight's, and twice the pairs; recomputation adds its forward again (full
recomputation: every layer's, not the output head's; selective: the pairs). The
teaching formula ``training.step_flops`` is this count for the plain decoder.

Time, on the roofline: a step of ``micro_batches`` micro-batches runs each one's
forward and backward pass (the slower of its arithmetic and its bytes: the weights
read in each pass, the gradients written, and read back too when a later micro-batch
adds into them, the activations and the loss's logits written and read), then the
optimizer's step once (its states, the master copy, the gradients and the weights
read and written: bytes alone). The teaching formula ``training.step_phase_times``
is this for the plain decoder in one micro-batch (test_training_agrees.py).
Model-flops utilisation is the time the model's own
work (no recomputation, no dequantisation) would take at the chip's peak rates, the
weight matrices at the rate their format multiplies at (fp8 weights at the chip's fp8
peak), over the step's time: it can never pass 100 %.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from transformer_arithmetic import Accelerator
from transformer_arithmetic.checks import checked_whole
from transformer_arithmetic.timing import roofline_time

from . import stored
from .chips import Chip, matrix_flops_per_s
from ..anatomy.model import Model
from .training import (LOSS_PARTS, Training, bytes_per_parameter, lora_parameters,
                       step_memory, trainable_parameters)

__all__ = [
    "StepWork",
    "multiplied_parameters",
    "step_work",
    "micro_batch_bytes",
    "optimizer_bytes",
    "pass_time",
    "optimizer_time",
    "step_time",
    "model_time",
    "utilisation_rate",
    "train_figures",
]


@dataclass(frozen=True)
class StepWork:
    """One device's operations for ``t.batch`` sequences: ``matrix`` in the base
    weight matrices, ``other`` everywhere else (pairs, adapters, dequantisation), and
    ``model`` the model's own work (no recomputation, no dequantisation) that
    utilisation counts, of which ``model_matrix`` in the weight matrices."""

    matrix: float
    other: float
    model: float
    model_matrix: float


def multiplied_parameters(model: Model) -> float:
    """Numbers one token is multiplied by in a forward pass: every matrix it uses (its
    experts; a looped layer's once a pass), not the tables it is looked up in, not the
    normalisations."""
    layout = model.layout
    norms = sum(b.passes * b.norms for b in layout.blocks) + layout.final_norm
    norms += layout.embedding_norm
    return layout.work_parameters - layout.looked_up - norms


def _head_numbers(model: Model) -> int:
    """Numbers of the output head a token is multiplied by (0 on a stage without
    it)."""
    layout = model.layout
    return layout.vocab * (layout.embedding_width or layout.width) if layout.head else 0


def step_work(model: Model, t: Training) -> StepWork:
    """The operations of one device's step over ``t.batch`` sequences of
    ``t.seq_len`` (its ``t.shares.context`` share of each): forward, backward (inputs'
    gradients everywhere, weights' gradients for the trainable numbers), any
    recomputation, and turning packed weights back into numbers once a pass."""
    b, layout = t.batch, model.layout
    n = t.seq_len // t.shares.context  # the device's tokens of each sequence
    one = 2 * multiplied_parameters(model) * n  # one pass through the weights
    layers = one - 2 * _head_numbers(model) * n
    pairs = (layout.prefill_pair_flops(t.seq_len) + layout.state_flops * t.seq_len)
    pairs /= t.shares.context  # balanced over the pieces (the causal mask's zigzag)
    adapters = 2 * lora_parameters(model, t.lora) * n if t.lora else 0
    full = t.recompute == "full"
    weight_grads = 0 if t.lora else 1
    matrix = b * (one * (2 + weight_grads) + (layers if full else 0))
    redo_pairs = t.recompute != "none"
    other = b * (pairs * (3 + redo_pairs) + adapters * (3 + full))
    packed = model.weights.dequant_ops * stored.packed_numbers_read(model, t.batch * n)
    other += (2 + full) * packed * t.micro_batches
    own_matrix = b * one * (2 + weight_grads)
    own = own_matrix + b * (3 * pairs + 3 * adapters)
    return StepWork(matrix=matrix, other=other, model=own, model_matrix=own_matrix)


def micro_batch_bytes(model: Model, t: Training, adding: bool = False) -> float:
    """Bytes one micro-batch's forward and backward passes read and write: the
    weights read in each pass (once more under full recomputation), the gradients
    written (and read, when ``adding`` into an earlier micro-batch's), the activations
    and the loss's logits (its log-softmax and their gradients) written and read."""
    part = step_memory(model, t)
    weights = part["weights"] + part["gathered weights"]
    passes = 3 if t.recompute == "full" else 2
    grads = part["gradients"] + part["float32 gradients"]
    loss = sum(part.get(k, 0.0) for k in LOSS_PARTS)
    return (passes * weights + (2 if adding else 1) * grads
            + 2 * part["activations"] + 2 * loss)


def optimizer_bytes(model: Model, t: Training) -> float:
    """Bytes the optimizer's step reads and writes once a step: its states and the
    master copy read and written, the gradients read, the weights written."""
    part = step_memory(model, t)
    states = part["optimizer states"] + part["float32 master weights"]
    grads = part["gradients"] + part["float32 gradients"]
    return 2 * states + grads + part["weights"]


def _rate_ratio(model: Model, acc: Accelerator) -> float:
    """The 16-bit rate over the rate the weight matrices multiply at (1, or 1/2 for
    fp8 weights on a chip with twice the fp8 rate)."""
    return acc.flops_per_s / matrix_flops_per_s(acc, model.weights.fp8_compute)


def pass_time(
    model: Model, acc: Accelerator, t: Training, adding: bool = False
) -> float:
    """Seconds of one micro-batch's forward and backward pass on the roofline: the
    slower of its arithmetic (the base matrices at the rate their format multiplies
    at) and its bytes (``adding``: its gradients added into an earlier one's)."""
    one = dataclasses.replace(t, batch=t.micro_batch, micro_batches=1)
    w = step_work(model, one)
    work = w.matrix * _rate_ratio(model, acc) + w.other
    return roofline_time(work, micro_batch_bytes(model, one, adding), acc)


def optimizer_time(model: Model, acc: Accelerator, t: Training) -> float:
    """Seconds of the optimizer's step: its bytes at the chip's bandwidth."""
    return optimizer_bytes(model, t) / acc.bytes_per_s


def step_time(model: Model, acc: Accelerator, t: Training) -> float:
    """Seconds of one step on the roofline: each micro-batch's forward and backward
    pass (``pass_time``; every one after the first adds into the gradients), then the
    optimizer's step (``optimizer_time``)."""
    later = (t.micro_batches - 1) * pass_time(model, acc, t, adding=True)
    return pass_time(model, acc, t) + later + optimizer_time(model, acc, t)


def _peak(acc: Accelerator) -> float:
    """The chip's 16-bit peak: its rate before any efficiency."""
    return acc.flops_per_s / (acc.flops_efficiency if isinstance(acc, Chip) else 1.0)


def model_time(model: Model, acc: Accelerator, t: Training) -> float:
    """Seconds the model's own work of one step (``StepWork.model``) would take at the
    chip's peak rates, the weight matrices at the rate their format multiplies at: the
    numerator of model-flops utilisation."""
    w = step_work(model, t)
    ratio = _rate_ratio(model, acc)
    return (w.model_matrix * ratio + (w.model - w.model_matrix)) / _peak(acc)


def utilisation_rate(model: Model, acc: Accelerator) -> str:
    """Which peak model-flops utilisation is taken against, in words."""
    if _rate_ratio(model, acc) != 1.0:
        return ("the chip's fp8 peak for the weight matrices (the rate they multiply "
                "at), its 16-bit peak for the rest")
    return "the chip's 16-bit peak"


def train_figures(model: Model, acc: Accelerator, t: Training, tokens: int) -> dict:
    """The step's memory by part, its time, tokens a second over all devices,
    model-flops utilisation against the rates the step runs at, and the days and
    chip-hours that ``tokens`` training tokens take."""
    tokens = checked_whole("tokens", tokens, minimum=1)
    parts = step_memory(model, t)
    seconds = step_time(model, acc, t)
    per_s = t.batch * t.seq_len * t.devices / seconds
    total = tokens / per_s
    return {
        "memory": dict(parts),
        "memory_bytes": sum(parts.values()),
        "fits": sum(parts.values()) <= acc.memory_bytes,
        "trainable_parameters": trainable_parameters(model, t),
        "bytes_per_parameter": bytes_per_parameter(model, t),
        "step_seconds": seconds,
        "tokens_per_s": per_s,
        "model_flops_utilisation": model_time(model, acc, t) / seconds,
        "utilisation_against": utilisation_rate(model, acc),
        "training_seconds": total,
        "chip_hours": total * t.devices / 3600,
    }
