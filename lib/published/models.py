"""The published models' ``config.json`` files, as their makers published them (sizes
only: no weights), each named after its model; ``models/SOURCES.json`` names the
repository each came from."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

__all__ = ["MODEL_DIR", "model_names", "model_config_path", "model_config",
           "model_hub_id"]

MODEL_DIR = Path(__file__).parent / "models"
"""The folder of published configs."""


@lru_cache(maxsize=1)
def _sources() -> dict[str, dict[str, str]]:
    return json.loads((MODEL_DIR / "SOURCES.json").read_text(encoding="utf-8"))[
        "models"
    ]


def model_names() -> tuple[str, ...]:
    """The names of the published configs, in name order."""
    return tuple(sorted(_sources()))


def model_config_path(name: str) -> Path:
    """The published config file of the model called ``name`` (``.json`` optional)."""
    stem = name.removesuffix(".json") if isinstance(name, str) else None
    if stem not in _sources():
        known = ", ".join(model_names())
        raise ValueError(
            f"no published config called {name!r}; the shipped ones are: {known}"
        )
    return MODEL_DIR / f"{stem}.json"


def model_config(name: str) -> dict:
    """The published ``config.json`` of the model called ``name``, as a dictionary."""
    return json.loads(model_config_path(name).read_text(encoding="utf-8"))


def model_hub_id(name: str) -> str:
    """The Hugging Face repository the config of ``name`` was published in."""
    model_config_path(name)
    return _sources()[name.removesuffix(".json")]["hub"]
