"""A training step as it is expected to run, beside the step ``train`` computes (the
floor), built from the split's own figures (``splits/training_split.py``,
``splits/comm.py``) for the slowest stage. The step is its micro-batch slots (the
stage's micro-batches and the bubble: the other stages' micro-batch times over this
stage's, divided by the virtual stages, (N_pp - 1) / v for even stages) and its costs
once a step. A slot holds:

- the device's work for one micro-batch: its share of the stage's multiplies and
  reading, each on its own roof at the fitted fraction of peak; the tensor-parallel
  collectives' bytes (priced as paid in full: they add), as sequence
  parallel's all-gather and reduce-scatter at the bus bandwidth measured for the
  nodes the group spans where the chip's machine has it (``published.by_nodes``),
  else as ``tp_seconds`` counts them on the links; and the stage's sends (their
  bytes and latency, as ``pp_seconds`` counts them);
- the schedule's fixed times for one micro-batch: a time a layer (the kernels'
  launches), a time a tensor-parallel ring step (a step waits on every member's
  launch), counted inside a machine and between machines apart, and in a pipeline a
  time a slot (the blocking receive, by the link it crosses); each fitted apart for
  a stage alone and a pipelined one.

A stage alone adds the two. A pipelined stage's host waits at each blocking receive
and then queues the micro-batch's work, which its device runs meanwhile: its slot is
the longer of the two (so a larger micro-batch's work hides the fixed times instead
of adding to them). Once a step come the gradients' reduction (DDP's buckets, under
the last backward pass: a fitted multiple below 1) and ZeRO's gathering of the new
weights after the optimizer's step (exposed), each across machines at the bus
bandwidth measured for that many nodes where the machine has it, else as
``dp_seconds`` counts them on the links; and a fixed time."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import published
from transformer_arithmetic.collectives import ring_bytes_sent

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
    (``floor``), the tokens a chip handles a step (``tokens``), the stage's own
    multiplies and reading over its micro-batches (``own``), the costs each
    micro-batch adds on the device (``device``) and the schedule's fixed times a
    micro-batch (``host``), the costs once a step (``step``), the micro-batch slots
    a step takes (``slots``: the micro-batches and the bubble), the micro-batches,
    whether the stage is pipelined and the bubble as a share of the micro-batches."""

    floor: float
    tokens: float
    own: Roof
    device: tuple
    host: tuple
    step: tuple
    slots: float
    micro_batches: int
    pipelined: bool
    bubble: float

    @property
    def terms(self) -> tuple:
        """Every term, the stage's own first."""
        return (self.own, *self.device, *self.host, *self.step)


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


def _dp_seconds(st, s, t, chip) -> dict[str, float]:
    """Seconds of the stage's data-parallel collectives once a step, by name: where
    the group spans machines and the chip's machine has collectives measured by
    number of nodes (``published.by_nodes``), each device's bytes sent
    (``ring_bytes_sent``) at that bus bandwidth for the machines the group spans;
    else as ``dp_seconds`` counts them on the links."""
    g = groups(s)["dp"]
    measured = published.by_nodes(chip.key) if g.crosses else None
    if measured is None:
        return dp_seconds(st, s, t)
    return {k: ring_bytes_sent(c, x, g.size) / measured.bus(c, g.machines)
            for k, (c, x) in dp_arrays(st, s, t).items()}


