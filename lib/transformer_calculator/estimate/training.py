"""A training step as it is expected to run, beside the step ``train`` computes (the
floor), built from the split's own figures (``splits/training_split.py``,
``splits/comm.py``) for the slowest stage:

- its multiplies and reading, each on its own roof at the fitted fraction of peak,
  stretched by the schedule's bubble (the other stages' share of a micro-batch's way
  in and out, divided by the virtual stages);
- every cost the stage pays a micro-batch, counted over its micro-batches and the
  bubble's fill and drain alike: the tensor-parallel collectives of each layer (their
  bytes on the link they cross, as ``tp_seconds`` counts them, and their ring steps,
  each at a fitted time a step: a ring step waits on every member's launch, and waits
  longer when the pipeline's receives keep the host from queueing work ahead), the
  stage's own sends (their bytes and their latency, as ``pp_seconds`` counts them),
  and a fixed time a layer (the kernels' launches);
- the data-parallel reduction of the gradients once a step (``dp_seconds``), on the
  link it crosses, at a fitted multiple (below 1 where it hides under the backward
  pass);
- a fixed time a step.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import published

from ..counting.chips import rate_for
from ..counting.training_time import micro_batch_bytes, optimizer_bytes, step_work
from ..splits import stage_models
from ..splits.comm import dp_arrays, dp_seconds, pp_seconds, tp_seconds
from ..splits.links import groups
from .fractions import Fractions, fractions
from .terms import Count, Roof, generation

__all__ = ["TrainingParts", "training_parts", "training_step_seconds",
           "training_tokens_per_s"]

_NONE = 1e-30
"""A latency (or a time a byte) too small to count: the split's collectives priced
for their bytes alone (or their latency alone)."""


@dataclass(frozen=True)
class TrainingParts:
    """A training run cut into its terms: the floor's tokens a second a chip
    (``floor``), the tokens a chip handles a step (``tokens``), the step's terms and
    the pipeline's bubble as a share of the stage's own time."""

    floor: float
    tokens: float
    terms: tuple
    bubble: float


def _only(split, what: str):
    """``split`` with its links' latency (``what`` "bytes") or their time a byte
    (``what`` "latency") set to nothing."""
    def one(link):
        if link is None:
            return None
        if what == "bytes":
            return dataclasses.replace(link, step_latency_s=_NONE)
        return dataclasses.replace(link, bytes_per_s=1 / _NONE)
    return dataclasses.replace(split, link=one(split.link), network=one(split.network))


def _kind(split, group: str) -> str:
    """The link a group's collectives cross: ``network`` when it spans machines."""
    return "network" if groups(split)[group].crosses else "nvlink"


_BUS = {"all-reduce": 2.0, "all-gather": 1.0, "reduce-scatter": 1.0}
"""Each ring collective's bus bytes over its array's bytes, times n / (n - 1)
(nccl-tests' bus bandwidth)."""


def _dp_seconds(st, s, t, chip) -> float:
    """Seconds of the stage's data-parallel collectives once a step: where the group
    spans machines and the chip's machine has collectives measured by number of
    nodes (``published.by_nodes``), at that bus bandwidth for the machines the group
    spans; else as ``dp_seconds`` counts them on the links."""
    g = groups(s)["dp"]
    measured = published.by_nodes(chip.key) if g.crosses else None
    if measured is None:
        return math.fsum(dp_seconds(st, s, t).values())
    return math.fsum(_BUS[c] * (g.size - 1) / g.size * x
                     / measured.bus(c, g.machines)
                     for c, x in dp_arrays(st, s, t).values())


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
    bubble = figures["bubble_seconds"] / max(figures["arithmetic_seconds"], 1e-30)
    # every micro-batch's own costs, over the micro-batches and the fill and drain
    passes = s.micro_batches * (1 + bubble)
    tokens_mb = (t.batch // s.micro_batches) * t.seq_len / s.cp
    layers = len(st.layout.blocks)
    linked = s.link is not None
    if s.tp > 1 and linked:
        kind = _kind(s, "tp")
        waits = "pipelined" if s.pp > 1 else "alone"
        terms += [
            Count("tensor-parallel bytes", passes * tp_seconds(
                m, _only(s, "bytes"), tokens_mb, layers, 2), f"train tp link:{kind}"),
            Count("tensor-parallel ring steps",
                  passes * 2 * 2 * layers * 2 * (s.tp - 1), f"train tp step:{waits}")]
    if s.pp > 1 and linked:
        kind = _kind(s, "pp")
        terms += [
            Count("pipeline send bytes", passes * pp_seconds(
                m, _only(s, "bytes"), tokens_mb, 2), f"train pp link:{kind}"),
            Count("pipeline send latency", passes * pp_seconds(
                m, _only(s, "latency"), tokens_mb, 2), f"train pp latency:{kind}")]
    if s.dp > 1 and linked:
        grads = _dp_seconds(st, s, whole, chip)
        terms.append(Count("data-parallel gradients", grads,
                           f"train dp link:{_kind(s, 'dp')}"))
    terms.append(Count("a fixed time a layer and micro-batch", passes * layers,
                       f"train layer:{gen}"))
    terms.append(Count("a fixed time a step", 1.0, f"train fixed:{gen}"))
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
