"""The split options of ``report`` and ``train`` (``splits/``): the groups
(``--tensor-parallel/--tp``, ``--pipeline-parallel/--pp``, ``--expert-parallel/--ep``,
``--data-parallel/--dp``, ``--context-parallel/--cp``), the schedule
(``--micro-batches``, ``--virtual-stages``, ``--pp-layers``), the choices
(``--no-sequence-parallel``, ``--cp-kind``, ``--redundant-experts``, ``--overlap``)
and the links (``--interconnect NAME|GB/s`` inside a machine, ``--network NAME|GB/s``
between machines)."""

from __future__ import annotations

import argparse

from transformer_arithmetic.collectives import Link

from ..counting.chips import Chip
from .cli_values import typed, whole
from ..anatomy.model import Model
from .report import BATCHES, LENGTHS
from ..service.serving import Serving
from ..splits import (CP_KINDS, MAX_SPLIT, Split, chip_link, chip_machine, chip_network,
                      interconnect, serving_split)
from ..splits.report import split_report
from ..splits.text import serving_split_head, serving_split_times

__all__ = ["add_split_options", "split_of", "split_given", "add_serving_split",
           "with_split_text", "SPLIT_ASSUMPTIONS", "split_assumptions"]

MAX_MICRO = 10**6
"""Most micro-batches a step is cut into."""

_GROUPS = (
    ("--tensor-parallel", "--tp", "tp", "devices each layer is cut over (Megatron-LM)"),
    ("--pipeline-parallel", "--pp", "pp", "pipeline stages (layers that do not divide "
     "leave the end stages fewer)"),
    ("--expert-parallel", "--ep", "ep", "devices the experts are spread over, taken "
     "from a stage's tp x dp devices (more than the experts: one copy a device)"),
)

SPLIT_ASSUMPTIONS = [
    "split: tensor parallel cuts heads, feed-forward widths and the vocabulary "
    "(Megatron-LM: two all-reduces a layer forward, two more backward; under sequence "
    "parallelism an all-gather and a reduce-scatter each, the same bytes, and the "
    "activations cut by N_tp too); key-value heads fewer than N_tp are copied; "
    "normalisations, routers and latent down-projections stay whole on every device",
    "split: expert parallel keeps (E + copies) / N_ep whole experts a device, taken "
    "from the N_tp x N_dp devices of a stage, serving the tokens of the N_ep / N_tp "
    "copies it spans; two all-to-alls a mixture-of-experts layer forward (two more "
    "backward), each device posting its share of the tokens to every peer at once; "
    "the router taken as even (a busier device is slower; copies of the busiest "
    "experts are how DeepSeek-V3 evens it out)",
    "split: pipeline stages hold their layers (uneven when they do not divide: the end "
    "stages, which also hold the input table and the output head, hold fewer), the "
    "input table on the first and the output head on the last; one point-to-point "
    "send between stages each way",
    "split: devices numbered tensor parallel innermost, then context, data and "
    "pipeline parallel (Megatron-LM's order); a group within one machine talks over "
    "the chip's link (each way half the table's both-ways figure), one across "
    "machines over the network, each card carrying its own device's share, in two "
    "levels where several of the group share a machine; rings a latency a step",
]


def split_assumptions(overlap: bool) -> list[str]:
    """The split's assumptions, with the overlap chosen."""
    how = ("communication hidden under the arithmetic it can run beside, up to that "
           "arithmetic (--overlap): tensor parallel under the matrices, the "
           "all-to-alls under the other of two micro-batches, the gradients under the "
           "last backward pass; a decode step's all-reduces wait on one another and "
           "are added"
           if overlap else
           "communication added to the arithmetic: what a schedule that overlaps "
           "nothing takes (--overlap hides each collective under the arithmetic it "
           "can run beside)")
    return SPLIT_ASSUMPTIONS + [f"split: {how}"]


def _group_size(text: str) -> int:
    """Devices in one way of splitting: a whole number from 1 to ``MAX_SPLIT``."""
    return whole(text, 1, MAX_SPLIT)


_group = typed(_group_size)


