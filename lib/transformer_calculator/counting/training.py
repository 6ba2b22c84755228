"""One training step of a published model: its setting and its memory by part.

Memory, per device, by part (the teaching formula ``memory.training_memory`` for
the plain decoder, carried over the layout):

- weights: every number in the model's format (a frozen base in its own, packed format
  for QLoRA);
- gradients of the trainable numbers (``gradients``): in the model's format (16 bytes a
  parameter in all with AdamW and a master copy), in float32 only (Megatron-LM's main
  gradients, accumulated and reduced in float32: 18 bytes), or both (DeepSpeed's and
  nanotron's float32 copy beside the 16-bit gradients: 20 bytes);
- a float32 master copy of the trainable numbers when the model's format is narrower
  (``master_weights``; without it, as the 16-bit fine-tuning QLoRA compares against
  does, AdamW takes 12 bytes a parameter);
- the optimizer's states: AdamW two float32 moments (8 bytes a number), 8-bit Adam two
  8-bit moments with a 32-bit scale per block of 256 (bitsandbytes' layout), SGD with
  momentum one float32 number;
- activations kept for the backward pass (``activations.py``) of one micro-batch: a step
  of ``batch`` sequences cut into ``micro_batches`` runs them one after another and
  adds up their gradients (gradient accumulation), taking the optimizer's step once;
- the logits (the head's output), and at the loss's peak, in the backward pass of
  ``cross_entropy(logits.float())``, the float32 log-softmax the loss kept, the float32
  gradient arriving at it and the float32 gradient it hands back: b + 12 bytes a logit
  (14 at 16-bit; the forward's float32 upcast copy, b + 8, is freed by then). This is
  what PyTorch holds when the loop keeps its logits through the backward pass, as
  nanoGPT's does (measured with PyTorch's profiler in test_training.py); a loop that
  drops them first (transformers' Trainer) holds 12, and a fused loss that turns the
  float32 copy into the softmax in place (Megatron-LM's and nanotron's
  vocabulary-parallel losses) fewer. The teaching formula is
  ``memory.training_memory`` with ``logit_bytes=memory.loss_bytes_per_logit(m)``.

ZeRO (Rajbhandari et al., 2020) splits the optimizer states and master copy across the
N_dp devices from stage 1 on, the gradients too from stage 2, the weights too at stage 3
(``data_parallel.zero_part_bytes`` is the teaching formula), where each device also
gathers the largest matrix twice (one in use, one arriving). Float32 gradients are split
from stage 2, like the gradients: Megatron-LM's main gradients and nanotron's float32
accumulators stay whole at stage 1 (DeepSpeed's stage 1 keeps only its own share of
them, a few bytes a parameter less).

With ``gather_buffers`` (nanotron's tensor parallel under sequence parallelism, the
playbook's runs) the device also keeps two buffers it gathers the sequence into, each
the micro-batch's tokens x width in the model's format: the column matrices' gathered
input (``MemoryBuffer`` "allgather", regathered in the backward pass when
``tp_recompute_allgather``) and the row matrices' gathered output gradient
("allgather2", ``_RowLinearAsyncCommunication.backward``). ``MemoryBuffer`` is a
singleton that keeps each buffer once made, so from the first backward pass both are
held at every later peak; with ``gathered_inputs`` (``tp_recompute_allgather`` False)
the column matrices gather into a tensor of their own, kept as their input, and only
the second buffer is made (``nanotron/parallel/utils.py``, ``tensor_parallel/
functional.py``, branch ``nouamanetazi/ultrascale-playbook`` e24d2483).

With ``ddp_buckets`` the step runs under PyTorch's ``DistributedDataParallel`` with its
default ``gradient_as_bucket_view=False``: its reducer keeps its own flat buckets, one
copy of every trainable number's gradient in the model's format, beside the gradients
themselves (PyTorch's documentation of ``gradient_as_bucket_view``: the view "can
reduce peak memory usage, where the saved memory size will be equal to the total
gradients size"). nanotron wraps its model so only with data parallel and without
ZeRO-1's float32 accumulation (``trainer.py``, ``make_ddp``).

The step's work and time are in ``training_time.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from transformer_arithmetic.checks import checked_whole

from . import costs
from .activations import (NO_SHARES, RECOMPUTE, Shares, activation_bytes, logits_bytes,
                          softmax_bytes)
from ..anatomy.feedforward import Experts
from ..anatomy.matrices import Matrix, matrices
from ..anatomy.model import Model

__all__ = [
    "OPTIMIZERS",
    "GRADIENTS",
    "LOSSES",
    "LOSS_PARTS",
    "GATHER_BUFFERS",
    "BUCKETS",
    "LORA_TARGETS",
    "ALL_LINEAR",
    "Lora",
    "Training",
    "lora_parameters",
    "trainable_parameters",
    "optimizer_state_bytes",
    "bytes_per_parameter",
    "step_memory",
]

OPTIMIZERS = ("adamw", "adam8bit", "sgd")
"""The optimizers counted: AdamW (two float32 moments a number), 8-bit Adam
(bitsandbytes' ``Adam8bit``: two 8-bit moments with a float32 scale per block of 256
for a tensor of 4,096 numbers or more, float32 moments for a smaller one, and two
256-entry float32 maps), SGD with momentum (one float32 number)."""

GRADIENTS = ("model", "fp32", "both")
"""How the gradients are held: in the model's format, in float32 only, or both."""

