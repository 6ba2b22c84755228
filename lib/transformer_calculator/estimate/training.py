"""A training step as it is expected to run, beside the step ``train`` computes (the
floor): the slowest stage's multiplies and its reading, each on its own roof at the
fitted fraction of peak, stretched by the pipeline's bubble, plus the collectives on
the links they cross (tensor parallel within a machine; data parallel and pipeline
sends over the network once the devices span machines) and a fixed time a step.
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass

import published

from ..chips import rate_for
from ..training import trainable_parameters
from ..training_time import micro_batch_bytes, optimizer_bytes, step_work
from ..splits import stage_models
from .fractions import Fractions, fractions
from .terms import Count, Roof, generation

__all__ = ["TrainingParts", "training_parts", "training_step_seconds",
           "training_tokens_per_s"]


@dataclass(frozen=True)
class TrainingParts:
    """A training run cut into its terms: the floor's tokens a second a chip
    (``floor``), the tokens a chip handles a step (``tokens``), the step's terms and
    the pipeline's bubble as a share of the stage's own time."""

    floor: float
    tokens: float
    terms: tuple
    bubble: float


def _ring(link, n: int, nbytes: float, calls: float, kind: str, name: str,
          what: str) -> list[Count]:
    """``calls`` ring all-reduces of ``nbytes`` over ``n`` devices on ``link``: their
    steps at its published latency and their bytes at its rate (fitted as ``what``:
    ``train tp`` or ``train dp``)."""
    if n <= 1:
        return []
    return [Count(f"{name} steps", calls * 2 * (n - 1) * link.step_latency_s,
                  f"{what} latency:{kind}"),
            Count(f"{name} bytes", calls * nbytes * 2 * (n - 1) / n
                  / link.bytes_per_s_each_way, f"{what} link:{kind}")]


def training_parts(setup, figures: dict) -> TrainingParts:
    """The terms of one training run (``setup`` from ``measured_runs.setup``) beside
    what ``train`` computed for it (``figures``)."""
    m, chip, t, s = setup.model, setup.chip, setup.training, setup.split
    gen = generation(chip)
    stages = stage_models(m, s)
    st = stages[figures["slowest_stage"]]
    whole = dataclasses.replace(t, devices=s.dp, micro_batches=s.micro_batches)
    one = dataclasses.replace(whole, batch=whole.micro_batch, micro_batches=1)
    w = step_work(st, whole)
    nbytes = (whole.micro_batches * micro_batch_bytes(st, one)
              + optimizer_bytes(st, whole))
    rate = rate_for(chip, "fp8" if st.weights.fp8_compute else "bf16")
    terms: list = [Roof("the step's multiplies and reading",
                        w.matrix / rate + w.other / chip.flops_per_s,
                        nbytes / chip.bytes_per_s,
                        f"train compute:{gen}", f"train read:{gen}")]
    facts = chip.facts
    domain = (facts.link_domain if facts and facts.link_domain else 8)
    fast = published.link(facts.link) if facts and facts.link else None
    net = published.link(facts.network) if facts and facts.network else fast
    d, bpn = m.layout.width, m.bytes_per_number
    tokens_mb = (t.batch // s.micro_batches) * t.seq_len
    layers = len(st.layout.blocks)
    if s.tp > 1 and fast is not None:  # two all-reduces a layer each way
        link, kind = (fast, "nvlink") if s.tp <= domain else (net, "network")
        terms += _ring(link, s.tp, tokens_mb * d * bpn, 4 * layers * s.micro_batches,
                       kind, "tensor-parallel all-reduce", "train tp")
    if s.dp > 1 and net is not None:
        across = s.tp * s.pp * s.dp > domain
        link, kind = (net, "network") if across else (fast, "nvlink")
        grads = trainable_parameters(st, t) * bpn
        terms += _ring(link, s.dp, grads, 1, kind, "data-parallel gradients",
                       "train dp")
    if s.pp > 1 and net is not None:
        link, kind = (net, "network") if s.tp * s.pp > domain else (fast, "nvlink")
        # a stage's own sends, forward and back, once a micro-batch and virtual
        # stage (the stages send at once); a tensor-parallel share with sequence
        # parallel (Megatron-LM's scatter-gather)
        sends = 2 * s.micro_batches * s.virtual_stages
        share = s.tp if s.sequence_parallel else 1
        terms += [Count("pipeline sends", sends * tokens_mb * d * bpn / share
                        / link.bytes_per_s_each_way, f"train pp link:{kind}"),
                  Count("pipeline send steps", sends * link.step_latency_s,
                        f"train pp latency:{kind}")]
    terms.append(Count("a fixed time a layer and micro-batch",
                       3 * layers * s.micro_batches, f"train layer:{gen}"))
    terms.append(Count("a fixed time a step", 1.0, f"train fixed:{gen}"))
    bubble = figures["bubble_seconds"] / max(figures["arithmetic_seconds"], 1e-30)
    per_chip = figures["tokens_per_s"] / s.devices
    tokens = t.batch * t.seq_len * s.dp / s.devices
    return TrainingParts(per_chip, tokens, tuple(terms), bubble)


def training_step_seconds(p: TrainingParts, fr: Fractions | None = None) -> float:
    """Expected seconds of one step."""
    fr = fr or fractions()
    own = p.terms[0]
    compute = max(own.arith_s * fr.value(own.arith_key),
                  own.read_s * fr.value(own.read_key)) * (1 + p.bubble)
    rest = math.fsum(c.value * fr.value(c.key.replace("{engine}", "any"))
               for c in p.terms[1:])
    return compute + rest


def training_tokens_per_s(p: TrainingParts, fr: Fractions | None = None) -> float:
    """Expected tokens a second a chip."""
    return p.tokens / training_step_seconds(p, fr)
