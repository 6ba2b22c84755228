"""A model split for serving: what each device holds, what fits, and every time of the
report (a decode step, a prompt's pass, a request) under the split.

Each pipeline stage's device holds its weights and its share of every conversation's
cache; the split holds as many conversations as its fullest device does. Each of the
N_dp copies (attention data parallel) serves its own batch; the stages of one copy
take turns on its batch (no second batch in flight). A step's time is the sum over the
stages of each stage's roofline (``costs``) plus the collectives (``comm.py``): a
decode step's all-reduces wait on one another, so nothing hides them; with
``overlap`` the all-to-alls of two micro-batches hide under each other's arithmetic
(DeepSeek-V3's decode and prefill), and a prompt's pass hides its tensor-parallel
collectives under its matrices too.
"""

from __future__ import annotations

from transformer_arithmetic.search import first_true

from ..counting import costs
from ..service import serving
from ..counting.chips import Chip
from ..anatomy.model import Model
from ..service.serving import Serving
from .checks import check_split, experts_of, why_tp_uncut
from .comm import ep_seconds, pp_seconds, tp_seconds
from .links import crossing_notes
from .plan import MAX_SPLIT, Split
from .shares import expert_layers, stage_models
from .training_split import split_dict

__all__ = ["serving_split", "splits_that_fit", "step_seconds", "MOST_COPIES"]

MOST_COPIES = 64
"""Most data-parallel copies ``splits_that_fit`` spreads experts over."""


def _check(model: Model, s: Split) -> list[str]:
    notes = check_split(model, s)
    if s.cp > 1:
        raise ValueError("argument --cp: context parallel cuts a training sequence "
                         "(train); serving splits here are tp, pp, ep and dp")
    if s.virtual_stages > 1:
        raise ValueError("argument --virtual-stages: an interleaved schedule is a "
                         "training schedule (train)")
    if s.link is None and s.sends:
        raise ValueError("argument --chip: the book's example accelerator has no link "
                         "to other chips; name a chip (--chip h100-sxm) or give "
                         "--interconnect GB/s")
    return notes + crossing_notes(s)


def _comm(model: Model, stages: list[Model], s: Split, tokens: float,
          compute: float, prefill: bool) -> dict[str, float]:
    """Seconds of one step's collectives over ``tokens`` positions of each copy (a
    decode step: the batch; a prompt's pass: the batch times the prompt), as added
    (hidden ones taken off under ``overlap``)."""
    e = experts_of(model)
    layers = sum(len(st.layout.blocks) for st in stages)
    moe = sum(expert_layers(st)[0] for st in stages)
    comm = {
        "tensor-parallel all-reduces": tp_seconds(model, s, tokens, layers, 1),
        "expert all-to-alls": ep_seconds(model, s, tokens, moe,
                                         e.per_token if e else 0, 1),
        "pipeline sends": pp_seconds(model, s, tokens, 1) * (s.pp - 1),
    }
    if s.overlap:
        hideable = ["expert all-to-alls"] + (
            ["tensor-parallel all-reduces"] if prefill else [])
        budget = compute
        for name in hideable:
            hidden = min(comm[name], budget)
            comm[name] -= hidden
            budget -= hidden
    return comm


def _key(name: str) -> str:
    return name.replace(" ", "_").replace("-", "_") + "_seconds"


def step_seconds(model: Model, stages: list[Model], chip: Chip, s: Split, n: int,
                 b: int) -> tuple[float, dict[str, float]]:
    """(the stages' roofline, the collectives) of one decode step of ``b``
    conversations of ``n`` tokens on each copy."""
    compute = sum(costs.decode_step_time(st, chip, n, b) for st in stages)
    return compute, _comm(model, stages, s, b, compute, prefill=False)


def prefill_seconds(model: Model, stages: list[Model], chip: Chip, s: Split, n: int,
                    b: int) -> tuple[float, dict[str, float]]:
    """(the stages' roofline, the collectives) of one pass over ``b`` prompts of ``n``
    tokens on a copy."""
    compute = sum(costs.prefill_time(st, chip, n, b) for st in stages)
    return compute, _comm(model, stages, s, b * n, compute, prefill=True)


def _stage_rows(stages: list[Model], chip: Chip, engine: Serving, n: int) -> list:
    usable = serving.usable_bytes(chip, engine)
    rows = []
    for i, st in enumerate(stages):
        w, one = costs.weight_bytes(st), serving.conversation_bytes(st, n, engine)
        fit = (usable - w) // one if w <= usable and one else 0
        rows.append({"stage": i, "layers": len(st.layout.blocks), "weight_bytes": w,
                     "cache_bytes_per_conversation": one,
                     "conversations_that_fit": max(fit, 0)})
    return rows


def fit_at(stages: list[Model], chip: Chip, engine: Serving, n: int) -> int:
    """Conversations of ``n`` tokens each copy holds: its fullest device's count."""
    rows = _stage_rows(stages, chip, engine, n)
    return min(r["conversations_that_fit"] for r in rows)


def longest_at(stages: list[Model], chip: Chip, engine: Serving, b: int) -> int | None:
    """Longest conversation each of ``b`` holds on every device of a copy (None: the
    caches stop growing and fit)."""
    found = [serving.longest_context(st, chip, b, engine) for st in stages]
    limited = [x for x in found if x is not None]
    return min(limited) if limited else None


