"""What a request is expected to wait, kernel by kernel, with the fitted fractions of
peak (``fractions.py``), beside the floor it can never beat.

- a decode step: every kernel of every pipeline stage on its own roof (``terms.py``),
  a fixed time a layer and a step, and the collectives between devices;
- a prompt's pass: the same terms, but each kernel's reading and arithmetic one
  after the other (``pass_seconds``: at a prompt's sizes the kernels hide little of
  the smaller time under the larger, as the measured first tokens say);
- time between tokens: the mean decode step of the conversations running at once,
  plus the share of the other requests' prompt passes each step waits for (a closed
  loop of ``batch`` requests starts ``batch / answer`` new prompts a step, and an
  engine that serves prompts and answers together runs them between its steps; the
  share is fitted, but SGLang's is 1, ``measured_runs.fit.FIXED``: without
  ``--enable-mixed-chunk`` its prompt batches run alone);
- time to the first token, as the engines schedule prompts: a fixed time (and one a
  layer), the prompt's own pass and the steps its chunks ride with the running
  decodes (``STEP_TOKENS`` prompt tokens a step, each engine's default), and the wait
  for the prompts ahead of it (``queue_wait``).

The queueing assumption, stated: the requests in flight are a closed loop (each
client sends its next request when its answer ends, as a benchmark at a fixed
concurrency does); the prompts are served one after another by one server, the
engine's steps, at ``P + T n / C`` seconds a prompt (its own pass ``P`` and its share
``n / C`` of the steps of ``T`` seconds that carry it); between two of its prompts a
client is away for its answer's ``answer`` steps. The mean wait of such a loop is
found by Schweitzer's approximate mean value analysis (Schweitzer 1979; Lazowska et
al., *Quantitative System Performance*, 1984, ch. 6), in closed form for one server:
it is near zero while the prompts are rare and grows as ``N S - Z`` once the server is
saturated. In a disaggregated run the server is the pool of prefill workers (``P``
over their number) and the loop is every request the decode workers hold: the rate
at which the prefill workers can serve the decode workers' demand. Past the
conversations the engine's memory holds, a request also waits for one to finish.

The interval is the 10th to 90th percentile of measured over estimated for the
held-out runs of the same regime (``Interval``): "for 80 % of measured runs like
this one".
"""

from __future__ import annotations

import math
from functools import lru_cache
from dataclasses import dataclass

from ..counting.chips import Chip
from ..anatomy.model import Model
from ..service.engine_memory import kv_budget
from ..service.serving import Serving, conversation_bytes
from ..splits import Split
from .fractions import Fractions, fractions
from .terms import (Count, Roof, collective_terms, decode_terms, prefill_terms)

__all__ = ["Estimate", "ServingParts", "serving_parts", "term_seconds",
           "step_seconds", "pass_seconds", "prefill_seconds", "tpot_seconds",
           "ttft_seconds",
           "engine_capacity", "ENGINE_MEMORY", "STEP_TOKENS", "ROUNDS",
           "step_tokens", "queue_wait", "burst_wait"]

ENGINE_MEMORY = Serving(memory_utilization=0.9, block_size=16)
"""How the estimate takes an engine to share memory (vLLM's defaults): the
conversations beyond what fits wait for a place."""

STEP_TOKENS = {"vllm": 8192, "sglang": 8192, "trtllm": 8192}
"""Prompt tokens an engine's step carries by default (chunked prefill), on a chip of
at least 70 GiB: vLLM's ``max_num_batched_tokens`` for its OpenAI server (8,192 on
GPUs of 70 GiB or more other than the A100, ``EngineArgs`` in
``vllm/engine/arg_utils.py``), SGLang's ``chunked_prefill_size`` (8,192 below
160 GiB, 16,384 from there, ``ServerArgs`` in ``sglang/srt/server_args.py``: see
``step_tokens``) and TensorRT-LLM's ``max_num_tokens`` (8,192, ``trtllm-serve``'s
options)."""

ROUNDS = 20
"""Rounds of its concurrency a measured run sends after its warm-up: aiconfigurator's
benchmark sends ``concurrency x 20`` requests through ``aiperf`` (``MULTI_ROUND``,
``bench_run.sh.j2`` in its generator's templates), all of the first round at once."""

