"""The collectives a split model's layers and steps hand each other, in seconds.

- tensor parallel: Megatron-LM's two all-reduces a layer in each pass, of tokens x d
  numbers; under sequence parallelism each becomes an all-gather and a reduce-scatter
  of the same bytes (Korthikanti et al.), so the time is the same;
- expert parallel: two all-to-alls a mixture-of-experts layer in each pass (dispatch
  and combine), each device handing one vector a token for each of the k experts it
  picks, for its 1 / min(N_ep, N_tp) share of the copy's tokens, in the model's
  format;
- context parallel, a layer: the all-gather form gathers every piece's keys and values
  before attention and reduce-scatters their gradients in the backward pass; the ring
  passes each piece round (N_cp - 1 sends forward, the keys and values and their
  gradients again backward: three times the forward's bytes);
- the pipeline: one point-to-point send of a micro-batch's activations a stage
  boundary in each pass (1 / N_tp of them a device under sequence parallelism, as
  Megatron-LM scatters them), v times with v virtual stages;
- data parallel, once a step: the gradients all-reduced (ZeRO 0) or reduce-scattered
  and the new weights all-gathered (1, 2); at stage 3 the weights are gathered for
  each micro-batch's forward and backward pass and its gradients reduce-scattered.
"""

from __future__ import annotations

from ..anatomy.attention_kinds import SparseLatentAttention
from ..anatomy.mixers import Attention, LatentAttention
from ..anatomy.model import Model
from ..counting.training import Training, trainable_parameters
from .links import collective_time, send_seconds
from .plan import Split

__all__ = ["tp_seconds", "ep_seconds", "cp_seconds", "pp_seconds", "dp_seconds",
           "dp_arrays",
           "zero3_seconds", "gradient_bytes_a_number", "kv_bytes_per_position"]


def _vector(model: Model) -> int:
    """Bytes of one token's d-wide vector."""
    return model.layout.width * model.bytes_per_number


def tp_seconds(model: Model, s: Split, tokens: float, layers: int,
               passes: int) -> float:
    """Seconds of ``layers`` layers' tensor-parallel collectives over ``tokens``
    positions in ``passes`` passes (1 forward, 2 forward and backward)."""
    if s.tp == 1 or layers == 0:
        return 0.0
    one = collective_time(s, "tp", "all-reduce", tokens * _vector(model))
    return 2 * passes * layers * one


def ep_seconds(model: Model, s: Split, tokens: float, moe_layers: int, chosen: float,
               passes: int) -> float:
    """Seconds of ``moe_layers`` layers' all-to-alls for ``tokens`` positions of each
    copy, each token going to ``chosen`` experts."""
    if s.ep == 1 or moe_layers == 0:
        return 0.0
    mine = tokens / min(s.ep, s.tp)
    one = collective_time(s, "ep", "all-to-all", mine * chosen * _vector(model))
    return 2 * passes * moe_layers * one


def kv_bytes_per_position(st: Model) -> float:
    """Bytes of keys and values one position adds, over a stage's attention layers on
    one device (a latent attention's shared latent and rotary key)."""
    total = 0
    for b in st.layout.blocks:
        m = b.mixer
        if type(m) is Attention:
            total += 2 * m.kv_heads * m.head_dim
        elif type(m) in (LatentAttention, SparseLatentAttention):
            total += m.cache_numbers
    return total * st.bytes_per_number


def cp_seconds(st: Model, s: Split, batch: int, seq_len: int) -> float:
    """Seconds of one stage's context-parallel exchange of keys and values for one
    micro-batch of ``batch`` sequences of ``seq_len``, forward and backward."""
    if s.cp == 1:
        return 0.0
    whole = batch * seq_len * kv_bytes_per_position(st)  # every position's keys, values
    if s.cp_kind == "all-gather":
        return (collective_time(s, "cp", "all-gather", whole)
                + collective_time(s, "cp", "reduce-scatter", whole))
    return 3 * collective_time(s, "cp", "all-gather", whole)  # the ring's N_cp - 1


def pp_seconds(model: Model, s: Split, tokens: float, passes: int) -> float:
    """Seconds one stage spends handing on a micro-batch of ``tokens`` positions (and
    its gradients back: ``passes`` = 2), once a virtual stage."""
    if s.pp == 1:
        return 0.0
    share = s.tp if s.sequence_parallel else 1
    one = send_seconds(s, tokens * _vector(model) / share)
    return passes * s.virtual_stages * one


def gradient_bytes_a_number(model: Model, t: Training) -> int:
    """Bytes of one gradient as data parallel reduces it: float32 where the trainer
    keeps float32 gradients (Megatron-LM's main gradients, nanotron's accumulators),
    else the model's format."""
    return 4 if t.gradients in ("fp32", "both") else model.bytes_per_number


def dp_arrays(st: Model, s: Split, t: Training) -> dict[str, tuple[str, float]]:
    """One stage's data-parallel collectives once a step, by name: each one's
    collective and its array's bytes (ZeRO 3's are per micro-batch:
    ``zero3_seconds``)."""
    if s.dp == 1 or t.zero_stage == 3:
        return {}
    n = trainable_parameters(st, t)
    grads = n * gradient_bytes_a_number(st, t)
    if t.zero_stage == 0:
        return {"gradient all-reduce": ("all-reduce", grads)}
    return {"gradient reduce-scatter": ("reduce-scatter", grads),
            "weight all-gather": ("all-gather", n * st.bytes_per_number)}


def dp_seconds(st: Model, s: Split, t: Training) -> dict[str, float]:
    """Seconds of one stage's data-parallel collectives once a step, by collective
    (ZeRO 3's are per micro-batch: ``zero3_seconds``)."""
    return {k: collective_time(s, "dp", c, x)
            for k, (c, x) in dp_arrays(st, s, t).items()}


def zero3_seconds(st: Model, s: Split, t: Training) -> float:
    """Seconds of ZeRO 3's collectives for one micro-batch: the stage's weights
    gathered for the forward pass and again for the backward pass, its gradients
    reduce-scattered."""
    if s.dp == 1 or t.zero_stage != 3:
        return 0.0
    n = trainable_parameters(st, t)
    gather = collective_time(s, "dp", "all-gather", n * st.bytes_per_number)
    scatter = collective_time(s, "dp", "reduce-scatter",
                              n * gradient_bytes_a_number(st, t))
    return 2 * gather + scatter
