"""Reading a Hugging Face style ``config.json`` into a ``Model``, guessing nothing
silently.

Only the sizes are read: no weights, nothing from the internet. The file's
``model_type`` names its family, and a model is counted by one of two routes, which the
notes and the report name:

- the calculator's own layout of the family (``families/``), read the way
  ``transformers`` reads it: the family's own field names and aliases, the defaults of
  its config class for fields the file leaves out (shipped as data, ``catalog.py``), and
  the layout of its blocks; pure Python;
- for a decoder ``transformers`` builds that has no layout here, the model
  ``transformers`` builds on the meta device (``meta_route.py``), when it is installed.

A vision-language file is counted by its language model, from its ``text_config``.

Refused, with one line naming the field:

- a missing size, or a field with a value of the wrong kind or size;
- a field (or, for a field the file leaves out, a class default) that changes a count in
  some family but is not read by this one (a window, an expert count, a key-value head
  count, a bias, ...), since the count could not follow it;
- ``per_layer_config`` (layers that differ field by field), files that are encoders or
  encoder-decoders (``model_type``, ``architectures``), and a ``quantization_config``
  whose scheme or skipped modules the reader cannot follow (``quantization.py``: the
  schemes it reads give the weights' format);
- for a ``model_type`` neither the calculator nor ``transformers`` knows: anything
  beyond the plain Llama layout (two norms a layer, no biases, no position table, one
  dense feed-forward part) and a short list of fields that change no count. Such a file
  must say ``tie_word_embeddings``, and whether its feed-forward part is gated is taken
  from ``"gated_ffn": true|false`` or else from the activation's name; ``rms_norm_eps``
  means RMSNorm and ``layer_norm_eps`` LayerNorm.

``torch_dtype`` (or ``dtype``) must be float32 (4 bytes a number), float16 or bfloat16
(2), int8 or float8 (1); without it the model counts as float32, which is what
``transformers`` builds then (noted).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import published

from .catalog import TRANSFORMERS_VERSION, defaults, kind, nested_defaults
from ..anatomy.context import context_limit
from ..families import GENERIC, GPT2_NAMES, Family, Reader, family_for, short
from ..families.rules_layers import width_field
from ..anatomy.layout import Layout
from ..anatomy.model import Model
from .quantization import weight_format
from .refusals import (language_model, refuse_global, refuse_kind, refuse_per_layer,
                       refuse_unread)
from ..counting.stored import weight_bytes

__all__ = ["DTYPE_BYTES", "ROUTES", "model_from_config", "read_config",
           "example_configs", "example_config_path"]

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1,
               "float8_e4m3fn": 1, "float8_e5m2": 1}
"""Bytes a number takes for each ``torch_dtype`` the reader accepts."""

MAX_FILE_BYTES = 10 * 2**20
"""Largest config file read (published ones are a few kilobytes)."""

_GATED_ACTIVATIONS = {"swiglu", "geglu", "reglu", "silu", "swish"}
_PLAIN_ACTIVATIONS = {
    "gelu",
    "gelu_new",
    "gelu_fast",
    "gelu_pytorch_tanh",
    "relu",
    "quick_gelu",
}

def _bytes_per_number(cfg: dict, notes: list[str]) -> int:
    keys = [k for k in ("torch_dtype", "dtype") if cfg.get(k) is not None]
    if not keys:
        notes.append(
            "torch_dtype not given: using float32, 4 bytes a number (what "
            "transformers builds when "
            'the file does not say; add e.g. "torch_dtype": "bfloat16" for 2)'
        )
        return 4
    for k in keys:
        if not isinstance(cfg[k], str):
            raise ValueError(
                f"config field {k} must be a string such as \"bfloat16\", "
                f"got {short(cfg[k])}"
            )
    values = {cfg[k].removeprefix("torch.") for k in keys}
    if len(values) > 1:
        raise ValueError(
            f"config fields torch_dtype and dtype disagree: {sorted(values)}"
        )
    value = values.pop()
    if value not in DTYPE_BYTES:
        raise ValueError(
            f"config field torch_dtype={short(value)} is not one of "
            f"{sorted(DTYPE_BYTES)}"
        )
    return DTYPE_BYTES[value]


def _quantized(model: Model, cfg: dict, notes: list[str]) -> Model:
    """``model`` with its weights in the format its ``quantization_config`` names."""
    qc = cfg.get("quantization_config")
    if qc is None or qc == {}:
        return model
    fmt = weight_format(qc, model.bytes_per_number, model.layout)
    notes.append(f"quantization_config: {fmt.describe()}")
    quantized = dataclasses.replace(model, weights=fmt)
    try:
        weight_bytes(quantized)  # every packed matrix must fit the scheme's layout
    except ValueError as err:
        raise ValueError(f"config field quantization_config: {err}") from None
    return quantized


def _generic(cfg: dict, model_type: str | None, notes: list[str]) -> Family:
    """The plain Llama layout for an unknown ``model_type``, with the gate and the norm
    read from the file."""
    names = {key: tuple(dict.fromkeys(GPT2_NAMES[key][::-1])) for key in GPT2_NAMES}
    explicit = cfg.get("gated_ffn")
    if explicit is not None:
        if not isinstance(explicit, bool):
            raise ValueError(
                f"config field gated_ffn must be true or false, got {short(explicit)}"
            )
        gated = explicit
        notes.append(
            f"feed-forward: {'gated' if gated else 'plain'}, as gated_ffn says"
        )
    else:
        act_key = next(
            (
                k
                for k in ("hidden_act", "hidden_activation", "activation_function")
                if cfg.get(k) is not None
            ),
            None,
        )
        if act_key is None and model_type is None:
            raise ValueError(
                "config field model_type is missing: a Hugging Face config.json names "
                'its family there (such as "model_type": "llama"); a file without '
                "one is read as the plain Llama layout, and only if it gives "
                'hidden_act too (such as "silu": a gated feed-forward part)'
            )
        if act_key is None:
            raise ValueError(
                f"config field hidden_act is missing: model_type {model_type!r} is "
                f"not a family this calculator or transformers {TRANSFORMERS_VERSION} "
                "knows, so the file is read as the plain Llama layout, whose "
                'feed-forward part is gated or not by its activation ("silu": '
                'gated; "gelu": plain)'
            )
        act = cfg[act_key]
        name = act.lower() if isinstance(act, str) else None
        if name in _GATED_ACTIVATIONS:
            gated = True
        elif name in _PLAIN_ACTIVATIONS:
            gated = False
        else:
            raise ValueError(
                f"config field {act_key}={short(act)} does not say whether the "
                "feed-forward part is gated: for a model_type the calculator does not "
                f"know it reads {', '.join(sorted(_GATED_ACTIVATIONS))} as gated and "
                f"{', '.join(sorted(_PLAIN_ACTIVATIONS))} as plain"
            )
        notes.append(
            "feed-forward: "
            f"{'gated (three matrices)' if gated else 'plain (two matrices)'}, judged "
            f"from {act_key}={act!r} for an unknown model_type"
        )
    rms = cfg.get("rms_norm_eps") is not None
    layer = (
        cfg.get("layer_norm_eps") is not None
        or cfg.get("layer_norm_epsilon") is not None
    )
    if rms and layer:
        raise ValueError(
            "config fields rms_norm_eps and layer_norm_eps are both set: "
            "the normalisation must be one or the other"
        )
    if not (rms or layer):
        raise ValueError(
            "config field rms_norm_eps (RMSNorm) or layer_norm_eps "
            "(LayerNorm) is missing"
        )
    return dataclasses.replace(
        GENERIC,
        names=names,
        gated=gated,
        norm="layer" if layer else "rms",
        tied=None,
        ffn_width=width_field("intermediate_size", "n_inner"),
    )


def _layout_notes(layout: Layout, bpn: int, cfg: dict) -> list[str]:
    """Notes on what transformers keeps beyond the architecture, and on float32
    parts."""
    notes = []
    stored = layout.stored_cache_bytes(bpn, 1) - layout.state_bytes(bpn)
    if stored == 0 < layout.cache_bytes_per_token(bpn):
        notes.append(
            "transformers keeps no cache for this family (each new token runs the "
            "whole text again); a cache of its keys and values needs "
            f"{layout.cache_bytes_per_token(bpn):,} bytes a token, the figure used here"
        )
    elif stored != layout.cache_bytes_per_token(bpn):
        notes.append(
            f"transformers' own cache holds {stored:,} bytes a token (keys "
            "and values copied out to "
            "every query head); the architecture needs "
            f"{layout.cache_bytes_per_token(bpn):,}, "
            "which is the figure used here"
        )
    if layout.float32_parameters:
        what = "the normalisations" if layout.float32_norms else "the routers"
        if layout.float32_norms and any(b.float32_parameters for b in layout.blocks):
            what = "the routers and the normalisations"
        notes.append(
            f"{what} ({layout.float32_parameters:,} numbers) are held in float32, as "
            "transformers builds them"
        )
    mtp = cfg.get("num_nextn_predict_layers")
    if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0:
        notes.append(
            f"num_nextn_predict_layers={mtp}: the published weights also hold "
            f"{mtp} "
            "multi-token-prediction layer(s), which transformers does not "
            "build and this count leaves out"
        )
    return notes


ROUTES = ("auto", "layout", "transformers")
"""How a config may be counted: ``layout`` by the calculator's own layout of its family
(pure Python), ``transformers`` by building the model with ``transformers`` on the meta
device, ``auto`` the layout when the family has one and otherwise ``transformers`` when
it is installed."""


def model_from_config(
    cfg: dict, name: str = "model", route: str = "auto"
) -> tuple[Model, list[str]]:
    """The ``Model`` (its exact layout and number format) a config dictionary describes,
    and the notes saying which family and route it was read by and every default and
    rule used."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {', '.join(ROUTES)}, got {route!r}")
    if not isinstance(cfg, dict):
        raise ValueError(f"a config must be a JSON object, got {type(cfg).__name__}")
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ValueError(
            f"config field model_type must be a string, got {short(model_type)}"
        )
    refuse_global(cfg)
    refuse_kind(cfg)
    language = language_model(cfg)
    if language is not None:
        text, note = language
        model, notes = model_from_config(text, name, route)
        return model, [note, *notes]
    family = family_for(model_type)
    notes: list[str] = []
    if family is GENERIC and route != "layout" and kind(model_type or "") == "decoder":
        return _measured(cfg, name, route, model_type)
    if route == "transformers":
        return _measured(cfg, name, route, model_type)
    if family is GENERIC and kind(model_type or "") == "decoder":
        raise ValueError(
            f"model_type {model_type!r} is a decoder transformers builds, which this "
            "calculator has no layout for: without the layout route it is not counted"
        )
    model, notes = _from_layout(cfg, name, family, model_type)
    return _with_context(model, cfg), notes


