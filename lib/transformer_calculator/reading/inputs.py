"""A model as a command names it: read by path or shipped name, with the formats its
flags name, each checked against the layout; and the one-line error a bad command line
gets (``UsageError``, exit code 2)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..anatomy.formats import CACHE_FORMATS, UNPACKED, WEIGHT_FORMATS, ExpertsApart
from ..anatomy.model import Model
from ..counting.costs import cache_bytes_per_token, weight_bytes
from .config import example_config_path, read_config

__all__ = ["UsageError", "WEIGHT_CHOICES", "load_model", "apply_formats"]


class UsageError(Exception):
    """A bad command line: reported in one line with exit code 2."""


WEIGHT_CHOICES = {"bf16": None, "fp16": None, **WEIGHT_FORMATS}
"""What ``--weights`` takes: a 16-bit cast, or a packed format."""


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
