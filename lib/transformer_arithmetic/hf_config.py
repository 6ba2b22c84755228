"""Reading a Hugging Face style ``config.json`` into a ``ModelShape``, guessing nothing silently.

Only the sizes are read: no weights, nothing from the internet. Each field the
arithmetic needs is read by name; a missing or inconsistent field raises a
ValueError that names it. Where a documented default is used (for example
``num_key_value_heads`` absent means plain multi-head attention), a sentence saying
so is added to the list of notes returned beside the shape, and the report prints it.

The rules:

- ``num_hidden_layers``, ``num_attention_heads``, ``hidden_size``, ``intermediate_size``,
  ``vocab_size`` are required (GPT-2's ``n_layer``, ``n_head``, ``n_embd``, ``n_inner``
  are accepted as the same fields; GPT-2's ``n_inner: null`` means four times the width).
- ``num_key_value_heads`` defaults to the number of heads; it must divide them.
- ``head_dim`` is used when present; otherwise ``hidden_size // num_attention_heads``,
  which must divide exactly.
- ``tie_word_embeddings`` defaults to true (the Hugging Face default).
- ``torch_dtype`` (or ``dtype``): float32 is 4 bytes a number, float16 and bfloat16 are 2;
  anything else, or nothing, is an error.
- Feed-forward layout: an explicit ``"gated_ffn": true/false`` wins. Otherwise a
  ``model_type`` in ``GATED_MODEL_TYPES`` (LLaMA, Mistral, Qwen, Gemma, ...) means three
  matrices (gate, up, down) and one in ``PLAIN_MODEL_TYPES`` (GPT-2, GPT-NeoX, ...) means
  two. For any other ``model_type`` the activation decides: a GLU name (``swiglu``,
  ``geglu``, ``reglu``) or ``silu``/``swish`` means gated, a ``gelu``/``relu`` family name
  means plain; anything else is an error asking for ``gated_ffn``.
- Mixtures of experts (``num_local_experts`` and the like above one) are refused, and a
  ``sliding_window`` is noted as ignored (the cache is counted for every token).
- Normalisation: ``rms_norm_eps`` means RMSNorm (a scale only); ``layer_norm_eps`` (or
  GPT-2's ``layer_norm_epsilon``) means LayerNorm (a scale and a bias). Both or neither
  is an error.
"""
from __future__ import annotations

import json
from pathlib import Path

from .shapes import ModelShape

__all__ = [
    "GATED_MODEL_TYPES", "PLAIN_MODEL_TYPES", "DTYPE_BYTES", "shape_from_config",
    "read_config", "example_configs", "example_config_path",
]

GATED_MODEL_TYPES = frozenset({
    "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text",
    "phi3", "olmo", "olmo2", "granite", "cohere", "internlm2", "yi",
})
"""Model types whose feed-forward part is gated: three matrices (gate, up, down)."""

PLAIN_MODEL_TYPES = frozenset({
    "gpt2", "gpt_neox", "gptj", "gpt_bigcode", "opt", "bloom", "falcon", "phi", "starcoder2",
})
"""Model types whose feed-forward part is plain: two matrices with one activation between."""

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
"""Bytes a number takes for each ``torch_dtype`` the reader accepts."""

_GATED_ACTIVATIONS = {"swiglu", "geglu", "reglu", "silu", "swish"}
_PLAIN_ACTIVATIONS = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "relu", "quick_gelu"}

# GPT-2 style names that mean the same as the usual fields.
_ALIASES = {
    "num_hidden_layers": "n_layer",
    "num_attention_heads": "n_head",
    "hidden_size": "n_embd",
    "intermediate_size": "n_inner",
    "hidden_act": "activation_function",
    "layer_norm_eps": "layer_norm_epsilon",
}
_MISSING = object()
_EXPERT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