LARGE_MEMORY = 160 * 2**30
"""SGLang's memory from which its step carries twice the prompt tokens."""


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
    prompts run on other workers (``disaggregated``), the engine, the layers a
    prompt's pass crosses, the prompt's tokens, the prompt tokens a step carries, the
    requests in the closed loop the prompts' server sees (``clients``) and the copies
    of that server (``servers``: a disaggregated run's prompt workers)."""

    step: tuple
    prefill: tuple
    batch: int
    running: int
    answer: int
    disaggregated: bool
    engine: str
    layers: int = 0
    prompt: int = 1
    step_tokens: int = 8192
    clients: int = 1
    servers: int = 1


def engine_capacity(stages, chip: Chip, tokens: int, engine: str | None = None,
                    version: str | None = None) -> int:
    """Conversations of ``tokens`` tokens ``engine`` holds at once on the fullest
    device, in the memory it leaves for the cache (``engine_memory``), in whole blocks
    of ``ENGINE_MEMORY.block_size`` tokens (at least one)."""
    limit = stages[0].context.tokens if stages[0].context else tokens
    budget = kv_budget(engine, version, stages, chip, limit)
    one = max(conversation_bytes(st, tokens, ENGINE_MEMORY) for st in stages)
    return max(budget // one, 1) if one else 1


@lru_cache(maxsize=8192)  # the fit and the check price the same runs
def serving_parts(stages: tuple[Model, ...], prefill_stages: tuple[Model, ...],
                  chip: Chip, split: Split, prefill_split: Split, prompt: int,
                  answer: int, batch: int, engine: str | None,
                  disaggregated: bool, version: str | None = None,
                  decode_copies: int = 1, prefill_copies: int = 1) -> ServingParts:
    """The terms of a serving run at its mean context (the prompt and half the
    answer); a disaggregated run's copies of the attention on its decode workers
    (``decode_copies``, each holding ``batch`` requests) and on its prompt workers
    (``prefill_copies``, each passing one prompt at a time)."""
    running = min(batch, engine_capacity(stages, chip, prompt + answer, engine,
                                         version))
    context = prompt + answer // 2
    step = [t for st in stages for t in decode_terms(st, chip, context, running)]
    step += collective_terms(stages[0], split, chip, running)
    step.append(Count("a fixed time a step", 1.0, "step:{engine}"))
    prefill = [t for st in prefill_stages for t in prefill_terms(st, chip, prompt)]
    prefill += collective_terms(prefill_stages[0], prefill_split, chip, prompt)
    layers = sum(len(st.layout.blocks) for st in prefill_stages)
    clients, servers = (running * decode_copies, prefill_copies) if disaggregated \
        else (running, 1)
    return ServingParts(tuple(step), tuple(prefill), batch, running, answer,
                        disaggregated, engine or "any", layers, prompt,
                        step_tokens(engine, chip), clients, servers)


def step_tokens(engine: str | None, chip: Chip) -> int:
    """Prompt tokens a step of ``engine`` carries by default on ``chip``
    (``STEP_TOKENS``; SGLang's doubles from ``LARGE_MEMORY``)."""
    tokens = STEP_TOKENS.get(engine or "", 8192)
    if engine == "sglang" and chip.memory_bytes >= LARGE_MEMORY:
        tokens *= 2
    return tokens


def queue_wait(clients: float, service: float, away: float) -> float:
    """Seconds a request of a closed loop of ``clients`` waits for the server before
    its own ``service`` seconds begin, each client away ``away`` seconds between its
    requests (Schweitzer's approximate mean value analysis for one server, in closed
    form: the response ``R`` solves ``R = S (1 + Q (N - 1) / N)`` with ``Q = N R /
    (R + Z)``)."""
    if clients < 1 or service < 0 or away < 0:
        raise ValueError("clients must be at least 1 and the times at least 0, got "
                         f"{clients}, {service}, {away}")
    over = clients * service - away
    response = (over + math.sqrt(over * over + 4 * service * away)) / 2
    return max(response - service, 0.0)


def term_seconds(term, fr: Fractions, engine: str) -> float:
    """Seconds of one term with the fitted fractions."""
    if isinstance(term, Roof):
        return max(term.arith_s * fr.value(term.arith_key),
                   term.read_s * fr.value(term.read_key))
    return term.value * fr.value(term.key.replace("{engine}", engine))


def step_seconds(p: ServingParts, fr: Fractions) -> float:
    """Seconds of one decode step of the running conversations."""
    return math.fsum(term_seconds(t, fr, p.engine) for t in p.step)


def pass_seconds(term, fr: Fractions, engine: str) -> float:
    """Seconds of one term of a prompt's pass: a roof's arithmetic and its reading
    one after the other, as a prompt's kernels barely hide one under the other."""
    if isinstance(term, Roof):
        return (term.arith_s * fr.value(term.arith_key)
                + term.read_s * fr.value(term.read_key))
    return term_seconds(term, fr, engine)


def prefill_seconds(p: ServingParts, fr: Fractions) -> float:
    """Seconds of one prompt's pass."""
    return math.fsum(pass_seconds(t, fr, p.engine) for t in p.prefill)


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
    step = step_seconds(p, fr)
    fixed = _value(fr, "first token", p.engine) + p.layers * _value(
        fr, "first token layer", p.engine)
    away = p.answer * tpot_seconds(p, fr)
    share = p.prompt / p.step_tokens
    service = prefill / p.servers if p.disaggregated else prefill + step * share
    clients = p.clients if p.disaggregated else p.running
    steady = queue_wait(clients, service, away)
    burst = _value(fr, "burst", p.engine) * burst_wait(clients, service)
    if p.disaggregated:
        return (fixed + _value(fr, "disaggregated", "any") * prefill
                + _value(fr, "disaggregated queue", "any") * steady + burst)
    first = (fixed + prefill + math.ceil(share) * step
             + _value(fr, "queue", p.engine) * steady + burst)
    if p.batch <= p.running:
        return first
    whole = first + away  # one request, start to end
    return first + (p.batch / p.running - 1) * whole


def burst_wait(clients: float, service: float) -> float:
    """Mean seconds a request waits, over a measured run's ``ROUNDS`` rounds, for the
    prompts sent with it at the start: the first round's ``clients`` prompts arrive
    at once and are served one after another, ``service`` seconds each."""
    return (clients - 1) / 2 * service / ROUNDS