def _link(text: str) -> Link:
    try:
        return interconnect(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _layers(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(p) for p in text.replace(" ", "").split(","))
    except ValueError:
        counts = ()
    if not counts or min(counts) < 0:
        raise argparse.ArgumentTypeError(
            f"must be whole numbers of layers, one a stage, got {text!r}")
    return counts


_group.__name__ = "whole number"
_link.__name__ = "interconnect"
_layers.__name__ = "layers"


def add_split_options(p: argparse.ArgumentParser, data_parallel: bool) -> None:
    """The split flags (``--dp`` only where the command has no data-parallel flag of
    its own: ``train`` names it ``--devices``)."""
    for long, short, dest, what in _GROUPS:
        p.add_argument(long, short, dest=dest, type=_group, default=1, metavar="N",
                       help=f"{what} (default 1)")
    if data_parallel:
        p.add_argument("--data-parallel", "--dp", dest="dp", type=_group, default=1,
                       metavar="N", help="copies of the model serving side by side, "
                       "each with its own batch (attention data parallel beside expert "
                       "parallel; default 1)")
    p.add_argument("--context-parallel", "--cp", dest="cp", type=_group, default=1,
                   metavar="N", help="devices one training sequence is cut over "
                   "(train; default 1)")
    p.add_argument("--cp-kind", choices=CP_KINDS, default="all-gather",
                   help="context parallel's exchange: all-gather of the keys and "
                   "values (Llama 3, the default) or ring attention")
    if not data_parallel:  # train's alone: a serving step runs one batch through
        p.add_argument("--micro-batches", type=typed(lambda t: whole(t, 1, MAX_MICRO)),
                       default=None, metavar="M",
                       help="micro-batches a step is cut into: the pipeline's, or "
                       "gradient accumulation without one (default 1)")
    p.add_argument("--virtual-stages", type=_group, default=1, metavar="V",
                   help="chunks of layers each pipeline device holds: the interleaved "
                   "1F1B schedule (train; default 1)")
    p.add_argument("--pp-layers", type=_layers, default=None, metavar="L1,L2,...",
                   help="the layers of each pipeline stage by hand")
    p.add_argument("--redundant-experts", type=typed(lambda t: whole(t, 0, 1 << 16)),
                   default=0, metavar="R", help="copies of experts beside the model's "
                   "own, spread with them over --ep (DeepSeek-V3's prefill: 32)")
    p.add_argument("--no-sequence-parallel", dest="sequence_parallel",
                   action="store_false", help="tensor parallel keeps each d-wide "
                   "activation whole on every device (sequence parallelism is on by "
                   "default, as Megatron-LM runs it)")
    p.add_argument("--overlap", action="store_true", help="hide each collective "
                   "under the arithmetic it can run beside, up to that arithmetic "
                   "(default: communication added to it)")
    p.add_argument("--interconnect", type=_link, default=None, metavar="NAME|GB/s",
                   help="the link inside a machine: a name from the published table "
                   "(NVLink 4, PCIe Gen4 x16, ...; the 'chips' command lists each "
                   "chip's) or GB/s both ways together, as vendors print it (default: "
                   "the chip's own)")
    p.add_argument("--network", type=_link, default=None, metavar="NAME|GB/s",
                   help="the link between machines, a device's own card (default: the "
                   "chip's published network)")


def split_given(args: argparse.Namespace) -> bool:
    """True when the command line asks for a split."""
    return (
        args.tp * args.pp * args.ep * args.cp > 1
        or getattr(args, "dp", 1) > 1
        or args.interconnect is not None
        or args.network is not None
        or getattr(args, "micro_batches", None) is not None
        or args.virtual_stages > 1
        or args.pp_layers is not None
        or args.redundant_experts > 0
    )


def split_of(args: argparse.Namespace, chip: Chip, dp: int) -> Split:
    """The split the options name, on ``chip``'s own links unless ``--interconnect``
    or ``--network`` names others (no link at all: the split refuses to price any
    send, after it has checked that the model cuts so)."""
    link = args.interconnect if args.interconnect is not None else chip_link(chip)
    network = args.network if args.network is not None else chip_network(chip)
    machine = chip_machine(chip) if network is not None else None
    return Split(tp=args.tp, pp=args.pp, ep=args.ep, dp=dp, cp=args.cp,
                 micro_batches=getattr(args, "micro_batches", None) or 1, link=link,
                 network=network,
                 machine=machine, sequence_parallel=args.sequence_parallel,
                 cp_kind=args.cp_kind, virtual_stages=args.virtual_stages,
                 stage_layers=args.pp_layers,
                 redundant_experts=args.redundant_experts, overlap=args.overlap)


def add_serving_split(result: dict, args: argparse.Namespace, model: Model, chip: Chip,
                      engine: Serving, requests) -> dict:
    """The report's ``result`` made about the split the options name (its own figures
    under ``split``, the one chip's under ``one_chip``)."""
    split = split_of(args, chip, args.dp)
    figures = serving_split(model, chip, split, engine, args.context or LENGTHS,
                            args.batch or BATCHES, result["batch_contexts"], requests)
    out = split_report(result, figures)
    out["assumptions"] = result["assumptions"] + split_assumptions(split.overlap)
    return out


def with_split_text(text: str, result: dict) -> str:
    """The report's text with the split's head after the model and chip, and its
    times by cause before the assumptions."""
    if "split" not in result:
        return text
    head, _, rest = text.partition("\n\n")
    body, _, tail = rest.partition("\nAssumptions\n")
    times = serving_split_times(result["split"])
    return "\n".join([head, "", *serving_split_head(result["split"]),
                      body.rstrip("\n"), *times, "", "Assumptions", tail])
