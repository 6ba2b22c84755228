"""What a request is expected to wait, kernel by kernel, with the fitted fractions of
peak (``fractions.py``), beside the floor it can never beat.

- a decode step: every kernel of every pipeline stage on its own roof (``terms.py``),
  a fixed time a layer and a step, and the collectives between devices;
- time between tokens: the mean decode step of the conversations running at once,
  plus the share of the other requests' prompt passes each step waits for (a closed
  loop of ``batch`` requests starts ``batch / answer`` new prompts a step, and an
  engine that serves prompts and answers together runs them between its steps);
- time to the first token: a fixed time (and one a layer), the prompt's own pass,
  and the queue of
  other prompts before it, which grows with the requests in flight (a fitted factor
  of ``(batch - 1) ** power``); past the conversations the engine's memory holds,
  a request also waits for one to finish.

The interval is the 10th to 90th percentile of measured over estimated for the
held-out runs of the same regime (``Interval``): "for 80 % of measured runs like
this one".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..counting.chips import Chip
from ..anatomy.model import Model
from ..service.engine_memory import kv_budget
from ..service.serving import Serving, conversation_bytes
from ..splits import Split
from .fractions import Fractions, fractions
from .terms import (Count, Roof, collective_terms, decode_terms, prefill_terms)

__all__ = ["Estimate", "ServingParts", "serving_parts", "term_seconds",
           "step_seconds", "prefill_seconds", "tpot_seconds", "ttft_seconds",
           "engine_capacity", "ENGINE_MEMORY"]

ENGINE_MEMORY = Serving(memory_utilization=0.9, block_size=16)
"""How the estimate takes an engine to share memory (vLLM's defaults): the
conversations beyond what fits wait for a place."""


@dataclass(frozen=True)
class Estimate:
    """One quantity of a run: its ``floor`` (the bound: the least time or the most
    tokens a second possible, as ``bound`` says), the ``estimate`` and its interval
    (``low`` to ``high`` holds ``share`` of the ``runs`` held-out measured runs of its
    ``regime``), in ``unit``."""

    quantity: str
    unit: str
    bound: str
    floor: float
    estimate: float
    low: float
    high: float
    share: float
    runs: int
    regime: str

    def as_dict(self) -> dict:
        """The figures as JSON holds them."""
        return {"floor": self.floor, "estimate": self.estimate, "low": self.low,
                "high": self.high, "share": self.share, "runs": self.runs,
                "regime": self.regime, "unit": self.unit, "bound": self.bound}


@dataclass(frozen=True)
class ServingParts:
    """A serving run cut into what its times are made of: one decode step's terms
    (``step``), one prompt's pass (``prefill``), the conversations in flight
    (``batch``) and running at once (``running``), the answer's tokens, whether the
    prompts run on other workers (``disaggregated``), and the engine."""

    step: tuple
    prefill: tuple
    batch: int
    running: int
    answer: int
    disaggregated: bool
    engine: str
    layers: int = 0


def engine_capacity(stages, chip: Chip, tokens: int, engine: str | None = None,
                    version: str | None = None) -> int:
    """Conversations of ``tokens`` tokens ``engine`` holds at once on the fullest
    device, in the memory it leaves for the cache (``engine_memory``), in whole blocks
    of ``ENGINE_MEMORY.block_size`` tokens (at least one)."""
    limit = stages[0].context.tokens if stages[0].context else tokens
    budget = kv_budget(engine, version, stages, chip, limit)
    one = max(conversation_bytes(st, tokens, ENGINE_MEMORY) for st in stages)
    return max(budget // one, 1) if one else 1


def serving_parts(stages: tuple[Model, ...], prefill_stages: tuple[Model, ...],
                  chip: Chip, split: Split, prefill_split: Split, prompt: int,
                  answer: int, batch: int, engine: str | None,
                  disaggregated: bool, version: str | None = None) -> ServingParts:
    """The terms of a serving run at its mean context (the prompt and half the
    answer)."""
    running = min(batch, engine_capacity(stages, chip, prompt + answer, engine,
                                         version))
    context = prompt + answer // 2
    step = [t for st in stages for t in decode_terms(st, chip, context, running)]
    step += collective_terms(stages[0], split, chip, running)
    step.append(Count("a fixed time a step", 1.0, "step:{engine}"))
    prefill = [t for st in prefill_stages for t in prefill_terms(st, chip, prompt)]
    prefill += collective_terms(prefill_stages[0], prefill_split, chip, prompt)
    layers = sum(len(st.layout.blocks) for st in prefill_stages)
    return ServingParts(tuple(step), tuple(prefill), batch, running, answer,
                        disaggregated, engine or "any", layers)


def term_seconds(term, fr: Fractions, engine: str) -> float:
    """Seconds of one term with the fitted fractions."""
    if isinstance(term, Roof):
        return max(term.arith_s * fr.value(term.arith_key),
                   term.read_s * fr.value(term.read_key))
    return term.value * fr.value(term.key.replace("{engine}", engine))


def step_seconds(p: ServingParts, fr: Fractions) -> float:
    """Seconds of one decode step of the running conversations."""
    return math.fsum(term_seconds(t, fr, p.engine) for t in p.step)


def prefill_seconds(p: ServingParts, fr: Fractions) -> float:
    """Seconds of one prompt's pass."""
    return math.fsum(term_seconds(t, fr, p.engine) for t in p.prefill)


def _value(fr: Fractions, name: str, engine: str) -> float:
    return fr.value(f"{name}:{engine}")


def tpot_seconds(p: ServingParts, fr: Fractions | None = None) -> float:
    """Expected seconds between tokens."""
    fr = fr or fractions()
    step = step_seconds(p, fr)
    if p.disaggregated:
        return step
    share = p.running / max(p.answer, 1)
    return step + _value(fr, "interference", p.engine) * share * prefill_seconds(p, fr)


def ttft_seconds(p: ServingParts, fr: Fractions | None = None) -> float:
    """Expected seconds to the first token."""
    fr = fr or fractions()
    prefill = prefill_seconds(p, fr)
    fixed = _value(fr, "first token", p.engine) + p.layers * _value(
        fr, "first token layer", p.engine)
    if p.disaggregated:
        return fixed + _value(fr, "disaggregated", p.engine) * prefill
    queue = _value(fr, "queue", p.engine) * (p.running - 1) ** _value(
        fr, "queue power", p.engine)
    first = fixed + prefill * (1 + queue)
    if p.batch <= p.running:
        return first
    whole = first + p.answer * tpot_seconds(p, fr)  # one request, start to end
    return first + (p.batch / p.running - 1) * whole
