"""The estimates ``report`` and ``train`` print beside their floors: each time the
floor (at the chip's peak) and what a real engine is expected to take, with the
interval that held 80 % of the measured runs like it.

They use the chip's peak figures whatever ``--flops-efficiency`` and
``--hbm-memory-efficiency`` say (those derate the floor's tables by hand; the
estimate has fractions of its own, fitted to measured runs).
"""

from __future__ import annotations

import math
import dataclasses
from types import SimpleNamespace

from ..counting.chips import Chip
from ..anatomy.model import Model
from ..splits import Split, chip_link, stage_models
from .fractions import fractions
from .interval import estimate_with_interval
from .serving import Estimate, serving_parts, step_seconds, tpot_seconds, ttft_seconds
from .training import training_parts, training_tokens_per_s

__all__ = ["at_peak", "serving_estimates", "training_estimate", "estimate_text",
           "serving_lines"]


def at_peak(chip: Chip) -> Chip:
    """``chip`` at its peak rates (its derating by hand undone)."""
    f, m = chip.flops_efficiency, chip.memory_efficiency
    if f == 1 and m == 1:
        return chip

    def undo(rate: float | None) -> float | None:
        return None if rate is None else rate / f

    return dataclasses.replace(
        chip, flops_per_s=chip.flops_per_s / f, bytes_per_s=chip.bytes_per_s / m,
        fp8_flops_per_s=undo(chip.fp8_flops_per_s),
        fp4_flops_per_s=undo(chip.fp4_flops_per_s), flops_efficiency=1.0,
        memory_efficiency=1.0)


def _estimate(quantity: str, regime_engine: str, floor: float, value: float,
              unit: str, bound: str) -> Estimate:
    return estimate_with_interval(quantity, regime_engine, floor, value, fractions(),
                                  unit, bound)


def serving_estimates(model: Model, chip: Chip, split: Split | None, lengths,
                      requests, batches, engine: str | None,
                      version: str | None) -> dict:
    """The expected time a token at each length (one conversation) and each
    request's expected times at each batch, beside their floors, in milliseconds."""
    chip = at_peak(chip)
    split = split or Split(link=chip_link(chip))
    stages = tuple(stage_models(model, split))
    name = engine or "any"
    decode = []
    for n in lengths:
        p = serving_parts(stages, stages, chip, split, split, n, 2, 1, engine, False,
                          version)
        floor = math.fsum(_decode_floor(st, chip, n) for st in stages)
        step = step_seconds(p, fractions())
        est = _estimate("tpot_ms", name, floor * 1e3, step * 1e3, "ms", "least")
        decode.append({"context": n, "seconds_per_token": est.as_dict()})
    rows = []
    from ..counting.costs import prefill_time
    from ..service.serving import request_times

    for q in requests:
        for b in batches:
            p = serving_parts(stages, stages, chip, split, split, q.prompt, q.answer, b,
                              engine, False, version)
            floor_tpot = math.fsum(request_times(st, chip, q.prompt, max(q.answer, 2),
                                           p.running).mean_step for st in stages)
            floor_ttft = math.fsum(prefill_time(st, chip, q.prompt, 1) for st in stages)
            tpot = _estimate("tpot_ms", name, floor_tpot * 1e3,
                             tpot_seconds(p) * 1e3, "ms", "least")
            ttft = _estimate("ttft_ms", name, floor_ttft * 1e3,
                             ttft_seconds(p) * 1e3, "ms", "least")
            rows.append({"prompt": q.prompt, "answer": q.answer, "batch": b,
                         "running": p.running, "ttft_ms": ttft.as_dict(),
                         "tpot_ms": tpot.as_dict()})
    return {"engine": engine, "engine_version": version, "decode_ms": decode,
            "requests": rows, "fitted_on": fractions().basis}


def _decode_floor(stage: Model, chip: Chip, n: int) -> float:
    from ..counting.costs import decode_step_time

    return decode_step_time(stage, chip, n, 1)


def _figure(x: float) -> str:
    """``x`` to three significant figures, with thousands separated."""
    v = float(f"{x:.3g}")
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def estimate_text(e: dict, label: str) -> str:
    """'floor 5.1 ms; expected 7.6 ms, 6.9-8.4 ms for 80 % of measured runs like
    this one'."""
    unit, f = e["unit"], _figure
    return (f"{label}floor {f(e['floor'])} {unit}; expected {f(e['estimate'])} {unit}, "
            f"{f(e['low'])}-{f(e['high'])} {unit} for {e['share']:.0%} of "
            f"{e['runs']:,} measured runs like this one")


def serving_lines(est: dict) -> list[str]:
    """The estimates as the report's text lays them out."""
    engine = est["engine"] or "fitted to the runs of every engine"
    lines = ["", f"Expected on a real engine ({engine}), beside the floor at peak"]
    for row in est["decode_ms"]:
        lines.append(estimate_text(row["seconds_per_token"],
                                   f"  a token at {row['context']:,} tokens, alone: "))
    for row in est["requests"]:
        head = (f"  {row['prompt']:,} + {row['answer']:,} tokens, {row['batch']:,} in "
                f"flight ({row['running']:,} fit at once)")
        lines += [head, estimate_text(row["ttft_ms"], "    first token: "),
                  estimate_text(row["tpot_ms"], "    between tokens: ")]
    basis = est["fitted_on"]
    lines.append(f"  fitted on {basis['runs_fitted']:,} measured runs of "
                 f"{', '.join(basis['fitted_on'])}; intervals from "
                 f"{basis['runs_held_out']:,} runs of the models held out")
    return lines


def training_estimate(model: Model, chip: Chip, split: Split, t, figures: dict) -> dict:
    """A training run's expected tokens a second a chip beside its floor."""
    chip = at_peak(chip)
    if "slowest_stage" not in figures:  # no split: one stage, no bubble
        figures = {**figures, "slowest_stage": 0, "bubble_seconds": 0.0,
                   "arithmetic_seconds": figures["step_seconds"]}
    setup = SimpleNamespace(model=model, chip=chip, training=t, split=split)
    p = training_parts(setup, figures)
    est = _estimate("tokens_per_s_per_chip", "any", p.floor, training_tokens_per_s(p),
                    "tokens/s/chip", "most")
    return est.as_dict()