LOSSES = ("torch", "vocab-parallel")
"""How the loss holds the logits at its peak, a logit of b bytes: ``torch``
(``cross_entropy(logits.float())`` with the logits kept through the backward pass:
the logits, the float32 log-softmax and two float32 gradients, b + 12 bytes) or
``vocab-parallel`` (Megatron-LM's and nanotron's vocabulary-parallel cross entropy:
at the end of its forward pass the logits, their float32 copy and the float32 shifted
copy that ``exp`` and the division turn into the softmax in place and keep for the
backward pass, which makes the gradient in it in place: b + 8 bytes; nanotron's
``_ShardedCrossEntropy``)."""

LOSS_PARTS = ("logits", "float32 log-softmax", "float32 logit gradients",
              "float32 logits", "float32 softmax")
"""The parts of ``step_memory`` the loss holds (either loss's)."""

GATHER_BUFFERS = 2
"""Whole-sequence buffers a device keeps with ``gather_buffers`` (see the module's
docstring): the column matrices' gathered input and the row matrices' gathered
gradient."""

BUCKETS = "gradient buckets"
"""The part of ``step_memory`` DDP's buckets hold (``ddp_buckets``)."""

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
    """One step's setting: ``batch`` sequences of ``seq_len`` tokens for each copy of
    the model (each data-parallel rank), cut into ``micro_batches`` run one after
    another; ``optimizer`` (a key of ``OPTIMIZERS``), ``recompute`` (none, selective or
    full), ZeRO ``zero_stage`` over ``devices`` data-parallel devices, ``gradients``
    (a key of ``GRADIENTS``), ``master_weights`` (a float32 master copy when the
    model's format is narrower), ``dropout`` (its masks kept), ``fused_glu`` (a fused
    gated activation, ``activations``), an optional ``lora``, ``shares`` (a split's
    cut of the sequence: ``activations.Shares``), ``loss`` (a key of ``LOSSES``: how
    the loss holds the logits), ``gathered_inputs`` (under sequence parallelism, the
    matrices keep their gathered inputs whole) and ``kv_twice`` (attention keeps its
    keys and values twice; both: ``activations.Shares``)."""

    batch: int = 1
    seq_len: int = 2048
    optimizer: str = "adamw"
    recompute: str = "selective"
    zero_stage: int = 0
    devices: int = 1
    gradients: str = "model"
    lora: Lora | None = None
    micro_batches: int = 1
    master_weights: bool = True
    dropout: bool = False
    fused_glu: bool = False
    shares: Shares = NO_SHARES
    loss: str = "torch"
    gathered_inputs: bool = False
    kv_twice: bool = False
    gather_buffers: bool = False
    ddp_buckets: bool = False

    def __post_init__(self) -> None:
        checked_whole("batch", self.batch, minimum=1)
        checked_whole("seq_len", self.seq_len, minimum=1)
        checked_whole("devices", self.devices, minimum=1)
        checked_whole("micro_batches", self.micro_batches, minimum=1)
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        if self.recompute not in RECOMPUTE:
            raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE)}")
        if self.zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {self.zero_stage}")
        if self.gradients not in GRADIENTS:
            raise ValueError(f"gradients must be one of {', '.join(GRADIENTS)}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}")
        if self.batch % self.micro_batches:
            raise ValueError(
                f"{self.micro_batches} micro-batches do not divide the batch of "
                f"{self.batch}"
            )

    @property
    def micro_batch(self) -> int:
        """Sequences in one micro-batch."""
        return self.batch // self.micro_batches


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


