"""One training step of a published model: its memory by part, and its time.

Memory, per device, by part (the teaching formula ``memory.training_memory`` for
the plain decoder, carried over the layout):

- weights: every number in the model's format (a frozen base in its own, packed format
  for QLoRA);
- gradients of the trainable numbers, in the model's format (and, where the trainer
  keeps one, as DeepSpeed does, a float32 copy);
- a float32 master copy of the trainable numbers when the model's format is narrower;
- the optimizer's states: AdamW two float32 moments (8 bytes a number), 8-bit Adam two
  8-bit moments with a 32-bit scale per block of 256 (bitsandbytes' layout), SGD with
  momentum one float32 number;
- activations kept for the backward pass (``activations.py``);
- the logits (the head's output) and the float32 log-softmax the loss keeps.

ZeRO (Rajbhandari et al., 2020) splits the optimizer states and master copy across the
N_dp devices from stage 1 on, the gradients too from stage 2, the weights too at stage 3
(``data_parallel.zero_part_bytes`` is the teaching formula), where each device also
gathers the largest matrix twice (one in use, one arriving).

Time: forward 2 operations a weight a token plus attention's pairs; backward 2 a weight
for the inputs' gradients and 2 a trainable weight for its own, plus twice the pairs;
recomputation adds its forward again. The roofline takes the slower of that arithmetic
and the bytes the step reads; model-flops utilisation counts only the work without
recomputation, against the chip's peak.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer_arithmetic import Accelerator
from transformer_arithmetic.checks import checked_whole
from transformer_arithmetic.timing import roofline_time

from . import costs, stored
from .activations import RECOMPUTE, activation_bytes, logits_bytes, softmax_bytes
from .chips import Chip, matrix_flops_per_s
from .matrices import Matrix, matrices
from .feedforward import Experts
from .model import Model

__all__ = [
    "OPTIMIZERS",
    "LORA_TARGETS",
    "ALL_LINEAR",
    "Lora",
    "Training",
    "lora_parameters",
    "trainable_parameters",
    "optimizer_state_bytes",
    "step_memory",
    "StepWork",
    "step_work",
    "step_bytes",
    "step_time",
    "train_figures",
]

OPTIMIZERS = ("adamw", "adam8bit", "sgd")
"""The optimizers counted: AdamW (two float32 moments a number), 8-bit Adam
(bitsandbytes' ``Adam8bit``: two 8-bit moments with a float32 scale per block of 256
for a tensor of 4,096 numbers or more, float32 moments for a smaller one, and two
256-entry float32 maps), SGD with momentum (one float32 number)."""

EIGHT_BIT_BLOCK = 256
"""Numbers that share one float32 scale in 8-bit Adam's states (bitsandbytes)."""

EIGHT_BIT_MIN = 4096
"""Smallest tensor bitsandbytes gives 8-bit states (``min_8bit_size``)."""

LORA_TARGETS = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
    "q_a_proj",
    "q_b_proj",
    "kv_a_proj_with_mqa",
    "kv_b_proj",
    "in_proj",
    "x_proj",
    "dt_proj",
    "out_proj",
    "project_in",
    "project_out",
    "gate",
    "shared_expert_gate",
    "experts",
)
"""Module names LoRA can target (PEFT's ``target_modules``). PEFT adapts a layer's
stacked experts (``experts``) as two matrices, gate and up together (width to twice the
inner width, at twice the rank) and down: rank x experts x (2 (width + 2 inner) +
(inner + width)) a layer."""

ALL_LINEAR = tuple(n for n in LORA_TARGETS if n not in ("gate", "experts"))
"""What ``all-linear`` adapts: every linear layer but the output head, the routers and
the stacked experts (PEFT's own ``all-linear`` also adapts the router and the experts of
some families, Mixtral's among them: name ``gate`` and ``experts`` to count those)."""


@dataclass(frozen=True)
class Lora:
    """Low-rank adapters of rank ``rank`` on the matrices named in ``targets``: each
    frozen matrix of ``rows`` inputs and ``cols`` outputs gains an A of ``rank`` x
    ``rows`` and a B of ``cols`` x ``rank`` (Hu et al., 2021), the only trainable
    numbers."""

    rank: int
    targets: tuple[str, ...]

    def __post_init__(self) -> None:
        checked_whole("rank", self.rank, minimum=1)
        unknown = [t for t in self.targets if t not in LORA_TARGETS]
        if unknown or not self.targets:
            raise ValueError(
                f"LoRA targets must be among {', '.join(LORA_TARGETS)}, "
                f"got {list(self.targets)}"
            )


