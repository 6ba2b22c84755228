"""A step cut into its kernels, each on its own roof, as chapter 1 teaches: the weight
matrices against the bytes they read, attention against its cache, the tables it
gathers rows from, and what the step also pays that no roof holds (a fixed time a
layer, the collectives between devices).

A ``Roof`` is one kernel: the seconds of its arithmetic at the chip's peak rate and of
its reading at the chip's peak bandwidth, and the names of the fractions of peak it
reaches (``fractions.py``); it takes the slower of the two once each is divided by its
fraction. A ``Count`` is a time that grows with a count (layers, collective steps,
bytes over a link), at a fitted number of seconds each (a key holding ``{engine}`` is
fitted for each serving engine). The whole step's floor is the
max of the summed arithmetic and the summed reading (``costs.py``); these terms add
each kernel's own time instead, and ``tests/test_estimate_terms.py`` holds their sums
equal to the floor's counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import published

from ..counting.chips import Chip, compute_on, rate_for
from ..counting.costs import arithmetic_time, cache_bytes, prefill_limits
from ..anatomy.matrices import matrices
from ..anatomy.model import Model
from ..counting.stored import (cache_read_bytes, caching_kinds, expert_kinds,
                               matrix_bytes, one_expert, read_bytes, tables)
from ..splits import Split, expert_layers

__all__ = ["Roof", "Count", "GROUPS", "generation", "decode_terms", "prefill_terms",
           "collective_terms"]

GROUPS = {"attention": "attention projections", "feed-forward": "feed-forward",
          "experts": "experts", "head": "head", "embeddings": "head"}
"""The kernel each role of matrix belongs to (other roles: "other matrices")."""


@dataclass(frozen=True)
class Roof:
    """One kernel: ``arith_s`` seconds of arithmetic at peak, ``read_s`` seconds of
    reading at peak, and the fractions of peak they reach (``arith_key``,
    ``read_key``)."""

    name: str
    arith_s: float
    read_s: float
    arith_key: str
    read_key: str


@dataclass(frozen=True)
class Count:
    """``value`` units of a time that grows with a count, at the fitted seconds a unit
    (or multiple of a published time) ``key`` names."""

    name: str
    value: float
    key: str


def generation(chip: Chip) -> str:
    """The chip's architecture, as the fractions are fitted by it."""
    return chip.facts.architecture if chip.facts is not None else "unknown"


def _matrix_roofs(model: Model, chip: Chip, tokens: int, gen: str,
                  phase: str = "") -> list[Roof]:
    """The weight matrices' kernels for a step carrying ``tokens`` tokens (``phase``
    ``"prefill "`` for a prompt's pass: its products of many rows reach their own
    fractions of peak, apart from a decode step's few rows)."""
    groups: dict[tuple[str, str], list[float]] = {}
    gathered = {m.name for m in tables(model)}

    def add(name: str, compute: str, flops: float, dequant: float, nbytes: float):
        arith = flops / rate_for(chip, compute) + dequant / chip.flops_per_s
        g = groups.setdefault((name, compute), [0.0, 0.0])
        g[0] += arith
        g[1] += nbytes / chip.bytes_per_s

    for m in matrices(model.layout):
        fmt = model.weights.part(m.role)
        compute = compute_on(chip, fmt.compute) if fmt is not None else "bf16"
        dequant = fmt.dequant_ops * m.numbers if fmt is not None else 0.0
        if m.role == "experts":
            continue
        if m.name in gathered:
            rows = min(tokens, m.rows)  # a row a token, a row a position
            add("tables", "bf16", 0.0, 0.0, matrix_bytes(model, m) * rows / m.rows)
            continue
        name = GROUPS.get(m.role, "other matrices")
        add(name, compute, 2 * tokens * m.numbers, dequant, matrix_bytes(model, m))
    fmt = model.weights.part("experts")
    for e, layers in expert_kinds(model.layout):
        touched = e.touched(tokens)
        nbytes, packed = one_expert(model, e)
        dequant = fmt.dequant_ops * touched * packed if fmt is not None else 0.0
        flops = 2 * tokens * e.tokens_from * e.working_per_token * e.expert_parameters
        compute = compute_on(chip, fmt.compute) if fmt is not None else "bf16"
        add("experts", compute, layers * flops,
            layers * dequant, layers * touched * nbytes)
    kind = _kind if phase else (lambda name: "")
    return [Roof(name, a, r, f"{phase}{kind(name)}compute:{gen}:{c}",
                 f"{kind(name) or phase}read:{gen}")
            for (name, c), (a, r) in groups.items()]


