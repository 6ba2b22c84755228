"""How each model family's ``config.json`` describes its layers, read the way
``transformers`` reads it.

- ``reader``: a config read field by field, every default used written down as a note;
- ``parts`` and ``rules``: the pieces a family description is made of, each rule naming
  the ``transformers`` code it follows;
- ``family``: one family's description, and how it builds a ``Layout`` from a config;
- ``table``: the families themselves, as data.
"""

from __future__ import annotations

from .family import GPT2_NAMES, LLAMA_NAMES, Family
from .reader import MAX_LAYERS, MAX_SIZE, Reader, short
from .table import FAMILIES, GENERIC, REFUSED_TYPES, STRUCTURE_FIELDS

__all__ = [
    "Family",
    "Reader",
    "FAMILIES",
    "GENERIC",
    "REFUSED_TYPES",
    "STRUCTURE_FIELDS",
    "LLAMA_NAMES",
    "GPT2_NAMES",
    "MAX_LAYERS",
    "MAX_SIZE",
    "short",
    "family_for",
]

_BY_TYPE = {t: f for f in FAMILIES for t in f.model_types}


def family_for(model_type: str | None) -> Family:
    """The family of ``model_type``, ``GENERIC`` if unknown, or a ValueError if it is
    refused."""
    if model_type in REFUSED_TYPES:
        raise ValueError(f"model_type {model_type!r} {REFUSED_TYPES[model_type]}")
    return _BY_TYPE.get(model_type, GENERIC)
