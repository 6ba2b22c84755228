"""Which model types the calculator counts, and by which route.

``families()`` lists every model type ``transformers`` builds as a causal language model
(and the wrappers whose language model it builds), each with the route the calculator
takes for it: its own layout (pure Python, part by part), the model ``transformers``
builds on the meta device (when ``torch`` and ``transformers`` are installed), or a
refusal and why. ``python -m transformer_calculator families`` prints it.
"""

from __future__ import annotations

from .catalog import KINDS, TRANSFORMERS_VERSION, decoders, entry, model_types
from ..families import FAMILIES, REFUSED_TYPES

__all__ = ["families", "families_text"]

_LAYOUTS = {t: f.title for f in FAMILIES for t in f.model_types}


def _row(model_type: str, meta: bool) -> dict:
    found = entry(model_type) or {"kind": "other"}
    kind = found["kind"]
    row = {"model_type": model_type, "kind": kind}
    if model_type in REFUSED_TYPES:
        return {**row, "route": "refused", "why": REFUSED_TYPES[model_type]}
    if kind == "decoder" and model_type in _LAYOUTS:
        return {**row, "route": "layout", "family": _LAYOUTS[model_type]}
    if kind == "decoder":
        if meta:
            return {**row, "route": "transformers"}
        return {**row, "route": "refused", "why": (
            f"no layout here; needs torch and transformers {TRANSFORMERS_VERSION}")}
    text = found.get("text")
    if kind == "multimodal" and text in decoders():
        inner = _row(text, meta)
        return {**row, "route": inner["route"], "language_model": text,
                **{k: v for k, v in inner.items() if k in ("family", "why")}}
    return {**row, "route": "refused", "why": KINDS[kind]}


def families(meta: bool) -> list[dict]:
    """Every model type transformers builds as a causal language model, and wrappers of
    one, with the calculator's route; ``meta``: whether the transformers route is
    available here."""
    listed = [
        t for t in model_types()
        if entry(t).get("causal_lm")
        or (entry(t)["kind"] == "multimodal" and entry(t).get("text"))
    ]
    return [_row(t, meta) for t in listed]


def families_text(rows: list[dict]) -> str:
    """The rows of ``families`` as a plain table, with the counts by route."""
    lines = []
    for row in rows:
        if row["route"] == "layout":
            how = f"layout: {row['family']}"
        elif row["route"] == "transformers":
            how = "transformers, built on the meta device"
        else:
            how = f"refused: {row['why']}"
        if "language_model" in row:
            how += f" (its language model, {row['language_model']})"
        lines.append(f"{row['model_type']:<28} {row['kind']:<16} {how}")
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["route"]] = counts.get(row["route"], 0) + 1
    total = ", ".join(f"{n} {route}" for route, n in sorted(counts.items()))
    version = f"transformers {TRANSFORMERS_VERSION}"
    lines.append(f"{len(rows)} model types ({version}): {total}")
    return "\n".join(lines)