def _gradient_bytes(t: Training, bpn: int) -> tuple[int, int]:
    """(bytes in the model's format, bytes in float32) of one trainable number's
    gradients."""
    return {"model": (bpn, 0), "fp32": (0, 4), "both": (bpn, 4)}[t.gradients]


def bytes_per_parameter(model: Model, t: Training) -> float:
    """Bytes each trainable number costs on one device before ZeRO splits anything:
    its weight, its gradients, its master copy and its optimizer states (16 for AdamW
    with 16-bit weights and gradients and a float32 master copy)."""
    bpn, n = model.bytes_per_number, trainable_parameters(model, t)
    grads, grads32 = _gradient_bytes(t, bpn)
    master = 4 if t.master_weights and bpn < 4 else 0
    return bpn + grads + grads32 + master + optimizer_state_bytes(model, t) / n


def step_memory(model: Model, t: Training) -> dict[str, float]:
    """Bytes one device holds during a step, by part (see the module's docstring)."""
    bpn, d = model.bytes_per_number, t.devices
    trainable = trainable_parameters(model, t)
    split = [d if t.zero_stage >= s else 1 for s in (1, 2, 3)]  # states, grads, weights
    base = costs.weight_bytes(model)
    adapters = lora_parameters(model, t.lora) * bpn if t.lora else 0
    grads, grads32 = _gradient_bytes(t, bpn)
    mb, n = t.micro_batch, t.seq_len
    tokens = mb * n // t.shares.context
    parts = {
        "weights": (base + adapters) / split[2],
        "gradients": trainable * grads / split[1],
        BUCKETS: float(trainable * bpn) if t.ddp_buckets else 0.0,
        "float32 gradients": trainable * grads32 / split[1],
        "float32 master weights": trainable * 4 / split[0]
        if bpn < 4 and t.master_weights
        else 0.0,
        "optimizer states": optimizer_state_bytes(model, t) / split[0],
        "gathered weights": 2 * _largest_matrix(model) * bpn
        if t.zero_stage == 3 and d > 1
        else 0.0,
        "activations": float(
            activation_bytes(
                model,
                mb,
                n,
                t.recompute,
                t.lora.rank if t.lora else 0,
                _lora_names(t),
                shares=_shares(t),
                dropout=t.dropout,
                fused_glu=t.fused_glu,
            )
        ),
        "all-gather buffers": float(_buffers(t) * tokens * model.layout.width * bpn),
        **_loss_parts(model, t, tokens),
    }
    return parts


def _buffers(t: Training) -> int:
    """Whole-sequence gather buffers the step keeps (see the module's docstring)."""
    if not t.gather_buffers or t.shares.sequence == 1:
        return 0
    return GATHER_BUFFERS - 1 if _shares(t).gathered_inputs else GATHER_BUFFERS


def _shares(t: Training) -> Shares:
    """The step's cut of the sequence with its engine's choices (``gathered_inputs``,
    ``kv_twice``) applied."""
    return dataclasses.replace(
        t.shares, gathered_inputs=t.shares.gathered_inputs or t.gathered_inputs,
        kv_twice=t.shares.kv_twice or t.kv_twice)


def _loss_parts(model: Model, t: Training, tokens: int) -> dict[str, float]:
    """Bytes the loss holds at its peak over ``tokens`` positions, by part (see
    ``LOSSES``)."""
    head = bool(model.layout.head)
    logits = float(logits_bytes(model, 1, tokens)) if head else 0.0
    f32 = float(softmax_bytes(model, 1, tokens)) if head else 0.0
    return {"logits": logits, "float32 logits": f32, "float32 softmax": f32} \
        if t.loss == "vocab-parallel" else {
            "logits": logits, "float32 log-softmax": f32,
            "float32 logit gradients": 2 * f32}


def _lora_names(t: Training) -> tuple[str, ...]:
    return t.lora.targets if t.lora else ()
