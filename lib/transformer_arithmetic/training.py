"""A training step's operations, bytes and time, and a whole run's compute and days.

The count follows the scaling literature: a multiply-add is two operations. In the
forward pass a token is multiplied by every matrix once (two operations a number it is
multiplied by) and, in every layer, meets each earlier position of its sequence (four
operations a pair and a query channel: the book's pair work). The backward pass does
twice the forward's work: each product hands a gradient back to its input and another to
its weights. Recomputing saved values during the backward pass adds forward work again.
Rounded, this is the rule of thumb of six operations a parameter a token (Kaplan et al.,
2020); here the input table is looked up rather than multiplied, and the normalisations,
which only scale, are left out.

Time is the book's roofline (``timing.roofline_time``), in two forms: the whole-step
floor (``step_time``: the slower of all the step's arithmetic and all its reading, a
bound no schedule beats), and the step by phase (``step_phase_times``): the forward and
backward passes, then the optimiser's update, which reads and writes the optimiser's
state, the master copy, the gradients and the weights after the passes are done, and so
cannot hide under their arithmetic; the two phases' times add.
"""

from __future__ import annotations

from .checks import checked_fraction, checked_positive, checked_whole
from .memory import attention_params, ffn_params, parameter_count, training_memory
from .shapes import Accelerator, ModelShape
from .timing import roofline_time
from .work import layer_pair_flops

__all__ = [
    "RECOMPUTE",
    "TRAFFIC",
    "COMPUTE_OPTIMAL_TOKENS_PER_PARAMETER",
    "matrix_params",
    "forward_flops_per_token",
    "flops_per_token",
    "step_flops",
    "step_bytes",
    "step_time",
    "PHASE_TRAFFIC",
    "step_phase_times",
    "step_time_by_operation",
    "model_flops_utilisation",
    "run_flops",
    "rule_of_thumb_flops",
    "run_seconds",
    "compute_optimal_tokens",
]

RECOMPUTE = ("nothing", "score grids", "everything")
"""What the backward pass recomputes instead of keeping: nothing; the core of attention
(scores, softmax and weighted sum: selective recomputation, Korthikanti et al.); or
every layer's forward pass from the layer's kept input (full recomputation, Chen et al.,
2016; the output layer's input is kept, so the output layer is not run again)."""

TRAFFIC = {
    "weights": 3,
    "gradients": 2,
    "optimiser": 2,
    "master copy": 2,
    "activations": 2,
    "logits": 2,
}
"""How many times one training step moves each part of its memory at least: the weights
are read in the forward and the backward pass and written by the optimiser; gradients,
activations and logits are written once and read once; the optimiser reads and writes
its state and the master copy."""

PHASE_TRAFFIC = {
    "forward and backward": {"weights": 2, "gradients": 1, "activations": 2,
                             "logits": 2},
    "optimiser": {"weights": 1, "gradients": 1, "optimiser": 2, "master copy": 2},
}
"""``TRAFFIC`` split between the two phases of a step: the passes read the weights
twice and write the gradients, the activations and the logits once and read them back;
the optimiser reads the gradients, writes the weights, and reads and writes its state
and the master copy (16 + 8 + 2 + 2 = 28 bytes a parameter for Adam in mixed
precision)."""

COMPUTE_OPTIMAL_TOKENS_PER_PARAMETER = 20
"""Tokens of training text per parameter that spend a fixed budget of operations best,
roughly, by Hoffmann et al. (2022): a model of P parameters wants about 20 P tokens."""


def matrix_params(m: ModelShape) -> int:
    """Numbers one token is multiplied by in a forward pass, a count: every layer's
    matrices and the output layer (the input table is looked up; norms only scale)."""
    layers = m.layers * (attention_params(m) + ffn_params(m))
    return layers + m.vocab * m.width


def forward_flops_per_token(m: ModelShape, seq_len: int) -> int:
    """Operations of one token's forward pass, averaged over a causal sequence of
    ``seq_len`` tokens: two per number it is multiplied by, and pair work for the
    (seq_len + 1) / 2 positions a token meets on average."""
    n = checked_whole("seq_len", seq_len, minimum=1)
    pairs = 2 * m.layers * m.heads * m.head_dim * (n + 1)  # 4 a pair, (n + 1) / 2 pairs
    return 2 * matrix_params(m) + pairs


def _recompute(recompute: str) -> str:
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    return recompute