def _field(cfg: dict, key: str):
    """The value of ``key`` (or its GPT-2 alias); _MISSING if neither is present or both are null."""
    values = [cfg[k] for k in (key, _ALIASES.get(key)) if k is not None and k in cfg]
    present = [v for v in values if v is not None]
    if len(present) == 2 and present[0] != present[1]:
        raise ValueError(f"{key}={present[0]!r} and {_ALIASES[key]}={present[1]!r} disagree")
    return present[0] if present else _MISSING


def _whole(cfg: dict, key: str) -> int:
    value = _field(cfg, key)
    if value is _MISSING:
        raise ValueError(f"config field {key} is missing")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"config field {key} must be a whole number >= 1, got {value!r}")
    return value


def _flag(cfg: dict, key: str, default: bool, notes: list[str], why: str) -> bool:
    value = cfg.get(key, _MISSING)
    if value is _MISSING or value is None:
        notes.append(f"{key} not given: using {str(default).lower()} ({why})")
        return default
    if not isinstance(value, bool):
        raise ValueError(f"config field {key} must be true or false, got {value!r}")
    return value


def _gated(cfg: dict, notes: list[str]) -> bool:
    explicit = cfg.get("gated_ffn", _MISSING)
    if explicit is not _MISSING:
        if not isinstance(explicit, bool):
            raise ValueError(f"config field gated_ffn must be true or false, got {explicit!r}")
        notes.append(f"feed-forward: {'gated' if explicit else 'plain'}, as gated_ffn says")
        return explicit
    model_type = cfg.get("model_type")
    if model_type in GATED_MODEL_TYPES:
        notes.append(f"feed-forward: gated (three matrices), because model_type {model_type!r} is a gated layout")
        return True
    if model_type in PLAIN_MODEL_TYPES:
        notes.append(f"feed-forward: plain (two matrices), because model_type {model_type!r} is a plain layout")
        return False
    act_key = "hidden_activation" if cfg.get("hidden_activation") is not None else "hidden_act"
    act = _field(cfg, act_key) if act_key == "hidden_act" else cfg["hidden_activation"]
    if act is _MISSING:
        raise ValueError(
            f"config field hidden_act is missing and model_type {model_type!r} is not a known layout: "
            'add "gated_ffn": true or false')
    name = str(act).lower()
    if name in _GATED_ACTIVATIONS:
        notes.append(f"feed-forward: gated (three matrices), judged from {act_key}={act!r} "
                     'for an unknown model_type; set "gated_ffn" to override')
        return True
    if name in _PLAIN_ACTIVATIONS:
        notes.append(f"feed-forward: plain (two matrices), judged from {act_key}={act!r} "
                     'for an unknown model_type; set "gated_ffn" to override')
        return False
    raise ValueError(f"config field {act_key}={act!r} does not say whether the feed-forward part is "
                     'gated: add "gated_ffn": true or false')


def _norm_bias(cfg: dict) -> bool:
    rms = cfg.get("rms_norm_eps") is not None
    layer = _field(cfg, "layer_norm_eps") is not _MISSING
    if rms and layer:
        raise ValueError("config fields rms_norm_eps and layer_norm_eps are both set: "
                         "the normalisation must be one or the other")
    if not (rms or layer):
        raise ValueError("config field rms_norm_eps (RMSNorm) or layer_norm_eps (LayerNorm) is missing")
    return layer


def _bytes_per_number(cfg: dict) -> int:
    keys = [k for k in ("torch_dtype", "dtype") if cfg.get(k) is not None]
    if not keys:
        raise ValueError('config field torch_dtype is missing: add e.g. "torch_dtype": "bfloat16" '
                         "to say how many bytes each number takes")
    values = {str(cfg[k]).removeprefix("torch.") for k in keys}
    if len(values) > 1:
        raise ValueError(f"config fields torch_dtype and dtype disagree: {sorted(values)}")
    value = values.pop()
    if value not in DTYPE_BYTES:
        raise ValueError(f"config field torch_dtype={value!r} is not one of {sorted(DTYPE_BYTES)}")
    return DTYPE_BYTES[value]


