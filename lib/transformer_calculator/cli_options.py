"""What the calculator's commands share: the chip and format options, a model read by
path or shipped name with the formats the flags name, the chip the options name, and the
one-line error a bad command line gets (``UsageError``, exit code 2).

Apart from ``cli`` so that ``train``, ``check`` and the page's form take these by
import, not as functions handed to them."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from .chips import derated, parse_accelerator
from .cli_values import ChipName, choice, fraction, typed
from .config import example_config_path, read_config
from .costs import cache_bytes_per_token, weight_bytes
from .formats import CACHE_FORMATS, UNPACKED, WEIGHT_FORMATS, ExpertsApart
from .model import Model

__all__ = ["UsageError", "WEIGHT_CHOICES", "add_chip_options", "add_format_options",
           "load_model", "apply_formats", "chip_of"]


class UsageError(Exception):
    """A bad command line: reported in one line with exit code 2."""


WEIGHT_CHOICES = {"bf16": None, "fp16": None, **WEIGHT_FORMATS}
"""What ``--weights`` takes: a 16-bit cast, or a packed format."""


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


def load_model(text: str, route: str = "auto") -> tuple[Model, list[str]]:
    """The model a path or a shipped name describes, and its notes."""
    path = Path(text)
    if not path.exists():
        try:
            path = example_config_path(text)  # a shipped example by name
        except ValueError as err:
            raise ValueError(f"no file {text!r}, and {err}") from None
    return read_config(path, route=route)


def apply_formats(
    model: Model,
    notes: list[str],
    weights: str | None,
    cache: str | None,
    experts: str | None = None,
) -> Model:
    """``model`` with the formats the flags name, each checked against its layout
    (``experts``: the routed experts' own format, the rest as ``weights`` says)."""
    if weights in ("bf16", "fp16"):
        model = dataclasses.replace(model, bytes_per_number=2, weights=UNPACKED)
        notes.append(f"--weights {weights}: every number cast to 2 bytes")
    elif weights is not None:
        model = dataclasses.replace(model, weights=WEIGHT_FORMATS[weights])
        notes.append(f"--weights {weights}: {WEIGHT_FORMATS[weights].scheme}")
    if experts is not None:
        if not model.layout.has_experts:
            raise UsageError("argument --expert-weights: this model has no experts")
        own = UNPACKED if experts in ("bf16", "fp16") else WEIGHT_FORMATS[experts]
        if own is UNPACKED and model.bytes_per_number != 2:
            raise UsageError("argument --expert-weights: 16-bit experts in a model of "
                             f"{model.bytes_per_number}-byte numbers (give --weights)")
        model = dataclasses.replace(model, weights=ExpertsApart(own, model.weights))
        scheme = "16-bit" if own is UNPACKED else WEIGHT_FORMATS[experts].scheme
        notes.append(f"--expert-weights {experts}: the routed experts in {scheme}")
    if cache is not None:
        model = dataclasses.replace(model, cache=CACHE_FORMATS[cache])
    for flag, value, check in (
        ("--weights", weights, weight_bytes),
        ("--expert-weights", experts, weight_bytes),
        ("--kv-dtype", cache, cache_bytes_per_token),
    ):
        if value is not None:
            try:
                check(model)
            except ValueError as err:
                raise UsageError(
                    f"argument {flag}: {value} cannot hold this model: {err}"
                ) from None
    return model


def chip_of(args: argparse.Namespace):
    """The chip the options name, at the efficiencies they give."""
    acc = args.chip or args.accelerator or parse_accelerator("example")
    return derated(acc, args.flops_efficiency, args.memory_efficiency)
