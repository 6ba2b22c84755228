"""What the calculator's commands share: the chip and format options, a model read by
path or shipped name with the formats the flags name, the chip the options name, and the
one-line error a bad command line gets (``UsageError``, exit code 2).

Apart from ``cli`` so that ``train``, ``check`` and the page's form take these by
import, not as functions handed to them."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from ..anatomy.formats import CACHE_FORMATS
from ..counting.chips import derated, parse_accelerator
from ..reading.inputs import WEIGHT_CHOICES, UsageError, apply_formats, load_model
from .cli_values import ChipName, choice, fraction, typed

__all__ = ["UsageError", "WEIGHT_CHOICES", "add_chip_options", "add_format_options",
           "load_model", "apply_formats", "chip_of"]


def add_chip_options(p: argparse.ArgumentParser) -> None:
    """The options that say which chip, and how near its peak a program runs."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--accelerator",
        default=None,
        type=typed(parse_accelerator),
        metavar="example|FLOPS,BYTES_PER_S,MEMORY_GIB",
        help="'example' (the book's example accelerator, the default) or three "
        "numbers: operations a second, bytes read a second, memory in GiB",
    )
    where.add_argument(
        "--chip",
        action=ChipName,
        metavar="NAME",
        help="a real chip from the shipped table (see the 'chips' command); a short "
        "name that fits several (h100) takes the first and says so",
    )
    p.add_argument(
        "--flops-efficiency",
        type=typed(fraction),
        default=1.0,
        metavar="F",
        help="fraction of peak arithmetic reached (0 to 1; default 1, the floor)",
    )
    p.add_argument(
        "--hbm-memory-efficiency",
        "--memory-efficiency",
        dest="memory_efficiency",
        type=typed(fraction),
        default=1.0,
        metavar="F",
        help="fraction of peak memory bandwidth reached (0 to 1; default 1)",
    )


def add_format_options(p: argparse.ArgumentParser) -> None:
    """``--weights`` and, for serving, ``--kv-dtype``."""
    p.add_argument(
        "--weights",
        type=typed(choice(WEIGHT_CHOICES)),
        metavar="|".join(WEIGHT_CHOICES),
        help="store the weights so: a 16-bit cast, or a packed format (embeddings, "
        "head, norms and routers stay in the model's format)",
    )


def chip_of(args: argparse.Namespace):
    """The chip the options name, at the efficiencies they give."""
    acc = args.chip or args.accelerator or parse_accelerator("example")
    return derated(acc, args.flops_efficiency, args.memory_efficiency)
