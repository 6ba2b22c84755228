"""One training step over a split: each stage's memory, and the step's time by cause.

Each stage's device runs its micro-batches' forward and backward passes
(``training_time.pass_time`` on its own layout) and hands on its collectives
(``comm.py``). The pipeline's schedule is 1F1B, interleaved over v virtual stages when
asked: the slowest stage's N_mb micro-batches, plus the bubble, the other stages' share
of one micro-batch's way in and out, divided by v (for even stages (N_pp - 1) / v of a
micro-batch, (N_pp - 1) / (v N_mb) of the work: Narayanan et al., 2021); a stage holds
the activations of the micro-batches in flight (``pipeline.micro_batches_held``, and
the interleaved schedule's larger count). Once a step the data-parallel collectives
and the optimizer's step follow.

Communication is added to the arithmetic by default: what a schedule that overlaps
nothing takes. With ``overlap``, each collective hides under the arithmetic it can run
beside, up to that arithmetic (the rule: hidden when the compute beside it takes at
least as long): tensor parallel under the layer's matrices (asynchronous tensor
parallel), the all-to-alls under the other of two micro-batches (DeepSeek-V3), the
ring of context parallel under attention, the pipeline's sends under the next pass,
ZeRO 3's gathers under the layer before (FSDP's prefetch), the gradients' reduction
under the last micro-batch's backward pass and the new weights' gathering under the
next step's first forward pass; the all-gather of context parallel waits in full.
``floor_seconds`` is the step with every collective so hidden: the least a step can
take at the chip's rates as given.
"""

from __future__ import annotations

import dataclasses

from transformer_arithmetic.pipeline import interleaved_micro_batches_held

from ..counting import training_time
from ..counting.activations import Shares
from ..counting.chips import Chip
from ..anatomy.model import Model
from ..counting.training import Training, bytes_per_parameter, step_memory
from .checks import check_split, experts_of, stage_layers
from .comm import (cp_seconds, dp_seconds, ep_seconds, pp_seconds, tp_seconds,
                   zero3_seconds)
from .links import crossing_notes
from .plan import Split
from .shares import expert_layers, stage_models

__all__ = ["training_split", "split_dict"]


def split_dict(s: Split) -> dict:
    """The split's groups, schedule, choices and links as JSON-ready values."""
    link, net = s.link, s.network
    return {"tp": s.tp, "pp": s.pp, "ep": s.ep, "dp": s.dp, "cp": s.cp,
            "micro_batches": s.micro_batches, "devices": s.devices,
            "virtual_stages": s.virtual_stages,
            "sequence_parallel": s.sequence_parallel, "cp_kind": s.cp_kind,
            "redundant_experts": s.redundant_experts, "overlap": s.overlap,
            "interconnect": None if link is None else link.name,
            "link_bytes_per_s_each_way": None if link is None else link.bytes_per_s,
            "link_step_latency_s": None if link is None else link.step_latency_s,
            "network": None if net is None else net.name,
            "network_bytes_per_s_each_way": None if net is None else net.bytes_per_s,
            "network_step_latency_s": None if net is None else net.step_latency_s,
            "machine_devices": s.machine}


def _check(model: Model, s: Split, t: Training) -> list[str]:
    notes = check_split(model, s)
    if s.pp == 1 and s.virtual_stages > 1:
        raise ValueError("argument --virtual-stages: interleaving needs --pp 2 or more")
    if t.batch % s.micro_batches:
        raise ValueError(f"argument --micro-batches: {s.micro_batches} do not divide "
                         f"the batch of {t.batch}")
    if t.zero_stage and s.ep > s.tp:
        raise ValueError("argument --ep: experts spread over data-parallel devices "
                         "under ZeRO are not counted (their own data-parallel group "
                         "is smaller); keep --ep at most --tp or use --zero-stage 0")
    if t.seq_len % (2 * s.cp if s.cp > 1 else 1):
        raise ValueError(f"argument --cp: a sequence of {t.seq_len:,} tokens does not "
                         f"cut into {2 * s.cp} pieces (two a device, the zigzag order "
                         "that balances the causal mask)")
    if s.link is None and (s.sends or s.dp > 1):
        raise ValueError("argument --chip: the book's example accelerator has no link "
                         "to other chips; name a chip (--chip h100-sxm) or give "
                         "--interconnect GB/s")
    return notes + crossing_notes(s)


def _held(s: Split, stage: int) -> float:
    return interleaved_micro_batches_held(s.pp, s.micro_batches, s.virtual_stages,
                                          stage)