def _step_row(model, stages, chip, s, engine, n, b) -> dict:
    compute, comm = step_seconds(model, stages, chip, s, n, b)
    total = compute + sum(comm.values())
    arithmetic = sum(costs.arithmetic_time(st, chip, n, b) for st in stages)
    reading = sum(costs.reading_time(st, chip, n, b) for st in stages)
    held = max(costs.weight_bytes(st) + b * serving.conversation_bytes(st, n, engine)
               for st in stages)
    return {"context": n, "batch": b, "arithmetic_or_reading_seconds": compute,
            "arithmetic_seconds": arithmetic, "reading_seconds": reading,
            "limited_by": "reading" if reading >= arithmetic else "arithmetic",
            **{_key(k): v for k, v in comm.items()},
            "communication_seconds": sum(comm.values()),
            "seconds_per_token": total, "tokens_per_s": s.dp * b / total,
            "memory_bytes_per_device": held,
            "fits": b <= fit_at(stages, chip, engine, n)}


def _prefill_row(model, stages, chip, s, n) -> dict:
    compute, comm = prefill_seconds(model, stages, chip, s, n, 1)
    return {"context": n, "arithmetic_or_reading_seconds": compute,
            **{_key(k): v for k, v in comm.items()},
            "seconds": compute + sum(comm.values())}


def _request_row(model, stages, chip, s, engine, prompt: int, answer: int,
                 b: int) -> dict:
    compute, comm = prefill_seconds(model, stages, chip, s, prompt, b)
    first = compute + sum(comm.values())

    def one(n: int) -> float:
        arithmetic, c = step_seconds(model, stages, chip, s, n, b)
        return arithmetic + sum(c.values())

    steps = 0.0
    if answer > 1:  # the stages' rooflines, then each step's collectives (b tokens)
        times = [serving.request_times(st, chip, prompt, answer, b) for st in stages]
        steps = sum(t.whole - t.first_token for t in times)
        per_step = sum(step_seconds(model, stages, chip, s, prompt + 1, b)[1].values())
        steps += per_step * (answer - 1)
    head = one(prompt + 1) if answer > 1 else 0.0
    tail = one(prompt + answer - 1) if answer > 1 else 0.0
    return {"batch": b, "prompt": prompt, "answer": answer,
            "first_token_seconds": first, "first_step_seconds": head,
            "last_step_seconds": tail,
            "mean_step_seconds": steps / (answer - 1) if answer > 1 else 0.0,
            "whole_seconds": first + steps,
            "tokens_per_s": s.dp * b * answer / (first + steps),
            "fits": b <= fit_at(stages, chip, engine, prompt + answer)}


def serving_split(model: Model, chip: Chip, s: Split, engine: Serving,
                  lengths, batches, batch_contexts, requests=()) -> dict:
    """One model split for serving: each stage's device (weights, one conversation's
    cache in blocks, conversations that fit), and for each context and batch the
    seconds a token by cause, tokens a second over the N_dp copies, the prompt's pass
    and each request's times."""
    notes = _check(model, s)
    stages = stage_models(model, s)
    usable = serving.usable_bytes(chip, engine)
    devices = _stage_rows(stages, chip, engine, max(batch_contexts))
    busiest = max(devices, key=lambda r: (r["weight_bytes"]
                                          + r["cache_bytes_per_conversation"]))
    fits = all(r["weight_bytes"] <= usable for r in devices)
    args = (model, stages, chip, s, engine)
    return {
        "split": split_dict(s),
        "notes": notes,
        "devices": devices,
        "busiest_stage": busiest["stage"],
        "usable_bytes_per_device": usable,
        "weight_bytes_per_device": max(r["weight_bytes"] for r in devices),
        "cache_bytes_per_token_per_device": max(costs.cache_bytes_per_token(st)
                                                for st in stages),
        "weights_fit": fits,
        "lengths": [{"tokens": n, "cache_bytes_per_device":
                     max(serving.conversation_bytes(st, n, engine) for st in stages),
                     "conversations_that_fit": fit_at(stages, chip, engine, n)
                     if fits else 0} for n in lengths],
        "longest_conversation": longest_at(stages, chip, engine, 1) if fits else 0,
        "fit_by_batch": [{"batch": b, "longest_context":
                          longest_at(stages, chip, engine, b)} for b in batches]
        if fits else [],
        "decode": [_step_row(*args, n, 1) for n in lengths] if fits else [],
        "prefill": [_prefill_row(model, stages, chip, s, n) for n in lengths]
        if fits else [],
        "throughput": [_step_row(*args, n, b) for n in batch_contexts for b in batches]
        if fits else [],
        "requests": [_request_row(*args, q.prompt, q.answer, b) for q in requests
                     for b in batches] if fits else [],
    }


def splits_that_fit(model: Model, chip: Chip, engine: Serving, context: int,
                    most_tp: int = 8, most: int = 4) -> list[dict]:
    """The smallest splits (tensor parallel within one machine of ``most_tp``, then
    tensor x pipeline, the fewest stages found by bisection: a stage holds less as there
    are more) whose every device holds its weights and one conversation of ``context``
    tokens in the memory the engine may use: at most ``most`` of them."""
    layers, found = min(len(model.layout.blocks), MAX_SPLIT), []
    for tp in range(1, most_tp + 1):
        if why_tp_uncut(model, tp) is not None:  # check_split refuses each split
            continue
        pp = first_true(lambda p, tp=tp: _holds(model, chip, engine, context,
                                                Split(tp=tp, pp=p)), limit=layers)
        if pp is not None and pp <= layers:
            found.append({"tp": tp, "pp": pp, "ep": 1, "dp": 1, "chips": tp * pp})
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


def _holds(model: Model, chip: Chip, engine: Serving, context: int, s: Split) -> bool:
    """True if every device of ``s`` holds its weights and one conversation."""
    try:
        check_split(model, s)
    except ValueError:
        return False
    rows = _stage_rows(stage_models(model, s), chip, engine, context)
    return all(r["conversations_that_fit"] >= 1 for r in rows)
