"""A plan of many devices: how they are cut, how they are scheduled, and the links that
join them.

The groups, in the order devices are numbered (Megatron-LM's ``tp-cp-ep-dp-pp``):
tensor parallel innermost, then context parallel, then data parallel, then the pipeline
stages; expert parallel takes its devices from the N_tp x N_dp devices of a stage, as
vLLM, SGLang and Megatron-LM do. So N_dev = N_tp x N_cp x N_dp x N_pp, and a group whose
devices fit in one machine talks over the machine's own link (NVLink, up to the chip's
``link_domain``), a larger one over the network between machines (the chip's
``network``), each network card carrying its own device's share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import published
from transformer_arithmetic.checks import checked_whole
from transformer_arithmetic.collectives import Link, link_of

from ..counting.chips import Chip

__all__ = ["MAX_SPLIT", "GIVEN_LINK_KIND", "CP_KINDS", "Split", "interconnect",
           "chip_link", "chip_network", "chip_machine"]

MAX_SPLIT = 4096
"""Largest group a split flag takes."""

GIVEN_LINK_KIND = "pcie"
"""A link given as a number takes the step latency of this kind of published link
(NCCL's PCIe figure: a link the table does not name is priced as the slower kind)."""

CP_KINDS = ("all-gather", "ring")
"""How context parallel hands keys and values round: all gathered before attention
(Llama 3's form) or passed round a ring piece by piece (ring attention)."""


@dataclass(frozen=True)
class Split:
    """How the devices are cut and scheduled, and the links between them.

    Groups: tensor (``tp``), pipeline (``pp``), expert (``ep``), data (``dp``) and
    context (``cp``) parallel. Schedule: ``micro_batches`` a pipeline step (or a
    gradient accumulation) is cut into, ``virtual_stages`` chunks each pipeline device
    holds (interleaved 1F1B; 1: plain 1F1B), ``stage_layers`` the layers of each stage
    by hand (None: as even as they go, the end stages holding fewer). Choices:
    ``sequence_parallel`` (tensor parallel also cuts the sequence of the d-wide
    activations, Megatron-LM's default), ``cp_kind`` (one of ``CP_KINDS``),
    ``redundant_experts`` (copies of experts beyond the model's own, spread with them;
    an ``ep`` larger than the experts adds one copy a device), ``overlap`` (each
    collective hidden under the arithmetic it can run beside, up to that arithmetic;
    False: added to it). Links: ``link`` inside a machine, ``network`` between
    machines, ``machine`` the devices one machine's link joins (None: every group on
    ``link``)."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    cp: int = 1
    micro_batches: int = 1
    link: Link | None = None
    network: Link | None = None
    machine: int | None = None
    sequence_parallel: bool = True
    cp_kind: str = "all-gather"
    virtual_stages: int = 1
    stage_layers: tuple[int, ...] | None = None
    redundant_experts: int = 0
    overlap: bool = False

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep", "dp", "cp", "micro_batches", "virtual_stages"):
            checked_whole(name, getattr(self, name), minimum=1)
        checked_whole("redundant_experts", self.redundant_experts)
        if self.cp_kind not in CP_KINDS:
            raise ValueError(f"cp_kind must be one of {', '.join(CP_KINDS)}")
        if self.machine is not None:
            checked_whole("machine", self.machine, minimum=1)

    @property
    def devices(self) -> int:
        """N_dev = N_dp x N_tp x N_cp x N_pp (expert parallel reuses a stage's
        devices)."""
        return self.dp * self.tp * self.cp * self.pp

    @property
    def model_devices(self) -> int:
        """Devices one copy of the model is cut over: N_tp x N_cp x N_pp."""
        return self.tp * self.cp * self.pp

    @property
    def expert_cut(self) -> int:
        """Shares each expert's matrices are cut into: N_tp / N_ep, at least one."""
        return max(self.tp // self.ep, 1)

    @property
    def copies_per_expert_group(self) -> int:
        """Model copies whose tokens one expert-parallel group serves: N_ep / N_tp
        (attention data parallel beside expert parallel), at least one."""
        return max(self.ep // self.tp, 1)

    @property
    def sends(self) -> bool:
        """True when the devices of one copy hand each other anything."""
        return self.tp * self.pp * self.ep * self.cp > 1

    def __str__(self) -> str:
        cp = f" x cp {self.cp}" if self.cp > 1 else ""
        return f"tp {self.tp}{cp} x pp {self.pp} x ep {self.ep} x dp {self.dp}"


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
    """The chip's own published link to its peers (None: the chip has none in the
    table)."""
    if acc.facts is None or acc.facts.link is None:
        return None
    return link_of(published.link(acc.facts.link))


def chip_network(acc: Chip) -> Link | None:
    """The published network between machines of the chip (None: not published)."""
    if acc.facts is None or acc.facts.network is None:
        return None
    return link_of(published.link(acc.facts.network))


def chip_machine(acc: Chip) -> int | None:
    """Chips one machine of ``acc`` joins by its fast link (None: not published)."""
    return acc.facts.link_domain if acc.facts is not None else None
