"""Every serving plan that meets a service's targets on so many chips, ranked by
requests a second a chip.

A unit is one split of the model (``splits.serving_split``: tp within a machine, pp,
and for a mixture of experts attention data parallel beside expert parallel over the
whole unit); the chips hold as many units as fit in them. Each copy in a unit takes a
batch of b requests at once: it reads their prompts in one pass (the time to first
token) and writes their answers together (the time between tokens is the mean step):
a static batch, whose times are the roofline's floors of that batch (no queueing, no
prompts arriving mid-answer). Two ways to serve:

- aggregated: each unit reads its prompts and writes their answers; requests a second
  a unit = N_dp b / (the whole request's time);
- disaggregated: prefill units read prompts only (N_dp b_p / the prompts' pass), decode
  units write answers only (N_dp b_d / the answer's steps), the caches handed from one
  to the other (not priced); the chips split between them in the ratio that gives both
  the same requests a second.

A batch is within the targets when its time to first token and its mean time between
tokens are at most the targets and its caches fit; each unit takes its best such batch.
The rate asked is met when the chips' units together serve it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..anatomy.model import Model
from ..service.serving import Request
from ..service.serving import Serving
from ..splits import serving_split
from .space import Space, divisors, tp_sizes

__all__ = ["ServingGoal", "serving_plans", "BATCHES", "units"]

BATCHES = tuple(2 ** i for i in range(11))
"""Batches a copy is tried at: 1 to 1,024 requests."""


@dataclass(frozen=True)
class ServingGoal:
    """A service: requests of ``prompt`` and ``answer`` tokens arriving at ``rate`` a
    second, with targets for the time to first token and the time between tokens (in
    seconds), served by ``engine``."""

    prompt: int
    answer: int
    rate: float
    ttft_s: float
    tpot_s: float
    engine: Serving = Serving()


def units(model: Model, space: Space) -> list[dict]:
    """The unit splits tried: (tp, pp, ep, dp) with tp within a machine and the unit's
    devices dividing the chips; for a mixture of experts also attention data parallel
    over dp copies with the experts over all tp x dp devices."""
    out = []
    moe = model.layout.has_experts
    for tp in tp_sizes(model, space):
        for pp in divisors(space.chips // tp):
            if pp <= len(model.layout.blocks):
                out.append({"tp": tp, "pp": pp, "ep": tp if moe else 1, "dp": 1})
        if moe:
            for dp in divisors(space.chips // tp)[1:]:
                out.append({"tp": tp, "pp": 1, "ep": tp * dp, "dp": dp})
    return out


def _rows(model, chip, space, u, goal) -> tuple[dict, list[dict]] | None:
    """The unit's serving figures and its request rows (None: refused, or its weights
    do not fit)."""
    s = space.split(**u)
    q = Request(goal.prompt, goal.answer)
    try:
        f = serving_split(model, chip, s, goal.engine, (goal.prompt,), BATCHES,
                          (goal.prompt + goal.answer,), (q,))
    except ValueError:
        return None
    if not f["weights_fit"]:
        return None
    steps = {r["batch"]: r for r in f["throughput"]}
    rows = [{**r, "step_by_cause_seconds": _causes(steps[r["batch"]]),
             "memory_bytes_per_device": steps[r["batch"]]["memory_bytes_per_device"]}
            for r in f["requests"]]
    return f, rows


def _causes(row: dict) -> dict[str, float]:
    """A decode step at the conversation's end by cause: the arithmetic, the reading
    (the step waits on the slower), and the communication added."""
    return {"arithmetic": row["arithmetic_seconds"], "reading": row["reading_seconds"],
            "communication": row["communication_seconds"]}


def _unit(u: dict, fmt: str, f: dict) -> dict:
    return {"weights": fmt, **u, "devices": u["tp"] * u["pp"] * u["dp"],
            "weight_bytes_per_device": f["weight_bytes_per_device"],
            "prompt_cache_bytes_per_device": f["lengths"][0]["cache_bytes_per_device"],
            "notes": f["notes"]}


def _aggregated(base: dict, rows: list[dict], goal: ServingGoal, chips: int) -> dict:
    """The unit's best batch within the targets, serving whole requests."""
    n, dp = base["devices"], base["dp"]
    best = None
    for r in rows:
        if not (r["fits"] and r["first_token_seconds"] <= goal.ttft_s
                and r["mean_step_seconds"] <= goal.tpot_s):
            continue
        per_chip = dp * r["batch"] / r["whole_seconds"] / n
        if best is None or per_chip > best[0]:
            best = (per_chip, r)
    if best is None:
        return None
    per_chip, r = best
    units_ = chips // n
    return {**base, "kind": "aggregated", "batch": r["batch"],
            "memory_bytes_per_device": r["memory_bytes_per_device"],
            "ttft_seconds_floor": r["first_token_seconds"],
            "tpot_seconds_floor": r["mean_step_seconds"],
            "request_seconds_floor": r["whole_seconds"],
            "last_step_by_cause_seconds": r["step_by_cause_seconds"],
            "requests_per_s_per_chip": per_chip,
            "answer_tokens_per_s_per_chip": per_chip * goal.answer,
            "units": units_, "requests_per_s": per_chip * n * units_,
            "meets_rate": per_chip * n * units_ >= goal.rate}


