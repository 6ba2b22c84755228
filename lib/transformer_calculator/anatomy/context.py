"""The longest text a model was built for, as its config states it.

A model learns positions up to ``max_position_embeddings`` (GPT-2's ``n_positions``);
a rotary model whose config scales its rotary angles (``rope_scaling`` or
``rope_parameters`` with a ``factor``: linear, dynamic, YaRN, Llama-3's) was stretched
to ``factor`` times its original length, which some files state as
``original_max_position_embeddings``. The report shows this limit and marks every length
past it: the arithmetic still holds there, but the model was not trained for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ContextLimit", "LIMIT_FIELDS", "context_limit"]

LIMIT_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length",
                "seq_length", "n_ctx")
"""Fields that state the longest sequence a model was built for, first found wins."""

_STRETCHED = {"linear", "dynamic", "yarn", "llama3"}
"""Rotary scalings that stretch the trained length by ``factor``."""


@dataclass(frozen=True)
class ContextLimit:
    """``tokens``: the longest sequence the model was built for; ``source``: the fields
    it comes from, in words."""

    tokens: int
    source: str


def _whole(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok else None


def _scaling(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in ("rope_scaling", "rope_parameters"):
        value = cfg.get(key)
        if isinstance(value, Mapping):
            return value
    return {}


def context_limit(
    cfg: Mapping[str, Any], defaults: Mapping[str, Any]
) -> ContextLimit | None:
    """The model's context limit from the file (or its config class's defaults), with
    rotary scaling; None when neither states one."""
    name = next((f for f in LIMIT_FIELDS if _whole(cfg.get(f))), None)
    given = name is not None
    if name is None:
        name = next((f for f in LIMIT_FIELDS if _whole(defaults.get(f))), None)
        if name is None:
            return None
    tokens = cfg[name] if given else defaults[name]
    source = f"{name} = {tokens:,}" + ("" if given else " (the class default)")
    scaling = _scaling(cfg)
    kind = scaling.get("rope_type", scaling.get("type"))
    factor = scaling.get("factor")
    if kind in _STRETCHED and isinstance(factor, (int, float)) and factor > 1:
        original = _whole(scaling.get("original_max_position_embeddings")) or tokens
        stretched = int(original * factor)
        if stretched > tokens:
            source += (
                f", stretched by {kind} rotary scaling: {original:,} x {factor:g} "
                f"= {stretched:,}"
            )
            tokens = stretched
    return ContextLimit(tokens=tokens, source=source)
