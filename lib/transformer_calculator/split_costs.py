"""The figures of a split (``splits.py``): each device's memory by part, the step's
communication, time per token and throughput for serving, step time for training, and
which splits would fit a model that does not fit one chip.

Communication is added to the arithmetic, never hidden under it: a decode step waits
for each all-reduce before its next layer, and a training step is priced the same way
(an upper bound: a schedule that overlaps them hides part). Pipeline stages of a
serving step take turns on one batch (no second batch in flight).
"""

from __future__ import annotations

import dataclasses
import math

from transformer_arithmetic.collectives import ring_time
from transformer_arithmetic.pipeline import bubble_share, micro_batches_held

from . import costs, serving, training
from .chips import Chip
from .model import Model
from .serving import Serving
from .splits import (
    MAX_SPLIT,
    Split,
    check_split,
    ep_all_to_all_time,
    expert_layers,
    pp_send_time,
    stage_models,
    tp_all_reduce_time,
)

__all__ = ["serving_split", "training_split", "splits_that_fit", "SPLIT_ASSUMPTIONS"]

SPLIT_ASSUMPTIONS = [
    "split: tensor parallel cuts heads, feed-forward widths and the vocabulary "
    "(Megatron-LM: two all-reduces a layer forward, two more backward); key-value "
    "heads fewer than N_tp are copied; normalisations, routers and latent "
    "down-projections stay whole on every device",
    "split: expert parallel keeps E / N_ep whole experts a device, taken from the "
    "N_tp x N_dp devices of a stage; two all-to-alls a mixture-of-experts layer "
    "forward (two more backward), each device dispatching its share of the tokens; "
    "the router taken as even (a busier device is slower)",
    "split: pipeline stages of L / N_pp layers, the input table on the first and the "
    "output table on the last; one point-to-point send between stages each way",
    "split: collectives are rings (a latency a step plus the bytes each device sends "
    "at the link's rate each way: half the chip table's both-ways figure); "
    "communication is added to the arithmetic, not overlapped with it",
]


def _comm(model: Model, s: Split, tokens: float, layers: int, moe: int, k: int,
          passes: int) -> dict[str, float]:
    """Seconds of one stage's communication for ``tokens`` positions, ``passes`` = 1
    forward, 2 forward and backward."""
    return {
        "tensor-parallel all-reduces": 2 * passes * layers
        * tp_all_reduce_time(model, s, tokens),
        "expert all-to-alls": 2 * passes * moe
        * ep_all_to_all_time(model, s, tokens, k),
        "pipeline sends": passes * pp_send_time(model, s, tokens),
    }


def _k(model: Model) -> int:
    return expert_layers(model)[1]


def _serving_stage_rows(stages: list[Model], chip: Chip, engine: Serving, n: int):
    usable = serving.usable_bytes(chip, engine)
    rows = []
    for i, st in enumerate(stages):
        w, one = costs.weight_bytes(st), serving.conversation_bytes(st, n, engine)
        fit = (usable - w) // one if w <= usable and one else 0
        rows.append({"stage": i, "layers": len(st.layout.blocks), "weight_bytes": w,
                     "cache_bytes_per_conversation": one,
                     "conversations_that_fit": max(fit, 0)})
    return rows


def _machine(chip: Chip) -> int | None:
    """Chips one machine of ``chip`` joins by its fast link (None: not published)."""
    return chip.facts.link_domain if chip.facts is not None else None