def _phase(base: dict, rows: list[dict], goal: ServingGoal, prefill: bool):
    """The unit's best batch as a prefill unit (time to first token within its target,
    the prompts' caches fitting) or a decode unit (time between tokens within its
    target, the whole conversations fitting): (requests a second a chip, row)."""
    n, dp, best = base["devices"], base["dp"], None
    for r in rows:
        if prefill:
            ok, t = r["prefill_fits"] and r["first_token_seconds"] <= goal.ttft_s, \
                r["first_token_seconds"]
        else:
            t = r["whole_seconds"] - r["first_token_seconds"]
            ok = r["fits"] and r["mean_step_seconds"] <= goal.tpot_s and t > 0
        if ok and (best is None or dp * r["batch"] / t / n > best[0]):
            best = (dp * r["batch"] / t / n, r)
    return best


def _pair(p: tuple, d: tuple, goal: ServingGoal, chips: int) -> dict:
    """A prefill unit beside a decode unit: the chips split between their units so that
    the fewer requests a second of the two is the most."""
    (pb, (rp, prow)), (db, (rd, drow)) = p, d
    kp, kd = pb["devices"], db["devices"]
    top = (0.0, 0, 0)
    for n_p in range(1, chips // kp + 1):
        n_d = (chips - n_p * kp) // kd
        served = min(n_p * kp * rp, n_d * kd * rd)
        if n_d and served > top[0]:
            top = (served, n_p, n_d)
    per_chip = 1 / (1 / rp + 1 / rd)
    return {"kind": "disaggregated", "weights": pb["weights"],
            "prefill": {**pb, "batch": prow["batch"]},
            "decode": {**db, "batch": drow["batch"]},
            "memory_bytes_per_device": max(_prefill_memory(pb, prow["batch"]),
                                           drow["memory_bytes_per_device"]),
            "ttft_seconds_floor": prow["first_token_seconds"],
            "tpot_seconds_floor": drow["mean_step_seconds"],
            "last_step_by_cause_seconds": drow["step_by_cause_seconds"],
            "prefill_to_decode_chips": rd / rp,
            "requests_per_s_per_chip": per_chip,
            "answer_tokens_per_s_per_chip": per_chip * goal.answer,
            "units": {"prefill": top[1], "decode": top[2]},
            "requests_per_s": top[0], "meets_rate": top[0] >= goal.rate}


def _prefill_memory(unit: dict, batch: int) -> int:
    """Bytes the fullest device of a prefill unit holds: its weights and ``batch``
    prompts' caches (handed on once written; the largest stage's of each, so at most
    that where the stages differ)."""
    return unit["weight_bytes_per_device"] + batch * unit[
        "prompt_cache_bytes_per_device"]


def rank_key(c: dict) -> tuple:
    """The ranking: plans that meet the rate first, then requests a second a chip, most
    first, then less memory a device (weights and the batch's caches at the answer's
    end, on the fullest device; a stable, stated order)."""
    return (not c["meets_rate"], -c["requests_per_s_per_chip"],
            c["memory_bytes_per_device"], c["kind"], c["weights"])


def serving_plans(chip, space: Space, goal: ServingGoal, disaggregate: bool = True
                  ) -> dict:
    """Every aggregated plan within the targets and the best disaggregated pairs, ranked
    (``rank_key``)."""
    plans, prefills, decodes, searched = [], [], [], 0
    for fmt, model in space.formats.items():
        for u in units(model, space):
            searched += 1
            got = _rows(model, chip, space, u, goal)
            if got is None:
                continue
            f, rows = got
            fit_prompt = f["lengths"][0]["conversations_that_fit"]
            rows = [{**r, "prefill_fits": r["batch"] <= fit_prompt} for r in rows]
            base = _unit(u, fmt, f)
            agg = _aggregated(base, rows, goal, space.chips)
            plans += [agg] if agg else []
            for phase, into in ((True, prefills), (False, decodes)):
                best = _phase(base, rows, goal, phase)
                into += [(base, best)] if best else []
    if disaggregate and goal.answer > 1:
        prefills.sort(key=lambda p: -p[1][0])
        decodes.sort(key=lambda d: -d[1][0])
        for p in prefills[:3]:
            for d in decodes[:3]:
                if p[0]["weights"] == d[0]["weights"] and (
                        p[0]["devices"] + d[0]["devices"] <= space.chips):
                    plans.append(_pair(p, d, goal, space.chips))
    plans.sort(key=rank_key)
    return {"goal": "serving", "units_searched": searched, "plans": plans}
