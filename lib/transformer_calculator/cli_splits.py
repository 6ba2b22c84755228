"""The split options of ``report`` and ``train``: ``--tensor-parallel/--tp``,
``--pipeline-parallel/--pp``, ``--expert-parallel/--ep``, ``--data-parallel/--dp``,
``--micro-batches`` and ``--interconnect NAME|GB/s`` (``splits.py``)."""

from __future__ import annotations

import argparse

from transformer_arithmetic.collectives import Link

from .chips import Chip
from .cli_values import typed, whole
from .model import Model
from .report import BATCHES, LENGTHS
from .serving import Serving
from .split_costs import SPLIT_ASSUMPTIONS, serving_split
from .splits import MAX_SPLIT, Split, chip_link, interconnect
from .splits_text import serving_split_lines

__all__ = ["add_split_options", "split_of", "split_given", "add_serving_split",
           "with_split_text"]

_GROUPS = (
    ("--tensor-parallel", "--tp", "tp", "devices each layer is cut over (Megatron-LM)"),
    ("--pipeline-parallel", "--pp", "pp", "pipeline stages, L / N_pp layers each"),
    ("--expert-parallel", "--ep", "ep", "devices the experts are spread over, taken "
     "from a stage's tp x dp devices"),
)


def _group_size(text: str) -> int:
    """Devices in one way of splitting: a whole number from 1 to ``MAX_SPLIT``."""
    return whole(text, 1, MAX_SPLIT)


_group = typed(_group_size)


def _link(text: str) -> Link:
    try:
        return interconnect(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


_group.__name__ = "whole number"
_link.__name__ = "interconnect"


def add_split_options(p: argparse.ArgumentParser, training: bool) -> None:
    """The split flags (``--dp`` for serving copies; ``train`` names its data-parallel
    devices ``--devices`` and alone cuts a step into ``--micro-batches``)."""
    for long, short, dest, what in _GROUPS:
        p.add_argument(long, short, dest=dest, type=_group, default=1, metavar="N",
                       help=f"{what} (default 1)")
    if not training:
        p.add_argument("--data-parallel", "--dp", dest="dp", type=_group, default=1,
                       metavar="N", help="copies of the model serving side by side "
                       "(default 1)")
    else:
        p.add_argument("--micro-batches", type=_group, default=None, metavar="M",
                       help="micro-batches a pipeline step is cut into (default 1)")
    p.add_argument("--interconnect", type=_link, default=None, metavar="NAME|GB/s",
                   help="the link between devices: a name from the published table "
                   "(NVLink 4, PCIe Gen4 x16, ...; the 'chips' command lists each "
                   "chip's) or GB/s both ways together, as vendors print it (default: "
                   "the chip's own)")


def split_given(args: argparse.Namespace) -> bool:
    """True when the command line asks for a split."""
    return (
        args.tp * args.pp * args.ep > 1
        or args.interconnect is not None
        or getattr(args, "micro_batches", None) is not None
    )


def split_of(args: argparse.Namespace, chip: Chip, dp: int, training: bool) -> Split:
    """The split the options name, on ``chip``'s own link unless ``--interconnect``
    names another; a ValueError naming the flag when the split sends anything and no
    link is known (serving copies side by side send nothing)."""
    sends = args.tp * args.pp * args.ep > 1 or (training and dp > 1)
    if args.interconnect is not None:
        link = args.interconnect
    else:
        link = chip_link(chip)
        if link is None and sends:
            raise ValueError(
                "argument --interconnect: the accelerator has no link in the chip "
                "table; name one or give its GB/s"
            )
    return Split(tp=args.tp, pp=args.pp, ep=args.ep, dp=dp,
                 micro_batches=getattr(args, "micro_batches", None) or 1, link=link)


def add_serving_split(result: dict, args: argparse.Namespace, model: Model, chip: Chip,
                      engine: Serving) -> None:
    """Add the split the options name to the report's ``result`` (its figures under
    ``split``, its assumptions to the list)."""
    split = split_of(args, chip, args.dp, training=False)
    result["split"] = serving_split(model, chip, split, engine, args.context or LENGTHS,
                                    args.batch or BATCHES, result["batch_contexts"])
    result["assumptions"] += SPLIT_ASSUMPTIONS


def with_split_text(text: str, result: dict) -> str:
    """The report's text with the split's lines before its assumptions."""
    if "split" not in result:
        return text
    head, _, tail = text.partition("\nAssumptions\n")
    return "\n".join([head.rstrip("\n"), *serving_split_lines(result["split"]), "",
                      "Assumptions", tail])