def _kind(name: str) -> str:
    """The prefix of a kernel's fractions: the routed experts' grouped products
    (many small matrices, each with a few tokens) reach their own fractions of peak,
    apart from the dense matrices'."""
    return "expert " if name == "experts" else ""


def _rest(name: str, total_arith: float, total_read: float, roofs: list[Roof],
          gen: str, phase: str = "") -> Roof:
    """The norms, biases and routers a step also reads and multiplies: what the
    whole step counts beyond its kernels (never below zero)."""
    arith = max(total_arith - math.fsum(r.arith_s for r in roofs), 0.0)
    read = max(total_read - math.fsum(r.read_s for r in roofs), 0.0)
    return Roof(name, arith, read, f"compute:{gen}:bf16", f"{phase}read:{gen}")


def decode_terms(model: Model, chip: Chip, context: int, batch: int) -> list:
    """One decode step of ``batch`` conversations of ``context`` tokens on one device:
    its kernels, a fixed time for each layer and one more for each layer of routed
    experts (its router, its tokens' sorting to the experts, the grouped products and
    their combining are kernels a dense layer does not launch)."""
    gen = generation(chip)
    roofs = _matrix_roofs(model, chip, batch, gen)
    cached = batch * cache_read_bytes(model, context) / chip.bytes_per_s
    pairs = sum(layers * mixer.decode_pair_flops(context)
                for mixer, _, layers in caching_kinds(model))
    state = model.layout.state_flops
    cache_dequant = model.cache.dequant_ops * batch * sum(
        b.mixer.decode_read_numbers(context) for b in model.layout.blocks)
    attention = Roof("attention over the cache",
                     (batch * (pairs + state) + cache_dequant) / chip.flops_per_s,
                     cached, f"attention compute:{gen}", f"attention read:{gen}")
    total_read = (_weights_read(model, batch, batch) / chip.bytes_per_s) + cached
    rest = _rest("norms, biases and routers",
                 arithmetic_time(model, chip, context, batch), total_read,
                 [*roofs, attention], gen)
    layers = len(model.layout.blocks)
    moe = sum(n for _, n in expert_kinds(model.layout))
    fixed = [Count("a fixed time a layer", layers, "layer:{engine}")]
    if moe:  # routing, sorting, the grouped products and the combine: more kernels
        fixed.append(Count("a fixed time an expert layer", moe,
                           "expert layer:{engine}"))
    return [*roofs, attention, rest, *fixed]


def _weights_read(model: Model, tokens: int, positions: int) -> int:
    return read_bytes(model, tokens, positions)


def prefill_terms(model: Model, chip: Chip, tokens: int) -> list:
    """The pass over one prompt of ``tokens`` tokens on one device: its kernels, a
    fixed time for each layer and one for each expert a layer the prompt's tokens
    reach on the device (each expert's product is a problem of its own, with its own
    set-up, however few its rows)."""
    gen = generation(chip)
    roofs = _matrix_roofs(model, chip, tokens, gen, "prefill ")
    pairs = model.layout.prefill_pair_flops(tokens)
    written = cache_bytes(model, tokens) / chip.bytes_per_s
    attention = Roof("attention over the prompt", pairs / chip.flops_per_s, written,
                     f"prefill attention compute:{gen}",
                     f"prefill attention read:{gen}")
    arith, read = prefill_limits(model, chip, tokens, 1)
    rest = _rest("norms, biases and routers", arith, read, [*roofs, attention], gen,
                 "prefill ")
    layers = len(model.layout.blocks)
    experts = sum(n * e.touched(tokens) for e, n in expert_kinds(model.layout))
    return [*roofs, attention, rest,
            Count("a fixed time a layer", layers, "layer:{engine}"),
            Count("a fixed time an expert a layer", experts, "prefill expert:{engine}")]