def _measured(cfg, name, route, model_type) -> tuple[Model, list[str]]:
    """The model transformers builds from ``cfg`` on the meta device, or a refusal."""
    from . import meta_route

    if not meta_route.available():
        raise ValueError(
            f"model_type {model_type!r} has no layout in this calculator; with torch "
            f"and transformers {TRANSFORMERS_VERSION} installed it is counted from the "
            "model transformers builds on the meta device"
        )
    notes: list[str] = []
    bpn = _bytes_per_number(cfg, notes)
    model, measured = meta_route.measure(cfg, bpn, name)
    notes += measured
    why = "" if route == "transformers" else " (no layout of its own here)"
    notes.insert(
        0,
        f"route: transformers built {model.layout.family} on the meta device{why}: "
        "parameters and bytes counted from its tensors, the cache from two meta-device "
        "forward passes; the times take a pair's work from each layer's cached key and "
        "value channels",
    )
    return _with_context(model, cfg), notes


def _from_layout(cfg, name, family, model_type) -> tuple[Model, list[str]]:
    """The model of ``cfg`` by the calculator's own layout of its family."""
    refuse_per_layer(cfg)
    known = family is not GENERIC
    notes: list[str] = []
    if not known:
        family = _generic(cfg, model_type, notes)
        notes.insert(
            0,
            f"model_type {model_type!r} is not a family this calculator "
            f"knows: {family.summary}",
        )
    else:
        notes.append(
            f"read as {family.title} ({model_type}), as transformers builds "
            f"it: {family.summary}"
        )
    r = Reader(cfg, family.title, defaults(model_type) if known else {},
               nested_defaults(model_type) if known else {})
    layout = family.build(r)
    bpn = _bytes_per_number(cfg, notes)
    model = Model(layout=layout, bytes_per_number=bpn, name=name)
    model = _quantized(model, cfg, notes)
    s = model.summary()
    used = {
        "num_key_value_heads": s["kv_heads"],
        "num_kv_heads": s["kv_heads"],
        "head_dim": s["head_dim"],
        "num_attention_heads": s["heads"],
        "n_head": s["heads"],
        "intermediate_size": s["ffn_width"],
        "n_inner": s["ffn_width"],
        "ffn_dim": s["ffn_width"],
        "ffn_hidden_size": s["ffn_width"],
        "gated_ffn": s["gated_ffn"],
        "hidden_size": s["width"],
        "n_embd": s["width"],
        "n_embed": s["width"],
        "num_hidden_layers": s["layers"],
        "n_layer": s["layers"],
    }
    refuse_unread(cfg, r, family, used, known)
    return model, notes + r.notes + _layout_notes(layout, bpn, cfg)