@dataclass(frozen=True)
class Training:
    """One step's setting: ``batch`` sequences of ``seq_len`` tokens on each device,
    ``optimizer`` (a key of ``OPTIMIZERS``), ``recompute`` (none, selective or full),
    ZeRO ``zero_stage`` over ``devices`` data-parallel devices, ``fp32_gradients``
    (a float32 gradient copy, as DeepSpeed keeps) and an optional ``lora``."""

    batch: int = 1
    seq_len: int = 2048
    optimizer: str = "adamw"
    recompute: str = "selective"
    zero_stage: int = 0
    devices: int = 1
    fp32_gradients: bool = False
    lora: Lora | None = None

    def __post_init__(self) -> None:
        checked_whole("batch", self.batch, minimum=1)
        checked_whole("seq_len", self.seq_len, minimum=1)
        checked_whole("devices", self.devices, minimum=1)
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        if self.recompute not in RECOMPUTE:
            raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE)}")
        if self.zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {self.zero_stage}")


def _adapters(model: Model, lora: Lora) -> list[Matrix]:
    """Every adapter matrix (each A and each B) LoRA adds to ``model``."""
    r, out = lora.rank, []
    for m in matrices(model.layout):
        if m.name in lora.targets:
            out += [
                Matrix(m.rows, r, m.count, m.role, m.name + ".lora_A"),
                Matrix(r, m.cols, m.count, m.role, m.name + ".lora_B"),
            ]
    if "experts" in lora.targets:
        for e in (b.ffn for b in model.layout.blocks if isinstance(b.ffn, Experts)):
            k = r * e.count
            out += [
                Matrix(e.width, 2 * k, 1, "experts", "experts.gate_up.lora_A"),
                Matrix(2 * k, 2 * e.inner, 1, "experts", "experts.gate_up.lora_B"),
                Matrix(e.inner, k, 1, "experts", "experts.down.lora_A"),
                Matrix(k, e.width, 1, "experts", "experts.down.lora_B"),
            ]
    if not out:
        raise ValueError(f"no matrix of this model is called {', '.join(lora.targets)}")
    return out


def lora_parameters(model: Model, lora: Lora) -> int:
    """Numbers the adapters add: rank x (inputs + outputs) for every targeted matrix
    (the
    experts as PEFT stacks them, see ``LORA_TARGETS``)."""
    return sum(m.numbers for m in _adapters(model, lora))


def trainable_parameters(model: Model, t: Training) -> int:
    """Numbers the optimizer updates: every parameter, or only the adapters."""
    return lora_parameters(model, t.lora) if t.lora else costs.parameters(model)


def _trainable_matrices(model: Model, t: Training) -> list[Matrix]:
    """The trainable matrices: every weight matrix, or each adapter's A and B."""
    if not t.lora:
        return matrices(model.layout)
    return _adapters(model, t.lora)