def flops_per_token(m: ModelShape, seq_len: int, recompute: str = "nothing") -> int:
    """Operations one training token costs: its forward pass, a backward pass of twice
    that, and whatever ``recompute`` (one of ``RECOMPUTE``) computes again."""
    forward = forward_flops_per_token(m, seq_len)
    pairs = forward - 2 * matrix_params(m)
    layers = forward - 2 * m.vocab * m.width  # each layer again, not the head
    extra = {"nothing": 0, "score grids": pairs, "everything": layers}
    return 3 * forward + extra[_recompute(recompute)]


def step_flops(
    m: ModelShape, batch: int, seq_len: int, recompute: str = "nothing"
) -> int:
    """Operations of one training step on ``batch`` sequences of ``seq_len`` tokens."""
    per_token = flops_per_token(m, seq_len, recompute)
    return checked_whole("batch", batch, minimum=1) * seq_len * per_token


def step_bytes(m: ModelShape, batch: int, seq_len: int, **memory_options) -> int:
    """Bytes one training step moves to and from memory at least: each part of
    ``memory.training_memory`` (with ``memory_options``) times its ``TRAFFIC``."""
    parts = training_memory(m, batch, seq_len, **memory_options)
    return sum(TRAFFIC[name] * size for name, size in parts.items())


def step_time(
    m: ModelShape,
    acc: Accelerator,
    batch: int,
    seq_len: int,
    recompute: str = "nothing",
    **memory_options,
) -> float:
    """Seconds of one training step on the roofline: the slower of its arithmetic
    (``step_flops``) and its reading (``step_bytes``)."""
    flops = step_flops(m, batch, seq_len, recompute)
    return roofline_time(flops, step_bytes(m, batch, seq_len, **memory_options), acc)


def step_phase_times(
    m: ModelShape,
    acc: Accelerator,
    batch: int,
    seq_len: int,
    recompute: str = "nothing",
    **memory_options,
) -> dict[str, float]:
    """Seconds of each phase of one training step, each on its own roof: the forward
    and backward passes (``step_flops`` against their ``PHASE_TRAFFIC`` bytes), and the
    optimiser's update (its bytes; its few operations a parameter left out)."""
    parts = training_memory(m, batch, seq_len, **memory_options)
    moved = {phase: sum(n * parts[k] for k, n in use.items())
             for phase, use in PHASE_TRAFFIC.items()}
    flops = step_flops(m, batch, seq_len, recompute)
    return {
        "forward and backward": roofline_time(flops, moved["forward and backward"],
                                              acc),
        "optimiser": moved["optimiser"] / acc.bytes_per_s,
    }


def step_time_by_operation(
    m: ModelShape,
    acc: Accelerator,
    batch: int,
    seq_len: int,
    recompute: str = "nothing",
    **memory_options,
) -> float:
    """Seconds of one training step with its phases on their own roofs, one after the
    other: the sum of ``step_phase_times`` (never below the floor ``step_time``)."""
    return sum(step_phase_times(m, acc, batch, seq_len, recompute,
                                **memory_options).values())


def model_flops_utilisation(
    flops: float, seconds: float, acc: Accelerator, devices: int = 1
) -> float:
    """Share of ``devices`` chips' peak that ``flops`` operations of the model itself
    (recomputation not counted) done in ``seconds`` make up, between 0 and 1."""
    flops = checked_positive("flops", flops)
    seconds = checked_positive("seconds", seconds)
    devices = checked_whole("devices", devices, minimum=1)
    return flops / (seconds * devices * acc.flops_per_s)


def run_flops(
    m: ModelShape, tokens: int, seq_len: int, recompute: str = "nothing"
) -> int:
    """Operations of a whole training run over ``tokens`` tokens of text in sequences
    of ``seq_len``."""
    tokens = checked_whole("tokens", tokens)
    return tokens * flops_per_token(m, seq_len, recompute)


def rule_of_thumb_flops(m: ModelShape, tokens: int) -> int:
    """The rule of thumb for a whole run, six operations a parameter a token: 6 P N."""
    return 6 * parameter_count(m) * checked_whole("tokens", tokens)


def run_seconds(
    flops: float, acc: Accelerator, utilisation: float, devices: int = 1
) -> float:
    """Seconds ``devices`` chips take for ``flops`` operations when they reach the
    share ``utilisation`` of their peak."""
    flops = checked_positive("flops", flops)
    u = checked_fraction("utilisation", utilisation)
    devices = checked_whole("devices", devices, minimum=1)
    return flops / (devices * acc.flops_per_s * u)


def compute_optimal_tokens(m: ModelShape) -> int:
    """Tokens of text that would spend a training budget best on a model of ``m``'s
    size, by the rule of about 20 a parameter."""
    return COMPUTE_OPTIMAL_TOKENS_PER_PARAMETER * parameter_count(m)
