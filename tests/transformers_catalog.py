"""The calculator's catalogue of model types, made from ``transformers`` itself.

    .venv/bin/python tests/transformers_catalog.py          # rewrite the shipped file

``catalogue()`` reads every config class ``transformers`` registers: what kind of model
each ``model_type`` is (a decoder it builds as a causal language model, an encoder, an
encoder-decoder, a wrapper around a vision or audio tower, or something else), the causal
language model class, the type of a wrapper's ``text_config``, the attribute aliases, and,
for every decoder, the defaults of its config class (the value a field takes when a file
leaves it out). ``tests/test_catalog.py`` regenerates it and fails when the shipped copy
(``lib/transformer_calculator/data/transformers_types.json``) has drifted.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

SHIPPED = (Path(__file__).resolve().parents[1] / "lib" / "transformer_calculator" / "data"
           / "transformers_types.json")

ENCODERS = {
    "bert", "bert-generation", "big_bird", "camembert", "data2vec-text", "electra", "ernie",
    "megatron-bert", "rembert", "roberta", "roberta-prelayernorm", "roc_bert", "roformer",
    "xlm-roberta", "xlm-roberta-xl", "xmod", "xlm", "xlnet",
}
"""Causal-LM classes of encoders (a bidirectional model, or XLM and XLNet's masked and
permuted objectives): their causal head is a decoder made out of an encoder's blocks."""

DECODER_HALVES = {"trocr", "musicgen", "musicgen_melody"}
"""Causal-LM classes that are the decoder of an encoder-decoder although their config does
not say ``is_encoder_decoder`` (TrOCR decodes a vision encoder's output, MusicGen's decoder
a text encoder's)."""

TOWER_KEYS = ("vision_config", "audio_config", "vq_config", "audio_encoder_config",
              "vision_tower_config", "speech_config")
"""Sub-configs that describe a vision or audio tower."""

MULTIMODAL_DECODERS = {"fuyu", "git", "phi4_multimodal", "moshi", "blt"}
"""Causal-LM classes that need more than text to run as published: Fuyu and GIT embed
images, Phi-4-multimodal carries vision and audio adapters, Moshi an audio codec and a
depth decoder, BLT a byte patcher and local encoder."""


def _jsonable(value):
    """``value`` as JSON holds it (tuples become lists), or a ValueError."""
    return json.loads(json.dumps(value, allow_nan=False))


def defaults(cls) -> dict:
    """The value each field of config class ``cls`` takes when a file leaves it out."""
    out = {}
    for f in dataclasses.fields(cls):
        if f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            continue
        try:
            out[f.name] = _jsonable(value)
        except (TypeError, ValueError):
            continue  # a sub-config object: its own type's defaults apply
    return out


def _text_type(cls) -> str | None:
    """The model type of a config class's ``text_config`` (its default), or None."""
    subs = getattr(cls, "sub_configs", {}) or {}
    if "text_config" not in subs:
        return None
    sub = subs["text_config"]
    text = getattr(sub, "model_type", "")
    if isinstance(text, str) and text:
        return text
    try:
        return cls().text_config.model_type
    except Exception:  # noqa: BLE001 - a default that does not build names no type
        return None


def _kind(model_type: str, cls) -> str:
    subs = set(getattr(cls, "sub_configs", {}) or {})
    field_defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    if model_type in ENCODERS:
        return "encoder"
    if field_defaults.get("is_encoder_decoder") is True or model_type in DECODER_HALVES:
        return "encoder-decoder"
    if subs & set(TOWER_KEYS) or model_type in MULTIMODAL_DECODERS:
        return "multimodal"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "decoder"
    if "text_config" in subs:
        return "multimodal"
    return "other"


def catalogue() -> dict:
    """Every model type transformers registers: kind, causal-LM class, text type,
    aliases, and a decoder's config-class defaults."""
    types = {}
    for model_type in sorted(CONFIG_MAPPING_NAMES):
        cls = transformers.CONFIG_MAPPING[model_type]
        kind = _kind(model_type, cls)
        entry = {"kind": kind, "causal_lm": MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(model_type)}
        text = _text_type(cls)
        if text:
            entry["text"] = text
        if kind == "decoder":
            entry["aliases"] = dict(sorted(getattr(cls, "attribute_map", {}).items()))
            entry["defaults"] = defaults(cls)
            nested = {key: defaults(sub)
                      for key, sub in (getattr(cls, "sub_configs", {}) or {}).items()
                      if key != "text_config" and dataclasses.is_dataclass(sub)}
            if nested:
                entry["nested_defaults"] = nested
        types[model_type] = entry
    return {"transformers": transformers.__version__, "types": types}


def text(cat: dict) -> str:
    """The catalogue as the shipped file holds it."""
    return json.dumps(cat, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    transformers.logging.set_verbosity_error()
    SHIPPED.parent.mkdir(exist_ok=True)
    SHIPPED.write_text(text(catalogue()))
    print(f"wrote {SHIPPED}", file=sys.stderr)