CUSTOM_ALL_REDUCE_BYTES = 8 * 2**20
"""The largest all-reduce the engines' own kernel takes within a machine (8 MiB: vLLM's
``CustomAllreduce`` ``max_size``, ``vllm/distributed/device_communicators/
custom_all_reduce.py``; SGLang runs the same kernel, TensorRT-LLM its own one-shot and
two-shot ones): each device reads its peers' buffers over the link at once, in one
stage (``cross_device_reduce_1stage``) or two (``..._2stage``: a reduce-scatter, then
an all-gather), not a ring's ``2 (n - 1)`` steps; larger ones go to NCCL's ring."""


def _link(split: Split, chip: Chip, group: int) -> tuple[str, float, float]:
    """(kind, bytes a second each way, published seconds a step) of the slowest link a
    group of ``group`` devices crosses: the chip's own within its machine, the
    network beyond it."""
    facts = chip.facts
    domain = facts.link_domain if facts is not None and facts.link_domain else None
    if domain is not None and group > domain and facts.network is not None:
        net = published.link(facts.network)
        return "network", net.bytes_per_s_each_way, net.step_latency_s
    link = split.link
    if link is None:
        return "nvlink", math.inf, 0.0
    return "nvlink", link.bytes_per_s, link.step_latency_s


def collective_terms(model: Model, split: Split, chip: Chip, tokens: float,
                     passes: int = 1) -> list[Count]:
    """The collectives of a step over ``tokens`` positions a model copy on ``split``
    (``passes`` 1 forward, 2 forward and backward): each tensor-parallel layer's two
    all-reduces and each expert layer's two all-to-alls, as ring steps (each at the
    link's published latency; an all-reduce the engine's own kernel takes, two:
    ``CUSTOM_ALL_REDUCE_BYTES``) and bytes over the link; a layer whose query and key
    norms span every head (``norm_spans_heads``) sums their squares across the devices
    too, an all-reduce of a few numbers a token: its steps, no bytes worth counting."""
    out: list[Count] = []
    d, bpn = model.layout.width, model.bytes_per_number
    layers = len(model.layout.blocks) // split.pp
    if split.tp > 1:
        kind, bw, lat = _link(split, chip, split.tp)
        n = split.tp
        spans = sum(getattr(b.mixer, "norm_spans_heads", False)
                    for b in model.layout.blocks) // split.pp
        calls = 2 * passes * layers
        small = kind == "nvlink" and tokens * d * bpn <= CUSTOM_ALL_REDUCE_BYTES
        steps = 2 if small else 2 * (n - 1)  # two exchanges with all peers at once
        norms = passes * spans * (2 if kind == "nvlink" else 2 * (n - 1))
        out += [Count("tensor-parallel all-reduce steps",
                      (calls * steps + norms) * lat, f"latency:{kind}"),
                Count("tensor-parallel all-reduce bytes",
                      calls * tokens * d * bpn * 2 * (n - 1) / n / bw, f"link:{kind}")]
    moe, k = expert_layers(model)
    if split.ep > 1 and moe:
        kind, bw, lat = _link(split, chip, split.ep)
        n = split.ep
        calls = 2 * passes * moe // split.pp
        mine = tokens / min(split.ep, split.tp)
        out += [Count("expert all-to-all steps", calls * (n - 1) * lat,
                      f"latency:{kind}"),
                Count("expert all-to-all bytes",
                      calls * mine * k * d * bpn * (n - 1) / n / bw, f"link:{kind}")]
    return out