def serving_split(model: Model, chip: Chip, s: Split, engine: Serving,
                  lengths, batches, batch_contexts) -> dict:
    """One model split for serving: each stage's device (weights, one conversation's
    cache in blocks, conversations that fit), and for each context and batch the
    seconds a token by cause, tokens a second over the N_dp replicas."""
    notes = check_split(model, s, _machine(chip))
    stages = stage_models(model, s)
    k, usable = _k(model), serving.usable_bytes(chip, engine)
    layers = len(stages[0].layout.blocks)
    moe = expert_layers(stages[0])[0]
    first = max(batch_contexts)
    devices = _serving_stage_rows(stages, chip, engine, first)
    busiest = max(devices, key=lambda r: (r["weight_bytes"]
                                          + r["cache_bytes_per_conversation"]))
    fits = all(r["weight_bytes"] <= usable for r in devices)

    def step(n: int, b: int) -> dict:
        compute = sum(costs.decode_step_time(st, chip, n, b) for st in stages)
        moes = sum(expert_layers(st)[0] for st in stages)
        comm = _comm(model, s, b, layers * s.pp, moes, k, 1)
        comm["pipeline sends"] *= s.pp - 1
        total = compute + sum(comm.values())
        fit = min(r["conversations_that_fit"] for r in
                  _serving_stage_rows(stages, chip, engine, n))
        return {"context": n, "batch": b, "arithmetic_or_reading_seconds": compute,
                **{k2.replace(" ", "_").replace("-", "_") + "_seconds": v
                   for k2, v in comm.items()},
                "seconds_per_token": total, "tokens_per_s": s.dp * b / total,
                "fits": b <= fit}

    del moe
    return {
        "split": _split_dict(s),
        "notes": notes,
        "devices": devices,
        "busiest_stage": busiest["stage"],
        "conversation_tokens": first,
        "usable_bytes_per_device": usable,
        "weights_fit": fits,
        "decode": [step(n, 1) for n in lengths] if fits else [],
        "throughput": [step(n, b) for n in batch_contexts for b in batches]
        if fits else [],
    }


def _split_dict(s: Split) -> dict:
    link = s.link
    return {"tp": s.tp, "pp": s.pp, "ep": s.ep, "dp": s.dp,
            "micro_batches": s.micro_batches, "devices": s.devices,
            "interconnect": None if link is None else link.name,
            "link_bytes_per_s_each_way": None if link is None else link.bytes_per_s,
            "link_step_latency_s": None if link is None else link.step_latency_s}


def splits_that_fit(model: Model, chip: Chip, engine: Serving, context: int,
                    most_tp: int = 8, most: int = 4) -> list[dict]:
    """The smallest splits (tensor parallel within one machine of ``most_tp``, then
    tensor x pipeline) whose every device holds its weights and one conversation of
    ``context`` tokens in the memory the engine may use: at most ``most`` of them."""
    layers, found = len(model.layout.blocks), []
    for tp in range(1, most_tp + 1):
        for pp in range(1, min(layers, MAX_SPLIT) + 1):
            if _holds(model, chip, engine, context, Split(tp=tp, pp=pp)):
                found.append({"tp": tp, "pp": pp, "ep": 1, "dp": 1, "chips": tp * pp})
                break
        if model.layout.has_experts:  # experts over dp copies of tp (vLLM, SGLang)
            for dp in range(2, MOST_COPIES + 1):
                s = Split(tp=tp, ep=tp * dp, dp=dp)
                if _holds(model, chip, engine, context, s):
                    found.append({"tp": tp, "pp": 1, "ep": tp * dp, "dp": dp,
                                  "chips": tp * dp})
                    break
    found.sort(key=lambda r: (r["chips"], r["pp"], r["dp"]))
    kept: list[dict] = []
    for r in found:  # drop a split that needs more chips and more stages than one kept
        if not any(q["chips"] <= r["chips"] and q["pp"] <= r["pp"] for q in kept):
            kept.append(r)
    return kept[:most]


MOST_COPIES = 64
"""Most data-parallel copies ``splits_that_fit`` spreads experts over."""


def _holds(model: Model, chip: Chip, engine: Serving, context: int, s: Split) -> bool:
    """True if every device of ``s`` holds its weights and one conversation."""
    try:
        check_split(model, s, _machine(chip))
    except ValueError:
        return False
    rows = _serving_stage_rows(stage_models(model, s), chip, engine, context)
    return all(r["conversations_that_fit"] >= 1 for r in rows)