def _tp_seconds(m, s, tokens: float, layers: int, chip) -> float:
    """Seconds of a micro-batch's tensor-parallel collectives (forward and backward)
    for their bytes: where the chip's machine has collectives measured by number of
    nodes, each layer's two all-reduces as an all-gather and a reduce-scatter
    (sequence parallel), each device's bytes sent at the bus bandwidth measured for
    the nodes the group spans; else as ``tp_seconds`` counts them on the links."""
    g = groups(s)["tp"]
    measured = published.by_nodes(chip.key)
    if measured is None:
        return tp_seconds(m, _only(s, "bytes"), tokens, layers, 2)
    x = tokens * m.layout.width * m.bytes_per_number
    one = math.fsum(ring_bytes_sent(c, x, g.size) / measured.bus(c, g.machines)
                    for c in ("all-gather", "reduce-scatter"))
    return 2 * 2 * layers * one


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
    own = Roof("the step's multiplies and reading",
               w.matrix / rate + w.other / chip.flops_per_s,
               nbytes / chip.bytes_per_s,
               f"train compute:{gen}", f"train read:{gen}")
    # the bubble in micro-batches of the slowest stage ((N_pp - 1) / (v N_mb) for even
    # stages): the other stages' micro-batch times, their collectives included, over
    # this stage's, so that a stage's own collectives do not stretch it twice
    mine = figures["arithmetic_seconds"] + math.fsum(
        v for k, v in figures.get("exposed_communication_seconds", {}).items()
        if not k.startswith("data-parallel"))
    bubble = figures["bubble_seconds"] / max(mine, 1e-30)
    tokens_mb = (t.batch // s.micro_batches) * t.seq_len / s.cp
    layers = len(st.layout.blocks)
    linked = s.link is not None
    pipelined = s.pp > 1
    device: list = []
    host: list = []
    if s.tp > 1 and linked:
        kind = _kind(s, "tp")
        waits = "pipelined" if pipelined else "alone"
        device.append(Count("tensor-parallel bytes", _tp_seconds(
            m, s, tokens_mb, layers, chip), f"train tp link:{kind}"))
        g = groups(s)["tp"]
        host.append(Count("tensor-parallel ring steps inside a machine",
                          2 * 2 * layers * 2 * (g.per_machine - 1),
                          f"train tp step:{waits}"))
        if g.crosses:
            host.append(Count("tensor-parallel ring steps between machines",
                              2 * 2 * layers * 2 * (g.machines - 1),
                              f"train tp step:{waits}:network"))
    if pipelined and linked:
        kind = _kind(s, "pp")
        device += [
            Count("pipeline send bytes", pp_seconds(
                m, _only(s, "bytes"), tokens_mb, 2), f"train pp link:{kind}"),
            Count("pipeline send latency", pp_seconds(
                m, _only(s, "latency"), tokens_mb, 2), f"train pp latency:{kind}")]
    if pipelined:  # the blocking receive: its metadata, then the data, host waiting
        host.append(Count("a fixed time a slot", 1.0,
                          f"train pp slot:{_kind(s, 'pp')}"))
    host.append(Count("a fixed time a layer", layers,
                      f"train pp layer:{gen}" if pipelined else f"train layer:{gen}"))
    step: list = []
    if s.dp > 1 and linked:
        dp = _dp_seconds(st, s, whole, chip)
        kind = _kind(s, "dp")
        gather = dp.pop("weight all-gather", 0.0)
        step.append(Count("data-parallel gradients", math.fsum(dp.values()),
                          f"train dp link:{kind}"))
        if gather:  # after the optimizer's step: nothing to hide under
            step.append(Count("data-parallel weight gather", gather,
                              f"train dp gather:{kind}"))
    step.append(Count("a fixed time a step", 1.0, f"train fixed:{gen}"))
    per_chip = figures["tokens_per_s"] / s.devices
    tokens = t.batch * t.seq_len * s.dp / s.devices
    return TrainingParts(per_chip, tokens, own, tuple(device), tuple(host),
                         tuple(step), s.micro_batches * (1 + bubble), s.micro_batches,
                         pipelined, bubble)


def _sum(terms, fr: Fractions) -> float:
    return math.fsum(c.value * fr.value(c.key.replace("{engine}", "any"))
                     for c in terms)


def training_step_seconds(p: TrainingParts, fr: Fractions | None = None) -> float:
    """Expected seconds of one step: its micro-batch slots, each the stage's own
    share and its device costs with the schedule's fixed times (added alone, the
    longer of the two in a pipeline), and the step's own costs."""
    fr = fr or fractions()
    own = max(p.own.arith_s * fr.value(p.own.arith_key),
              p.own.read_s * fr.value(p.own.read_key))
    device = own / p.micro_batches + _sum(p.device, fr)
    host = _sum(p.host, fr)
    slot = max(device, host) if p.pipelined else device + host
    return p.slots * slot + _sum(p.step, fr)


def training_tokens_per_s(p: TrainingParts, fr: Fractions | None = None) -> float:
    """Expected tokens a second a chip."""
    return p.tokens / training_step_seconds(p, fr)
