"""A published model split over many chips: what one device holds and how long a step
takes, for serving (``report``) and for training (``train``).

Each device's share is itself a layout (``device_model``): its tensor-parallel share of
every layer (h / N_tp query heads, h_kv / N_tp key-value heads or one copy where there
are fewer than N_tp, f / N_tp of each feed-forward width, V / N_tp vocabulary rows,
padded up as Megatron-LM pads them), its E / N_ep experts, and its pipeline stage's
L / N_pp layers (the first stage holds the input table, the last the output table and
the final normalisation; a tied table is copied to both ends, as Megatron-LM does).
Normalisations, routers and a latent attention's down-projections stay whole on every
device. Every byte and second of a device is then the calculator's own count of that
layout (``costs``, ``training``), and the communication is the ring collectives of the
teaching module ``collectives``: nothing is counted twice.

Expert parallel takes its devices from the N_tp x N_dp devices of a stage (as vLLM and
Megatron-LM do), so N_dev = N_dp x N_tp x N_pp; an expert is cut by N_tp / N_ep more
where N_ep is smaller than N_tp.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from transformer_arithmetic.checks import checked_whole
import published
from transformer_arithmetic.collectives import Link, link_of, ring_time, send_time

from .chips import Chip, chips
from .feedforward import Experts, FeedForward
from .layout import Layout
from .mixers import Attention, LatentAttention
from .model import Model

__all__ = ["Split", "interconnect", "chip_link", "check_split", "device_model",
           "stage_models", "GIVEN_LINK_KIND", "MAX_SPLIT"]

MAX_SPLIT = 4096
"""Largest group a split flag takes."""

GIVEN_LINK_KIND = "pcie"
"""A link given as a number takes the step latency of this kind of published link
(NCCL's PCIe figure: a link the table does not name is priced as the slower kind)."""


@dataclass(frozen=True)
class Split:
    """How the devices are cut: tensor-, pipeline-, expert- and data-parallel groups,
    micro-batches of the pipeline, and the ``link`` that joins them."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    micro_batches: int = 1
    link: Link | None = None

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep", "dp", "micro_batches"):
            checked_whole(name, getattr(self, name), minimum=1)

    @property
    def devices(self) -> int:
        """N_dev = N_dp x N_tp x N_pp (expert parallel reuses a stage's devices)."""
        return self.dp * self.tp * self.pp

    @property
    def model_devices(self) -> int:
        """Devices one copy of the model is cut over: N_tp x N_pp."""
        return self.tp * self.pp

    @property
    def expert_cut(self) -> int:
        """Shares each expert's matrices are cut into: N_tp / N_ep, at least one."""
        return max(self.tp // self.ep, 1)

    def __str__(self) -> str:
        return f"tp {self.tp} x pp {self.pp} x ep {self.ep} x dp {self.dp}"


def interconnect(text: str) -> Link:
    """The link ``text`` names: a link of the published table (its key or its name),
    or a figure in GB/s both ways together, as vendors print it (each way half of it,
    at the step latency of a ``GIVEN_LINK_KIND`` link)."""
    try:
        return link_of(published.link(text))
    except ValueError:
        pass
    try:
        gbps = float(text)
    except ValueError:
        known = ", ".join(f.name for f in published.links())
        raise ValueError(
            f"must be a link of the published table ({known}) or GB/s, got {text!r}"
        ) from None
    if not (math.isfinite(gbps) and 1e-3 <= gbps <= 1e9):
        raise ValueError(f"GB/s must lie between 0.001 and 1e9, got {text!r}")
    latency = next(f for f in published.links() if f.kind == GIVEN_LINK_KIND)
    return Link(gbps * 1e9 / 2, latency.step_latency_s, name=f"{gbps:g} GB/s")


def chip_link(acc: Chip) -> Link | None:
    """The chip's own published link (None: the chip has none in the table)."""
    if acc.facts is None or acc.facts.link is None:
        return None
    return link_of(published.link(acc.facts.link))


def _refuse(flag: str, why: str, whole: int | None = None) -> ValueError:
    """The one-line refusal of ``flag``; with ``whole``, the values that divide it (up
    to ``MAX_SPLIT``, at most twelve), which the rule broken allows."""
    if whole is not None:
        fits = [n for n in range(1, min(whole, MAX_SPLIT) + 1) if whole % n == 0]
        shown = ", ".join(map(str, fits[:12])) + (", ..." if len(fits) > 12 else "")
        why += f" (it takes a number that divides {whole:,}: {shown})"
    return ValueError(f"argument {flag}: {why}")


def check_split(model: Model, s: Split, machine: int | None) -> list[str]:
    """Notes on ``s`` for ``model`` on chips whose fast link joins ``machine`` of them
    (None: not published), or a ValueError naming the flag that cannot be cut so."""
    notes: list[str] = []
    if s.model_devices * s.ep > 1 and model.route == "transformers":
        raise _refuse("--tp/--pp/--ep", "a model counted by the transformers route is "
                      "known by its tensors' sizes, not by its parts, so it cannot "
                      "be split (use --route layout)")
    blocks = model.layout.blocks
    for i, b in enumerate(blocks):
        m, f = b.mixer, b.ffn
        if s.tp > 1:
            if type(m) not in (Attention, LatentAttention):
                raise _refuse("--tp", f"layer {i}'s {type(m).__name__} is not "
                              "split by this calculator")
            if m.heads % s.tp:
                raise _refuse("--tp", f"{m.heads} heads do not divide among "
                              f"{s.tp} devices", m.heads)
            kv = getattr(m, "kv_heads", None)
            if kv is not None and kv % s.tp and s.tp % kv:
                raise _refuse("--tp", f"{kv} key-value heads neither divide among "
                              f"{s.tp} devices nor divide them")
        for part in (f, getattr(f, "shared", None)):
            if isinstance(part, FeedForward) and part.inner % s.tp:
                raise _refuse("--tp", f"feed-forward width {part.inner:,} does not "
                              f"divide among {s.tp} devices", part.inner)
        if isinstance(f, Experts):
            if f.count % s.ep:
                raise _refuse("--ep", f"{f.count} experts do not divide among "
                              f"{s.ep} devices", f.count)
            if f.inner % s.expert_cut:
                raise _refuse("--tp", f"expert width {f.inner:,} does not divide "
                              f"into {s.expert_cut} shares")
    if s.ep > 1:
        if not model.layout.has_experts:
            raise _refuse("--ep", "this model has no experts to spread")
        if (s.tp * s.dp) % s.ep or (s.ep % s.tp and s.tp % s.ep):
            raise _refuse("--ep", f"{s.ep} groups of experts need a stage of tp x dp = "
                          f"{s.tp * s.dp} devices to be a multiple of {s.ep}, "
                          "and tp to divide it or be divided by it")
    if len(blocks) % s.pp:
        raise _refuse("--pp", f"{len(blocks)} layers do not divide among {s.pp} "
                      "stages (uneven stages are not counted)", len(blocks))
    if model.layout.vocab % s.tp:
        notes.append(f"vocabulary {model.layout.vocab:,} padded to "
                     f"{_cut(model.layout.vocab, s.tp) * s.tp:,} rows to divide "
                     f"among {s.tp} devices")
    if machine is not None and s.devices > machine:
        notes.append(f"{s.devices} devices are more than the {machine} one "
                     "machine joins by its fast link: every group is "
                     "counted on the one link named, but a group that crosses "
                     "machines runs at the network's rate (give --interconnect)")
    return notes


def _share(k: int, parts: int) -> float | int:
    """A device's expected share of a token's ``k`` experts: k / N_ep (whole when it
    divides)."""
    return k // parts if k % parts == 0 else k / parts


def _cut(n: int, parts: int) -> int:
    return -(-n // parts)


def _mixer(m, tp: int):
    if tp == 1:
        return m
    if isinstance(m, Attention):
        kv = max(m.kv_heads // tp, 1)
        stored = m.stored_kv_heads and max(m.stored_kv_heads // tp, 1)
        return dataclasses.replace(m, heads=m.heads // tp, kv_heads=kv,
                                   stored_kv_heads=stored)
    return dataclasses.replace(m, heads=m.heads // tp)  # latent: down-proj. whole


def _ffn(f, s: Split):
    if isinstance(f, FeedForward):
        return dataclasses.replace(f, inner=f.inner // s.tp)
    if isinstance(f, Experts):
        count = f.count // s.ep
        kept = (f.count - count) * f.width  # the router's rows stay on every device
        shared = f.shared and dataclasses.replace(f.shared,
                                                  inner=f.shared.inner // s.tp)
        return dataclasses.replace(
            f, count=count, per_token=_share(f.per_token, s.ep),
            inner=f.inner // s.expert_cut, shared=shared,
            router_extra=f.router_extra + kept)
    return f


def device_model(model: Model, s: Split) -> Model:
    """One tensor- and expert-parallel device's share of the whole model (every layer:
    the single stage when N_pp = 1)."""
    lay = model.layout
    blocks = tuple(
        dataclasses.replace(b, mixer=_mixer(b.mixer, s.tp), ffn=_ffn(b.ffn, s))
        for b in lay.blocks
    )
    layout = dataclasses.replace(lay, blocks=blocks, vocab=_cut(lay.vocab, s.tp))
    return dataclasses.replace(model, layout=layout)


def stage_models(model: Model, s: Split) -> list[Model]:
    """Each pipeline stage's device, first to last: its L / N_pp layers, the input
    table on the first, the output table and final normalisation on the last."""
    whole = device_model(model, s)
    if s.pp == 1:
        return [whole]
    lay, per = whole.layout, len(whole.layout.blocks) // s.pp
    out = []
    for i in range(s.pp):
        first, last = i == 0, i == s.pp - 1
        layout = dataclasses.replace(
            lay,
            blocks=lay.blocks[i * per:(i + 1) * per],
            vocab=lay.vocab if first or last else 0,
            tied=True,  # one table on each end stage
            final_norm=lay.final_norm if last else 0,
            head_bias=lay.head_bias and last,
            positions=lay.positions if first else 0,
            embedding_norm=lay.embedding_norm if first else 0,
            embedding_width=lay.embedding_width if first or last else None,
        )
        out.append(dataclasses.replace(whole, layout=layout))
    return out


def tp_all_reduce_time(model: Model, s: Split, tokens: float) -> float:
    """Seconds of one of a layer's tensor-parallel all-reduces over ``tokens`` positions
    (tokens x d numbers, Megatron-LM), over the split's ring."""
    if s.tp == 1:
        return 0.0
    x = tokens * model.layout.width * model.bytes_per_number
    return ring_time("all-reduce", x, s.tp, s.link)


def ep_all_to_all_time(model: Model, s: Split, tokens: float, chosen: int) -> float:
    """Seconds of one expert all-to-all (dispatch or combine) for ``tokens`` positions
    of each model copy: the N_ep devices share the tokens of the N_ep / N_tp copies
    they span (of one copy when N_ep <= N_tp), and each hands one vector a token for
    each of the ``chosen`` experts."""
    if s.ep == 1:
        return 0.0
    mine = tokens / min(s.ep, s.tp)
    x = mine * chosen * model.layout.width * model.bytes_per_number
    return ring_time("all-to-all", x, s.ep, s.link)


def pp_send_time(model: Model, s: Split, tokens: float) -> float:
    """Seconds one stage takes to hand the next the activations of ``tokens``
    positions (tokens x d numbers, one point-to-point send)."""
    if s.pp == 1:
        return 0.0
    return send_time(tokens * model.layout.width * model.bytes_per_number, s.link)


def expert_layers(model: Model) -> tuple[int, int]:
    """Mixture-of-experts layers of one stage and the experts a token picks."""
    ex = [b.ffn for b in model.layout.blocks if isinstance(b.ffn, Experts)]
    return len(ex), (ex[0].per_token if ex else 0)