def training_split(model: Model, chip: Chip, s: Split, t: training.Training,
                   tokens: int) -> dict:
    """One training step over the split: each stage's device memory by part (the
    activations of the micro-batches 1F1B keeps in flight), the step's time by cause
    on the busiest stage, tokens a second and chip-hours over all devices."""
    notes = check_split(model, s, _machine(chip))
    if t.batch % s.micro_batches:
        fits = sorted({d for n in range(1, math.isqrt(t.batch) + 1) if t.batch % n == 0
                       for d in (n, t.batch // n)})[:12]
        raise ValueError(f"argument --micro-batches: {s.micro_batches} do not divide "
                         f"the batch of {t.batch} (it takes one of "
                         f"{', '.join(map(str, fits))})")
    if t.zero_stage and s.ep > s.tp:
        raise ValueError("argument --ep: experts spread over data-parallel devices "
                         "under ZeRO are not counted; keep --ep at most --tp or use "
                         "--zero-stage 0")
    mb = t.batch // s.micro_batches
    stages = stage_models(model, s)
    k, per_micro = _k(model), dataclasses.replace(t, batch=mb, devices=s.dp)
    whole_batch = dataclasses.replace(t, devices=s.dp)
    rows, times = [], []
    for i, st in enumerate(stages):
        parts = training.step_memory(st, per_micro)
        held = micro_batches_held(s.pp, s.micro_batches, "1F1B", i)
        parts["activations"] *= held
        if i < s.pp - 1:
            parts["logits"] = parts["float32 softmax"] = 0.0
        rows.append({"stage": i, "layers": len(st.layout.blocks),
                     "micro_batches_held": held, "memory": parts,
                     "memory_bytes": sum(parts.values())})
        times.append(training.step_time(st, chip, whole_batch))
    busiest = max(range(len(rows)), key=lambda i: rows[i]["memory_bytes"])
    slowest = max(range(len(times)), key=lambda i: times[i])
    st = stages[slowest]
    comm = _comm(model, s, mb * t.seq_len, len(st.layout.blocks),
                 expert_layers(st)[0], k, 2)
    comm = {n: v * s.micro_batches for n, v in comm.items()}
    comm["data-parallel " + ("all-reduce" if t.zero_stage == 0
                             else "ZeRO collectives")] = _dp_time(st, s, t)
    compute = times[slowest]
    bubble = compute * bubble_share(s.pp, s.micro_batches) / (
        1 - bubble_share(s.pp, s.micro_batches))
    seconds = compute + bubble + sum(comm.values())
    per_s = t.batch * t.seq_len * s.dp / seconds
    model_work = training.step_work(model, t).model * s.dp
    peak = chip.flops_per_s / chip.flops_efficiency
    total = tokens / per_s
    return {
        "split": _split_dict(s), "notes": notes, "devices": rows,
        "busiest_stage": busiest, "slowest_stage": slowest,
        "memory": rows[busiest]["memory"],
        "memory_bytes": rows[busiest]["memory_bytes"],
        "fits": rows[busiest]["memory_bytes"] <= chip.memory_bytes,
        "arithmetic_seconds": compute, "bubble_seconds": bubble,
        "communication_seconds": comm,
        "step_seconds": seconds, "tokens_per_s": per_s,
        "model_flops_utilisation": model_work / seconds / peak / s.devices,
        "training_seconds": total, "chip_hours": total * s.devices / 3600,
    }


def _dp_time(st: Model, s: Split, t: training.Training) -> float:
    """Seconds of the data-parallel collectives of one stage's gradients: an
    all-reduce, or ZeRO's reduce-scatter and all-gather (two all-gathers at stage 3)."""
    if s.dp == 1:
        return 0.0
    x = training.trainable_parameters(st, t) * st.bytes_per_number
    if t.zero_stage == 0:
        return ring_time("all-reduce", x, s.dp, s.link)
    gathers = 2 if t.zero_stage == 3 else 1
    return ring_time("reduce-scatter", x, s.dp, s.link) + gathers * ring_time(
        "all-gather", x, s.dp, s.link)