def optimizer_state_bytes(model: Model, t: Training) -> float:
    """Bytes of the optimizer's states for every trainable number (one device, before
    ZeRO splits them). For 8-bit Adam, numbers outside the matrices (normalisations,
    biases) are counted with float32 states, as bitsandbytes keeps them for tensors
    under 4,096 numbers (a larger normalisation gets 8-bit states: a few bytes less)."""
    trainable = trainable_parameters(model, t)
    if t.optimizer == "adamw":
        return 8.0 * trainable
    if t.optimizer == "sgd":
        return 4.0 * trainable
    total, in_matrices = 2 * EIGHT_BIT_BLOCK * 4.0, 0  # the two maps
    for m in _trainable_matrices(model, t):
        n = m.rows * m.cols
        in_matrices += n * m.count
        if n >= EIGHT_BIT_MIN:
            total += m.count * (2 * n + 2 * 4 * -(-n // EIGHT_BIT_BLOCK))
        else:
            total += m.count * 8 * n
    return total + 8.0 * (trainable - in_matrices)


def _largest_matrix(model: Model) -> int:
    return max(m.rows * m.cols for m in matrices(model.layout))


def step_memory(model: Model, t: Training) -> dict[str, float]:
    """Bytes one device holds during a step, by part (see the module's docstring)."""
    bpn, d = model.bytes_per_number, t.devices
    trainable = trainable_parameters(model, t)
    split = [d if t.zero_stage >= s else 1 for s in (1, 2, 3)]  # states, grads, weights
    base = costs.weight_bytes(model)
    adapters = lora_parameters(model, t.lora) * bpn if t.lora else 0
    parts = {
        "weights": (base + adapters) / split[2],
        "gradients": trainable * bpn / split[1],
        "float32 gradients": trainable * 4 / split[0] if t.fp32_gradients else 0.0,
        "float32 master weights": trainable * 4 / split[0] if bpn < 4 else 0.0,
        "optimizer states": optimizer_state_bytes(model, t) / split[0],
        "gathered weights": 2 * _largest_matrix(model) * bpn
        if t.zero_stage == 3 and d > 1
        else 0.0,
        "activations": float(
            activation_bytes(
                model,
                t.batch,
                t.seq_len,
                t.recompute,
                t.lora.rank if t.lora else 0,
                _lora_names(t),
            )
        ),
        "logits": float(logits_bytes(model, t.batch, t.seq_len)),
        "float32 softmax": float(softmax_bytes(model, t.batch, t.seq_len)),
    }
    return parts


def _lora_names(t: Training) -> tuple[str, ...]:
    return t.lora.targets if t.lora else ()


@dataclass(frozen=True)
class StepWork:
    """One device's step in operations: ``matrix`` in the base weight matrices,
    ``other`` everywhere else (pairs, adapters, dequantisation), and ``model`` the
    model's own work (no recomputation, no dequantisation) that utilisation counts."""

    matrix: float
    other: float
    model: float


def step_work(model: Model, t: Training) -> StepWork:
    """The operations of one device's step over ``t.batch`` sequences of
    ``t.seq_len``: forward, backward (inputs' gradients everywhere, weights' gradients
    for the trainable numbers), any recomputation, and turning packed weights back into
    numbers once a pass."""
    n, b, layout = t.seq_len, t.batch, model.layout
    base = 2 * layout.work_parameters * n  # one pass through the weights
    pairs = layout.prefill_pair_flops(n) + layout.state_flops * n
    adapters = 2 * lora_parameters(model, t.lora) * n if t.lora else 0
    full = t.recompute == "full"
    weight_grads = 0 if t.lora else 1
    matrix = b * base * (2 + weight_grads + full)
    redo_pairs = t.recompute != "none"
    other = b * (pairs * (3 + redo_pairs) + adapters * (3 + full))
    packed = model.weights.dequant_ops * stored.packed_numbers_read(model, b * n)
    other += (2 + full) * packed
    own = b * (base * (2 + weight_grads) + 3 * pairs + 3 * adapters)
    return StepWork(matrix=matrix, other=other, model=own)


def step_bytes(model: Model, t: Training) -> float:
    """Bytes a step reads and writes: the weights read in the forward and backward
    passes, the gradients written and read, the optimizer states and master copy read
    and written once, the activations written and read once."""
    part = step_memory(model, t)
    states = (
        part["optimizer states"]
        + part["float32 master weights"]
        + part["float32 gradients"]
    )
    return (
        2 * part["weights"]
        + 2 * part["gradients"]
        + 2 * states
        + 2 * part["activations"]
    )


def step_time(model: Model, acc: Accelerator, t: Training) -> float:
    """Seconds of one step on the roofline: the base weight matrices at the rate their
    format multiplies at (fp8 weights at a chip's fp8 rate), the rest at the 16-bit
    rate."""
    w = step_work(model, t)
    rate = matrix_flops_per_s(acc, model.weights.fp8_compute)
    work = w.matrix * (acc.flops_per_s / rate) + w.other
    return roofline_time(work, step_bytes(model, t), acc)


def train_figures(model: Model, acc: Accelerator, t: Training, tokens: int) -> dict:
    """The step's memory by part, its time, tokens a second over all devices,
    model-flops utilisation against the chip's peak, and the days and chip-hours that
    ``tokens`` training tokens take."""
    tokens = checked_whole("tokens", tokens, minimum=1)
    parts = step_memory(model, t)
    seconds = step_time(model, acc, t)
    model_work = step_work(model, t).model
    peak = acc.flops_per_s / (acc.flops_efficiency if isinstance(acc, Chip) else 1.0)
    per_s = t.batch * t.seq_len * t.devices / seconds
    total = tokens / per_s
    return {
        "memory": {k: v for k, v in parts.items()},
        "memory_bytes": sum(parts.values()),
        "fits": sum(parts.values()) <= acc.memory_bytes,
        "trainable_parameters": trainable_parameters(model, t),
        "step_seconds": seconds,
        "tokens_per_s": per_s,
        "model_flops_utilisation": model_work / seconds / peak,
        "training_seconds": total,
        "chip_hours": total * t.devices / 3600,
    }