def _with_context(model: Model, cfg: dict) -> Model:
    """``model`` with the context limit its file states."""
    limit = context_limit(cfg, defaults(cfg.get("model_type") or ""))
    return dataclasses.replace(model, context=limit)


def read_config(path: str | Path, route: str = "auto") -> tuple[Model, list[str]]:
    """The model a ``config.json`` file describes (named after the file), and its
    notes."""
    path = Path(path)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"the folder {str(path)!r} holds no config.json")
        path = path / "config.json"
    if not path.is_file():
        raise ValueError(f"no file {str(path)!r}")
    with path.open("rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(
            f"{path.name} is larger than {MAX_FILE_BYTES // 2**20} MiB: "
            "not a config.json"
        )
    try:
        cfg = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not UTF-8 text") from None
    except ValueError as err:  # malformed JSON, or a number too long to read
        raise ValueError(f"{path.name} is not valid JSON: {err}") from None
    except RecursionError:
        raise ValueError(
            f"{path.name} is nested too deeply to be a config.json"
        ) from None
    stem = (
        path.parent.name
        if path.name == "config.json" and path.parent.name
        else path.stem
    )
    return model_from_config(cfg, name=stem, route=route)


def example_configs() -> list[Path]:
    """The config files shipped with the library, in name order: every published
    model's (``published``) and the book's own made-up examples (``configs/``)."""
    made_up = (Path(__file__).parents[1] / "configs").glob("*.json")
    shipped = [published.model_config_path(n) for n in published.model_names()]
    return sorted([*shipped, *made_up], key=lambda p: p.stem)


def example_config_path(name: str) -> Path:
    """The shipped example config called ``name`` (with or without ``.json``)."""
    stem = name.removesuffix(".json")
    for path in example_configs():
        if path.stem == stem:
            return path
    known = ", ".join(p.stem for p in example_configs())
    raise ValueError(
        f"no shipped config called {name!r}; the shipped ones are: {known}"
    )