def _stage(model: Model, st: Model, i: int, chip: Chip, s: Split, t: Training) -> dict:
    """One stage's memory, its pass time and its collectives a micro-batch."""
    parts = step_memory(st, t)
    parts["activations"] *= _held(s, i)
    mb, n = t.micro_batch, t.seq_len
    one = training_time.pass_time(st, chip, t)
    layers = len(st.layout.blocks)
    e = experts_of(model)
    tokens = mb * n / s.cp
    comm = {
        "tensor-parallel collectives": tp_seconds(model, s, tokens, layers, 2),
        "expert all-to-alls": ep_seconds(model, s, tokens, expert_layers(st)[0],
                                         e.per_token if e else 0, 2),
        "context-parallel exchange": cp_seconds(st, s, mb, n),
        "pipeline sends": pp_seconds(model, s, tokens, 2),
        "ZeRO-3 gathers": zero3_seconds(st, s, t),
    }
    pairs = st.layout.prefill_pair_flops(n) / s.cp * mb
    attention = pairs * (4 if t.recompute != "none" else 3) / chip.flops_per_s
    return {"stage": i, "layers": layers, "micro_batches_held": _held(s, i),
            "memory": parts, "memory_bytes": sum(parts.values()),
            "pass_seconds": one, "communication": comm, "attention_seconds": attention,
            "optimizer_seconds": training_time.optimizer_time(st, chip, t),
            "data_parallel": dp_seconds(st, s, t)}


def _exposed(row: dict, s: Split, overlap: bool) -> dict[str, float]:
    """Each collective's seconds a micro-batch that the pass does not hide."""
    comm = dict(row["communication"])
    if not overlap:
        return comm
    budget, out = row["pass_seconds"], {}
    cp = comm.pop("context-parallel exchange")
    if s.cp_kind == "ring":  # the ring hides under attention's own arithmetic
        hidden = min(cp, row["attention_seconds"], budget)
        cp, budget = cp - hidden, budget - hidden
    out["context-parallel exchange"] = cp
    for name, seconds in comm.items():
        hidden = min(seconds, budget)
        budget -= hidden
        out[name] = seconds - hidden
    return out


def _step(rows: list[dict], s: Split, overlap: bool) -> dict:
    """The step's time by cause over the stages' rows."""
    per = [r["pass_seconds"] + sum(_exposed(r, s, overlap).values()) for r in rows]
    slow = max(range(len(rows)), key=lambda i: per[i])
    r = rows[slow]
    exposed = {k: v * s.micro_batches for k, v in _exposed(r, s, overlap).items()}
    bubble = (sum(per) - per[slow]) / s.virtual_stages
    dp = dict(r["data_parallel"])
    if overlap:  # under the last backward pass; the weights under the next forward
        back, fwd = r["pass_seconds"] * 2 / 3, r["pass_seconds"] / 3
        for k in dp:
            dp[k] = max(0.0, dp[k] - (fwd if k == "weight all-gather" else back))
    exposed.update({f"data-parallel {k}": v for k, v in dp.items()})
    compute = s.micro_batches * r["pass_seconds"]
    seconds = compute + bubble + sum(exposed.values()) + r["optimizer_seconds"]
    return {"slowest_stage": slow, "compute": compute, "bubble": bubble,
            "exposed": exposed, "seconds": seconds}


def training_split(model: Model, chip: Chip, s: Split, t: Training,
                   tokens: int) -> dict:
    """One training step over the split (see the module's docstring): each stage's
    device memory by part, the step's time by cause on the slowest stage, tokens a
    second, model-flops utilisation and chip-hours over all devices."""
    notes = _check(model, s, t)
    shares = Shares(sequence=s.tp if s.sequence_parallel else 1, context=s.cp,
                    gathered_kv=s.cp > 1 and s.cp_kind == "all-gather")
    step = dataclasses.replace(t, devices=s.dp, micro_batches=s.micro_batches,
                               shares=shares)
    stages = stage_models(model, s)
    rows = [_stage(model, st, i, chip, s, step) for i, st in enumerate(stages)]
    added, floor = _step(rows, s, s.overlap), _step(rows, s, True)
    busiest = max(range(len(rows)), key=lambda i: rows[i]["memory_bytes"])
    slow = rows[added["slowest_stage"]]
    whole = dataclasses.replace(t, batch=t.batch, micro_batches=1)
    model_seconds = training_time.model_time(model, chip, whole) * s.dp
    per_s = t.batch * t.seq_len * s.dp / added["seconds"]
    total = tokens / per_s
    return {
        "split": split_dict(s), "notes": notes, "devices": rows,
        "stage_layers": stage_layers(model, s),
        "busiest_stage": busiest, "slowest_stage": added["slowest_stage"],
        "memory": rows[busiest]["memory"],
        "memory_bytes": rows[busiest]["memory_bytes"],
        "fits": rows[busiest]["memory_bytes"] <= chip.memory_bytes,
        "bytes_per_parameter": bytes_per_parameter(model, step),
        "arithmetic_seconds": added["compute"], "bubble_seconds": added["bubble"],
        "communication_seconds": {**{k: v * s.micro_batches
                                     for k, v in slow["communication"].items()},
                                  **{f"data-parallel {k}": v
                                     for k, v in slow["data_parallel"].items()}},
        "exposed_communication_seconds": added["exposed"],
        "optimizer_seconds": slow["optimizer_seconds"],
        "step_seconds": added["seconds"], "floor_seconds": floor["seconds"],
        "tokens_per_s": per_s,
        "model_flops_utilisation": model_seconds / added["seconds"] / s.devices,
        "utilisation_against": training_time.utilisation_rate(model, chip),
        "training_seconds": total, "chip_hours": total * s.devices / 3600,
    }