def shape_from_config(cfg: dict, name: str = "model") -> tuple[ModelShape, list[str]]:
    """A ``ModelShape`` from a config dictionary, and the notes saying every default and rule used."""
    if not isinstance(cfg, dict):
        raise ValueError(f"a config must be a JSON object, got {type(cfg).__name__}")
    notes: list[str] = []
    for key in _EXPERT_FIELDS:
        if isinstance(cfg.get(key), int) and not isinstance(cfg[key], bool) and cfg[key] > 1:
            raise ValueError(f"config field {key}={cfg[key]} describes a mixture of experts, which this "
                             "arithmetic does not cover (it counts one dense feed-forward part per layer)")
    layers = _whole(cfg, "num_hidden_layers")
    heads = _whole(cfg, "num_attention_heads")
    width = _whole(cfg, "hidden_size")
    vocab = _whole(cfg, "vocab_size")
    if cfg.get("num_key_value_heads") is None:
        kv_heads = heads
        notes.append(f"num_key_value_heads not given: using num_attention_heads ({heads}), "
                     "plain multi-head attention")
    else:
        kv_heads = _whole(cfg, "num_key_value_heads")
        if kv_heads > heads or heads % kv_heads:
            raise ValueError(f"config field num_key_value_heads={kv_heads} does not divide "
                             f"num_attention_heads={heads}")
    if cfg.get("head_dim") is not None:
        head_dim = _whole(cfg, "head_dim")
    else:
        if width % heads:
            raise ValueError(f"config field head_dim is missing and hidden_size={width} is not a "
                             f"multiple of num_attention_heads={heads}")
        head_dim = width // heads
        notes.append(f"head_dim not given: using hidden_size / num_attention_heads = {head_dim}")
    if _field(cfg, "intermediate_size") is _MISSING and cfg.get("model_type") == "gpt2" and "n_inner" in cfg:
        ffn_width = 4 * width
        notes.append(f"n_inner is null: using four times hidden_size = {ffn_width:,} (the GPT-2 rule)")
    else:
        ffn_width = _whole(cfg, "intermediate_size")
    tied = _flag(cfg, "tie_word_embeddings", True, notes, "the Hugging Face default: the output head "
                 "shares the embedding matrix")
    gated = _gated(cfg, notes)
    norm_bias = _norm_bias(cfg)
    shape = ModelShape(
        layers=layers, heads=heads, head_dim=head_dim, ffn_width=ffn_width, vocab=vocab,
        kv_heads=kv_heads, width=width, bytes_per_number=_bytes_per_number(cfg),
        gated_ffn=gated, tied_embeddings=tied, norm_bias=norm_bias, name=name,
    )
    if cfg.get("sliding_window") is not None:
        notes.append(f"sliding_window={cfg['sliding_window']!r} is ignored: the cache is counted for "
                     "every token of the conversation")
    notes.append("not counted: biases inside the attention and feed-forward matrices, learned "
                 "position tables, and anything outside a decoder-only stack")
    return shape, notes


def read_config(path: str | Path) -> tuple[ModelShape, list[str]]:
    """The shape described by a ``config.json`` file (named after the file), and its notes."""
    path = Path(path)
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path.name} is not valid JSON: {err}") from None
    return shape_from_config(cfg, name=path.stem)


def example_configs() -> list[Path]:
    """The example config files shipped with the library, in name order."""
    return sorted((Path(__file__).parent / "configs").glob("*.json"))


def example_config_path(name: str) -> Path:
    """The shipped example config called ``name`` (with or without ``.json``)."""
    stem = name.removesuffix(".json")
    for path in example_configs():
        if path.stem == stem:
            return path
    known = ", ".join(p.stem for p in example_configs())
    raise ValueError(f"no shipped config called {name!r}; the shipped ones are: {known}")
