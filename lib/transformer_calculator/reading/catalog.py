"""What ``transformers`` knows about each ``model_type``, shipped as data.

``data/transformers_types.json`` is made from ``transformers`` itself
(``tests/transformers_catalog.py``; ``tests/test_catalog.py`` regenerates it and fails
when it has drifted). For every model type ``transformers`` registers it says what kind
of model it is, and for every decoder the defaults of its config class: the value a
field takes when a file leaves it out, which is how ``from_pretrained`` reads a file.
Pure Python: reading it needs neither ``torch`` nor ``transformers``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "KINDS",
    "TRANSFORMERS_VERSION",
    "entry",
    "kind",
    "defaults",
    "nested_defaults",
    "decoders",
    "model_types",
]

_FILE = Path(__file__).parents[1] / "data" / "transformers_types.json"

KINDS = {
    "decoder": "a decoder transformers builds as a causal language model",
    "encoder": (
        "an encoder (every position sees the whole text), not a decoder that writes "
        "tokens; its causal head is an encoder's blocks used as a decoder"
    ),
    "encoder-decoder": (
        "an encoder-decoder (or its decoder half, which reads an encoder's output "
        "through cross-attention); this calculator covers decoder-only models"
    ),
    "multimodal": "a model with a vision or audio tower beside its language model",
    "other": "not a model transformers builds as a causal language model",
}
"""What each kind of model type is, in words."""


@lru_cache(maxsize=1)
def _catalogue() -> dict[str, Any]:
    return json.loads(_FILE.read_text())


TRANSFORMERS_VERSION: str = _catalogue()["transformers"]
"""The version of ``transformers`` the catalogue was made from."""


def entry(model_type: str) -> dict[str, Any] | None:
    """The catalogue's entry for ``model_type``, or None if transformers does not know
    it."""
    return _catalogue()["types"].get(model_type)


def kind(model_type: str) -> str | None:
    """``decoder``, ``encoder``, ``encoder-decoder``, ``multimodal`` or ``other``; None
    for a model type transformers does not know."""
    found = entry(model_type)
    return found["kind"] if found else None


def defaults(model_type: str) -> dict[str, Any]:
    """The defaults of a decoder's config class, field by field (empty if none are
    shipped)."""
    found = entry(model_type)
    return dict(found.get("defaults", {})) if found else {}


def nested_defaults(model_type: str) -> dict[str, dict[str, Any]]:
    """The defaults of each nested config a decoder's config holds (DBRX's
    ``attn_config`` and ``ffn_config``), field by field."""
    found = entry(model_type)
    nested = found.get("nested_defaults", {}) if found else {}
    return {k: dict(v) for k, v in nested.items()}


def decoders() -> list[str]:
    """Every model type transformers builds as a decoder-only causal language model."""
    return sorted(t for t, e in _catalogue()["types"].items() if e["kind"] == "decoder")


def model_types() -> list[str]:
    """Every model type transformers registers, in name order."""
    return sorted(_catalogue()["types"])
