"""How each model family's ``config.json`` describes its layers, read the way ``transformers`` reads it.

Every family is one ``Family`` entry: the family's own field names, the defaults its
``transformers`` config class uses for fields a file leaves out, and the layout of its
blocks (normalisations, biases, position table, attention kind, windowed layers,
experts, running-summary layers). ``Family.build`` turns a config into a ``Layout``;
each default it falls back on is written down as a note.

The few things that are not a yes/no or a field name (which layers are windowed,
which hold experts, which are running summaries, how Falcon counts its key-value
heads) are small named rules, each saying in its docstring which ``transformers``
code it follows. The reference is ``transformers`` 5.24: ``models/<family>/
configuration_*.py`` for names and defaults, ``modeling_*.py`` for the parts.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .layout import (
    Attention, Block, Experts, FeedForward, LatentAttention, Layout, Mamba, Mamba2,
)

__all__ = [
    "MAX_LAYERS", "MAX_SIZE", "Flag", "QKNorm", "Family", "Reader", "FAMILIES", "GENERIC",
    "family_for", "STRUCTURE_FIELDS",
]

MAX_LAYERS = 10_000
"""Most layers the reader accepts (published decoders have a few hundred at most)."""

MAX_SIZE = 2**40
"""Largest size (width, vocabulary, heads, ...) the reader accepts, about 1.1 million million."""

_MISSING = object()


# --- reading fields ----------------------------------------------------------------------------

class Reader:
    """A config dictionary read field by field, for one family: every field it reads is
    remembered, and every default it falls back on is written down in ``notes``."""

    def __init__(self, cfg: Mapping[str, Any], title: str) -> None:
        self.cfg = cfg
        self.title = title
        self.notes: list[str] = []
        self.read: set[str] = set()

    def raw(self, names: Sequence[str]) -> tuple[str, Any]:
        """(name, value) of the first of ``names`` present and not null; _MISSING if none is.
        Two of them present with different values is an error naming both."""
        self.read.update(names)
        found = [(n, self.cfg[n]) for n in names if self.cfg.get(n) is not None]
        for n, v in found[1:]:
            if json.dumps(v, sort_keys=True, default=str) != json.dumps(found[0][1], sort_keys=True, default=str):
                raise ValueError(f"config fields {found[0][0]}={found[0][1]!r} and {n}={v!r} disagree")
        return found[0] if found else (names[0], _MISSING)

    def given(self, *names: str) -> bool:
        """True if one of ``names`` is present and not null."""
        return self.raw(names)[1] is not _MISSING

    def default(self, name: str, value: Any, why: str = "") -> Any:
        """Note that ``name`` was not given and ``value`` is used, and return it."""
        shown = "null" if value is None else str(value).lower() if isinstance(value, bool) else (
            f"{value:,}" if isinstance(value, int) else repr(value))
        note = f"{name} not given: using {shown} ({why or f'the {self.title} default in transformers'})"
        if note not in self.notes:
            self.notes.append(note)
        return value

    def whole(self, *names: str, default: Any = _MISSING, minimum: int = 1, maximum: int = MAX_SIZE,
              why: str = "") -> int:
        """A whole-number field (the first of ``names``), or ``default`` (noted) when absent."""
        name, value = self.raw(names)
        if value is _MISSING:
            if default is _MISSING:
                raise ValueError(f"config field {name} is missing")
            return self.default(name, default, why)
        return _whole(name, value, minimum, maximum)

    def flag(self, name: str, default: bool, why: str = "") -> bool:
        """A true/false field, or the family's ``default`` (noted) when absent."""
        _, value = self.raw((name,))
        if value is _MISSING:
            return self.default(name, default, why)
        if not isinstance(value, bool):
            raise ValueError(f"config field {name} must be true or false, got {_short(value)}")
        return value

    def text(self, name: str, default: str | None = None) -> str | None:
        """A string field, or ``default`` when absent."""
        _, value = self.raw((name,))
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise ValueError(f"config field {name} must be a string, got {_short(value)}")
        return value

    def layer_list(self, name: str, layers: int, allowed: Sequence[str]) -> list[str] | None:
        """A list of one layer kind per layer (e.g. ``layer_types``), or None when absent."""
        _, value = self.raw((name,))
        if value is _MISSING:
            return None
        if not isinstance(value, list) or len(value) != layers or not all(isinstance(v, str) for v in value):
            raise ValueError(f"config field {name} must list one name for each of the {layers} layers, "
                             f"got {_short(value)}")
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ValueError(f"config field {name} holds {unknown[0]!r}, which this calculator does not "
                             f"understand (it knows {', '.join(allowed)})")
        return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _whole(name: str, value: Any, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"config field {name} must be a whole number, got {_short(value)}")
    if value < minimum:
        raise ValueError(f"config field {name} must be at least {minimum}, got {_short(value)}")
    if value > maximum:
        raise ValueError(f"config field {name} must be at most {maximum:,}, got {_short(value)}")
    return value


# --- the pieces of a family description ---------------------------------------------------------

@dataclass(frozen=True)
class Flag:
    """A true/false config field that switches a part on, with the family's default."""

    name: str
    default: bool

    def __call__(self, r: Reader) -> bool:
        return r.flag(self.name, self.default)


@dataclass(frozen=True)
class QKNorm:
    """A normalisation of queries and keys inside attention.

    ``scope``: "head" for one set of numbers shared by every head (``head_dim`` each for
    the query and the key norm), "every head" for one set per query head and per key-value
    head; ``per_channel`` numbers per channel (1 for a scale, 2 for a scale and a bias);
    ``flag``: the field that switches it on, or None when the family always has it."""

    scope: str
    per_channel: int = 1
    flag: Flag | None = None

    def numbers(self, r: Reader, heads: int, kv_heads: int, head_dim: int) -> int:
        if self.flag is not None and not self.flag(r):
            return 0
        channels = 2 * head_dim if self.scope == "head" else (heads + kv_heads) * head_dim
        return self.per_channel * channels


def _resolve(value: bool | Flag | Callable[[Reader], Any], r: Reader) -> Any:
    return value(r) if callable(value) else value


# Numbers per channel of one normalisation.
NORM_NUMBERS = {"rms": 1, "layer": 2, "scale": 1, "fixed": 0}
"""RMSNorm has a scale; LayerNorm a scale and a bias; Cohere's LayerNorm a scale only; OLMo's none."""

NORM_NAMES = {1: "RMSNorm", 2: "LayerNorm", 0: "LayerNorm without trainable numbers"}


# --- rules: attention ---------------------------------------------------------------------------

def kv_from_field(default: int | None = None) -> Callable[[Reader, int], int]:
    """``num_key_value_heads``, defaulting to the number of heads (``default`` None) or to a number."""
    def rule(r: Reader, heads: int) -> int:
        why = "plain multi-head attention" if default is None else ""
        return r.whole("num_key_value_heads", default=heads if default is None else default, why=why)
    rule.__doc__ = kv_from_field.__doc__
    return rule


def kv_all_heads(r: Reader, heads: int) -> int:
    """Every head has its own keys and values (the family has no grouped-query attention)."""
    return heads


def kv_multi_query_flag(r: Reader, heads: int) -> int:
    """GPT-BigCode: ``multi_query`` (default true) means one key-value head for all query heads."""
    return 1 if r.flag("multi_query", True) else heads


def kv_falcon(r: Reader, heads: int) -> int:
    """Falcon (``FalconAttention``): the new decoder architecture has ``num_kv_heads`` (default:
    all heads); otherwise ``multi_query`` (default true) means one, and its absence all heads."""
    if r.flag("new_decoder_architecture", False):
        r.read.add("multi_query")  # not used by the new architecture
        return r.whole("num_kv_heads", default=heads, why="the Falcon default: every head")
    kv = 1 if r.flag("multi_query", True) else heads
    if r.given("num_kv_heads") and r.whole("num_kv_heads") != kv:
        raise ValueError(f"config field num_kv_heads={r.cfg['num_kv_heads']!r} is used by Falcon only with "
                         f"new_decoder_architecture; without it this model has {kv} key-value head(s)")
    return kv


def head_dim_from_field(default: int | None = None) -> Callable[[Reader, int, int], int]:
    """``head_dim``, defaulting to ``hidden_size / num_attention_heads`` (``default`` None) or a number."""
    def rule(r: Reader, width: int, heads: int) -> int:
        if r.given("head_dim") or default is not None:
            return r.whole("head_dim", default=default)
        return _width_over_heads(r, width, heads, note=True)
    return rule


def head_dim_fixed(r: Reader, width: int, heads: int) -> int:
    """``hidden_size / num_attention_heads``; the family does not read a ``head_dim`` field."""
    return _width_over_heads(r, width, heads, note=False)


def _width_over_heads(r: Reader, width: int, heads: int, note: bool) -> int:
    if width % heads:
        missing = "config field head_dim is missing and " if note else "config field "
        raise ValueError(f"{missing}hidden_size={width:,} is not a multiple of num_attention_heads={heads}, "
                         "so the heads have no whole width")
    if note:
        r.notes.append(f"head_dim not given: using hidden_size / num_attention_heads = {width // heads}")
    return width // heads


# --- rules: windowed layers --------------------------------------------------------------------

Windows = Callable[[Reader, int], list[int | None]]


def _window_size(r: Reader, default: int | None) -> int | None:
    """``sliding_window``: null in the file means no window; left out, the family's default."""
    name, value = r.raw(("sliding_window",))
    if value is _MISSING:
        return None if default is None or name in r.cfg else r.default(name, default)
    return _whole(name, value)


def windows_all(default: int | None) -> Windows:
    """Every layer sees the last ``sliding_window`` positions when the field is set (Mistral,
    Mixtral, Phi-3, StarCoder2: one ``sliding_window`` for the whole model)."""
    def rule(r: Reader, layers: int) -> list[int | None]:
        return [_window_size(r, default)] * layers
    rule.__doc__ = windows_all.__doc__
    return rule


def _windows_from_types(r: Reader, layers: int, window: int | None,
                        pattern: Callable[[int], bool]) -> list[int | None]:
    """``layer_types`` when the file lists it, else ``pattern(i)`` says which layers are windowed."""
    types = r.layer_list("layer_types", layers, ("full_attention", "sliding_attention"))
    sliding = [t == "sliding_attention" for t in types] if types else [pattern(i) for i in range(layers)]
    if any(sliding) and window is None:
        raise ValueError("config field layer_types marks windowed layers but sliding_window is null "
                         "(or use_sliding_window is false)")
    return [window if s else None for s in sliding]


def windows_qwen2(r: Reader, layers: int) -> list[int | None]:
    """Qwen2, Qwen3 (``Qwen2Config``): with ``use_sliding_window`` (default false), layers from
    ``max_window_layers`` (default 28) on see the last ``sliding_window`` (default 4,096) positions."""
    use = r.flag("use_sliding_window", False)
    window = _window_size(r, 4096) if use else None
    r.read.update({"sliding_window", "max_window_layers"})
    first = r.whole("max_window_layers", default=28, minimum=0) if use else 0
    return _windows_from_types(r, layers, window, lambda i: window is not None and i >= first)


def windows_qwen2_moe(r: Reader, layers: int) -> list[int | None]:
    """Qwen2-MoE (``Qwen2MoeConfig``): with ``use_sliding_window`` (default false), the
    even-numbered layers below ``max_window_layers`` (default 28) are windowed."""
    use = r.flag("use_sliding_window", False)
    window = _window_size(r, 4096) if use else None
    r.read.update({"sliding_window", "max_window_layers"})
    below = r.whole("max_window_layers", default=28, minimum=0) if use else 0
    return _windows_from_types(r, layers, window, lambda i: window is not None and (i + 1) % 2 == 1 and i < below)


def windows_qwen3_moe(r: Reader, layers: int) -> list[int | None]:
    """Qwen3-MoE (``Qwen3MoeConfig``): with ``use_sliding_window`` (default false), every layer
    sees the last ``sliding_window`` (default 4,096) positions."""
    use = r.flag("use_sliding_window", False)
    r.read.update({"sliding_window", "max_window_layers"})
    if use and r.given("max_window_layers"):
        r.notes.append("max_window_layers is not used by transformers' Qwen3-MoE: every layer is windowed")
    return [_window_size(r, 4096) if use else None] * layers


def windows_alternating(r: Reader, layers: int) -> list[int | None]:
    """Gemma-2 (``Gemma2Config``): ``layer_types``, or else windowed and full layers alternate,
    starting with a windowed one; ``sliding_window`` defaults to 4,096."""
    return _windows_from_types(r, layers, _window_size(r, 4096), lambda i: (i + 1) % 2 == 1)


def windows_gemma3(r: Reader, layers: int) -> list[int | None]:
    """Gemma-3 (``Gemma3TextConfig``): ``layer_types``, or else every ``sliding_window_pattern``-th
    layer (default 6) is full and the others see the last ``sliding_window`` (default 4,096)."""
    every = r.whole("sliding_window_pattern", default=6)
    r.read.add("use_bidirectional_attention")
    if r.cfg.get("use_bidirectional_attention") not in (None, False):
        raise ValueError("config field use_bidirectional_attention is true: that is an encoder (every "
                         "position sees the whole text), not a decoder that writes tokens")
    return _windows_from_types(r, layers, _window_size(r, 4096), lambda i: (i + 1) % every != 0)


# --- rules: mixtures of experts ------------------------------------------------------------------

Ffns = Callable[[Reader, int, int], list[Experts | None]]


def _experts(r: Reader, width: int, count_names: Sequence[str], count_default: int | None,
             per_token_default: int | None, inner: int, **kw: Any) -> Experts:
    count = r.whole(*count_names, default=_MISSING if count_default is None else count_default)
    per_token = r.whole("num_experts_per_tok", default=_MISSING if per_token_default is None else per_token_default)
    if per_token > count:
        raise ValueError(f"config field num_experts_per_tok={per_token} is more than the {count} experts")
    return Experts(width=width, count=count, per_token=per_token, inner=inner, **kw)


def experts_every_layer(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """Mixtral: every layer holds ``num_local_experts`` (default 8) experts of
    ``intermediate_size``, ``num_experts_per_tok`` (default 2) for each token."""
    e = _experts(r, width, ("num_local_experts", "num_experts"), 8, 2, r.whole("intermediate_size"))
    return [e] * layers


def experts_qwen(shared: bool, count_default: int, per_token_default: int,
                 inner_default: int) -> Ffns:
    """Qwen2-MoE and Qwen3-MoE: layers not in ``mlp_only_layers`` and at every
    ``decoder_sparse_step``-th place hold ``num_experts`` experts of ``moe_intermediate_size``
    (Qwen2-MoE adds a gated shared expert of ``shared_expert_intermediate_size``); the
    other layers have a dense feed-forward part of ``intermediate_size``."""
    def rule(r: Reader, layers: int, width: int) -> list[Experts | None]:
        count = r.whole("num_experts", "num_local_experts", default=count_default, minimum=0)
        step = r.whole("decoder_sparse_step", default=1)
        dense_only = _index_list(r, "mlp_only_layers", layers)
        if count == 0:
            return [None] * layers
        inner = r.whole("moe_intermediate_size", default=inner_default)
        extra: dict[str, Any] = {}
        if shared:
            extra = {"shared": FeedForward(width, r.whole("shared_expert_intermediate_size", default=5632),
                                           gated=True), "shared_gate": True}
        e = _experts(r, width, ("num_experts", "num_local_experts"), count_default, per_token_default,
                     inner, **extra)
        return [None if (i in dense_only or (i + 1) % step) else e for i in range(layers)]
    rule.__doc__ = experts_qwen.__doc__
    return rule


def experts_deepseek(count_default: int, per_token_default: int | None, inner_default: int,
                     shared_default: int, dense_default: int, shared_bias: bool | Flag) -> Ffns:
    """DeepSeek-V2/V3: the first ``first_k_dense_replace`` layers are dense; the rest hold
    ``n_routed_experts`` experts of ``moe_intermediate_size``, ``num_experts_per_tok`` a token,
    plus ``n_shared_experts`` shared experts (one feed-forward part of their summed width)
    that every token uses. The router is held in float32 (``DeepseekV3TopkRouter``)."""
    def rule(r: Reader, layers: int, width: int) -> list[Experts | None]:
        first_moe = r.whole("first_k_dense_replace", default=dense_default, minimum=0)
        frequency = r.whole("moe_layer_freq", default=1)
        if frequency != 1:
            raise ValueError(f"config field moe_layer_freq={frequency}: transformers puts experts in every "
                             "layer after first_k_dense_replace, so a model with gaps is not built as published")
        inner = r.whole("moe_intermediate_size", default=inner_default)
        n_shared = r.whole("n_shared_experts", default=shared_default, minimum=0)
        shared = FeedForward(width, inner * n_shared, gated=True, bias=_resolve(shared_bias, r)) if n_shared else None
        e = _experts(r, width, ("n_routed_experts", "num_experts", "num_local_experts"), count_default,
                     per_token_default, inner, shared=shared, router_float32=True)
        return [None if i < first_moe else e for i in range(layers)]
    rule.__doc__ = experts_deepseek.__doc__
    return rule


def experts_jamba(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """Jamba: layer i holds ``num_experts`` (default 16) experts of ``intermediate_size`` when
    i % ``expert_layer_period`` (default 2) equals ``expert_layer_offset`` (default 1)."""
    period = r.whole("expert_layer_period", default=2)
    offset = r.whole("expert_layer_offset", default=1, minimum=0)
    if offset >= period:
        raise ValueError(f"config field expert_layer_offset={offset} must be smaller than "
                         f"expert_layer_period={period}")
    count = r.whole("num_experts", "num_local_experts", default=16)
    if count == 1:
        return [None] * layers
    e = _experts(r, width, ("num_experts", "num_local_experts"), 16, 2, r.whole("intermediate_size"))
    return [e if i % period == offset else None for i in range(layers)]


def _index_list(r: Reader, name: str, layers: int) -> set[int]:
    _, value = r.raw((name,))
    if value is _MISSING:
        return set()
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < layers
                                              for v in value):
        raise ValueError(f"config field {name} must list layer numbers from 0 to {layers - 1}, got {_short(value)}")
    return set(value)


# --- rules: running-summary (state-space) layers --------------------------------------------------

Mixers = Callable[[Reader, int, int], list[Mamba | Mamba2 | None]]


def _mamba_jamba(r: Reader, width: int) -> Mamba:
    rank = r.raw(("mamba_dt_rank",))[1]
    dt_rank = math.ceil(width / 16) if rank in (_MISSING, "auto") else _whole("mamba_dt_rank", rank)
    return Mamba(width=width, inner=r.whole("mamba_expand", default=2) * width,
                 state=r.whole("mamba_d_state", default=16), conv=r.whole("mamba_d_conv", default=4),
                 dt_rank=dt_rank, conv_bias=r.flag("mamba_conv_bias", True),
                 proj_bias=r.flag("mamba_proj_bias", False), inner_norms=True)


def mixers_jamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Jamba: layer i is attention when i % ``attn_layer_period`` (default 8) equals
    ``attn_layer_offset`` (default 4), a Mamba mixer otherwise."""
    period = r.whole("attn_layer_period", default=8)
    offset = r.whole("attn_layer_offset", default=4, minimum=0)
    if offset >= period:
        raise ValueError(f"config field attn_layer_offset={offset} must be smaller than attn_layer_period={period}")
    mamba = _mamba_jamba(r, width)
    return [None if i % period == offset else mamba for i in range(layers)]


def mixers_bamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Bamba: the layers listed in ``attn_layer_indices`` are attention, the others Mamba-2
    mixers of ``mamba_n_heads`` heads (``BambaMixer``)."""
    attention = _index_list(r, "attn_layer_indices", layers)
    expand = r.whole("mamba_expand", default=2)
    inner = expand * width
    heads = r.whole("mamba_n_heads", default=128)
    head = r.raw(("mamba_d_head",))[1]
    head_dim = inner // heads if head in (_MISSING, "auto") else _whole("mamba_d_head", head)
    if head_dim * heads != inner:
        raise ValueError(f"config fields mamba_n_heads={heads} and mamba_d_head={head_dim} do not make "
                         f"mamba_expand * hidden_size = {inner:,} channels")
    groups = r.whole("mamba_n_groups", default=1)
    if heads % groups:
        raise ValueError(f"config field mamba_n_groups={groups} does not divide mamba_n_heads={heads}")
    mixer = Mamba2(width=width, inner=inner, heads=heads, head_dim=head_dim, groups=groups,
                   state=r.whole("mamba_d_state", default=256), conv=r.whole("mamba_d_conv", default=4),
                   conv_bias=r.flag("mamba_conv_bias", True), proj_bias=r.flag("mamba_proj_bias", False))
    return [None if i in attention else mixer for i in range(layers)]


def mixers_mamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Mamba: every layer is a Mamba mixer of ``expand * hidden_size`` channels (``MambaMixer``)."""
    rank = r.raw(("time_step_rank",))[1]
    dt_rank = math.ceil(width / 16) if rank in (_MISSING, "auto") else _whole("time_step_rank", rank)
    r.read.add("intermediate_size")  # transformers sets it to expand * hidden_size
    mixer = Mamba(width=width, inner=r.whole("expand", default=2) * width, state=r.whole("state_size", default=16),
                  conv=r.whole("conv_kernel", default=4), dt_rank=dt_rank,
                  conv_bias=r.flag("use_conv_bias", True), proj_bias=r.flag("use_bias", False))
    return [mixer] * layers


# --- rules: the rest -----------------------------------------------------------------------------

def norms_falcon(r: Reader) -> int:
    """Falcon (``FalconDecoderLayer``): two norms, except with ``parallel_attn`` (default true),
    where there is one unless ``num_ln_in_parallel_attn`` is 2 (the default for the new
    decoder architecture)."""
    new = r.flag("new_decoder_architecture", False)
    if not r.flag("parallel_attn", True):
        r.read.add("num_ln_in_parallel_attn")  # only used with parallel attention
        return 2
    n = r.whole("num_ln_in_parallel_attn", default=2 if new else 1,
                why="2 with the new decoder architecture, 1 otherwise")
    if n not in (1, 2):
        raise ValueError(f"config field num_ln_in_parallel_attn must be 1 or 2, got {n}")
    return n


def norms_parallel_flag(r: Reader) -> int:
    """StableLM: one norm with ``use_parallel_residual`` (default false), two otherwise."""
    return 1 if r.flag("use_parallel_residual", False) else 2


def norm_opt(r: Reader) -> int:
    """OPT: LayerNorm with a scale and a bias, or none if ``layer_norm_elementwise_affine`` is false."""
    return 2 if r.flag("layer_norm_elementwise_affine", True) else 0


def final_norm_opt(r: Reader) -> bool:
    """OPT: a final norm only with ``do_layer_norm_before`` (default true) and without the
    old ``_remove_final_layer_norm``."""
    return r.flag("do_layer_norm_before", True) and not r.flag("_remove_final_layer_norm", False)


def width_field(*names: str, four_times: bool = False) -> Callable[[Reader, int], int]:
    """The feed-forward width from ``names``; with ``four_times``, absent or null means 4 x the width."""
    def rule(r: Reader, width: int) -> int:
        if four_times and not r.given(*names):
            r.notes.append(f"{names[0]} not given or null: using four times hidden_size = {4 * width:,} "
                           f"(the {r.title} rule)")
            return 4 * width
        return r.whole(*names)
    return rule


def width_four_times(r: Reader, width: int) -> int:
    """BLOOM: the feed-forward width is always four times the model's width."""
    return 4 * width


# --- a family ------------------------------------------------------------------------------------

LLAMA_NAMES = {"layers": ("num_hidden_layers",), "width": ("hidden_size",),
               "heads": ("num_attention_heads",)}
GPT2_NAMES = {"layers": ("n_layer", "num_hidden_layers"), "width": ("n_embd", "hidden_size"),
              "heads": ("n_head", "num_attention_heads")}


@dataclass(frozen=True)
class Family:
    """One model family's layout, as ``transformers`` builds it from a config.

    Sizes are read from ``names`` (the family's own field names first). Each part is a
    constant, a ``Flag`` (a config field with the family's default) or a named rule:

    - attention: ``kv_heads`` and ``head_dim`` (rules), ``qkv_bias`` and ``out_bias``,
      ``qk_norm``, ``windows`` (which layers see only recent positions), ``latent``
      (DeepSeek's compressed cache), ``stores_every_head`` (transformers' cache copies keys
      and values out to every query head);
    - feed-forward: ``ffn_width`` (None: no feed-forward part), ``gated``, ``mlp_bias``,
      ``experts`` (which layers hold a mixture of experts);
    - ``mixers``: which layers are running summaries (Mamba) instead of attention;
    - normalisation: ``norm`` ("rms", "layer", "scale" or "fixed", or a rule),
      ``norms_per_layer``, ``final_norm``, ``embedding_norm``;
    - embeddings and head: ``positions`` (fields giving a learned position table's rows, with
      ``position_default`` and ``position_offset``), ``embedding_width`` (OPT's narrower
      embeddings), ``tied`` (the family's ``tie_word_embeddings`` default; None: the file
      must say), ``head_bias``;
    - ``refuse_if_true``: fields that describe a model this calculator does not count;
      ``no_count``: fields the family reads that change no count."""

    title: str
    model_types: tuple[str, ...]
    names: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: LLAMA_NAMES)
    kv_heads: Callable[[Reader, int], int] = kv_from_field()
    head_dim: Callable[[Reader, int, int], int] = head_dim_from_field()
    ffn_width: Callable[[Reader, int], int] | None = width_field("intermediate_size")
    gated: bool = True
    norm: str | Callable[[Reader], int] = "rms"
    norms_per_layer: int | Callable[[Reader], int] = 2
    final_norm: bool | Callable[[Reader], bool] = True
    qkv_bias: bool | Flag = False
    out_bias: bool | Flag = False
    mlp_bias: bool | Flag = False
    qk_norm: QKNorm | None = None
    positions: tuple[str, ...] = ()
    position_default: int = 0
    position_offset: int = 0
    embedding_norm: bool = False
    embedding_width: tuple[str, ...] = ()
    head_bias: bool = False
    tied: bool | None = False
    windows: Windows | None = None
    experts: Ffns | None = None
    mixers: Mixers | None = None
    latent: bool = False
    stores_every_head: bool | Callable[[Reader], bool] = False
    refuse_if_true: Mapping[str, str] = field(default_factory=dict)
    no_count: tuple[str, ...] = ()
    summary: str = ""

    def build(self, r: Reader) -> Layout:
        """The ``Layout`` this family builds from the config in ``r``."""
        for name, why in self.refuse_if_true.items():
            if r.cfg.get(name) not in (None, False):
                raise ValueError(f"config field {name}={_short(r.cfg[name])}: {why}")
            r.read.add(name)
        r.read.update(self.no_count)  # fields the family reads that change no count
        layers = r.whole(*self.names["layers"], maximum=MAX_LAYERS)
        width = r.whole(*self.names["width"])
        vocab = r.whole("vocab_size")
        per_channel = NORM_NUMBERS[self.norm] if isinstance(self.norm, str) else self.norm(r)
        norm = per_channel * width
        mixers = self.mixers(r, layers, width) if self.mixers else [None] * layers
        attention = self._attention(r, layers, width) if any(m is None for m in mixers) else None
        ffns = self._ffns(r, layers, width)
        norms = _resolve(self.norms_per_layer, r) * norm
        blocks = tuple(Block(mixer=m if m is not None else attention[i], ffn=ffns[i], norms=norms)
                       for i, m in enumerate(mixers))
        if self.tied is None and not r.given("tie_word_embeddings"):
            raise ValueError("config field tie_word_embeddings is missing: for a model_type this calculator "
                             "does not know it cannot tell (families differ) whether the output head has a "
                             "matrix of its own")
        tied = r.flag("tie_word_embeddings", bool(self.tied))
        positions = 0
        if self.positions:
            positions = r.whole(*self.positions, default=self.position_default) + self.position_offset
        embedding_width = r.whole(*self.embedding_width, default=width,
                                  why="the model's width") if self.embedding_width else None
        return Layout(vocab=vocab, width=width, blocks=blocks, tied=tied,
                      final_norm=norm if _resolve(self.final_norm, r) else 0, positions=positions,
                      embedding_norm=norm if self.embedding_norm else 0,
                      embedding_width=embedding_width if embedding_width != width else None,
                      head_bias=self.head_bias, family=self.title,
                      norm="LayerNorm without bias" if self.norm == "scale" else NORM_NAMES[per_channel])

    def _attention(self, r: Reader, layers: int, width: int) -> list[Attention | LatentAttention]:
        heads = r.whole(*self.names["heads"])
        windows = self.windows(r, layers) if self.windows else [None] * layers
        if self.latent:
            # q_lora_rank: null means queries straight from the model's width; left out, 1,536
            q_rank = None if r.cfg.get("q_lora_rank", 0) is None else r.whole("q_lora_rank", default=1536)
            part = LatentAttention(
                width=width, heads=heads, kv_rank=r.whole("kv_lora_rank", default=512),
                q_rank=q_rank,
                nope_dim=r.whole("qk_nope_head_dim", default=128), rope_dim=r.whole("qk_rope_head_dim", default=64),
                v_dim=r.whole("v_head_dim", default=128), bias=r.flag("attention_bias", False))
            r.read.update({"num_key_value_heads", "head_dim"})  # transformers does not use them for latent attention
            return [part] * layers
        kv = self.kv_heads(r, heads)
        if kv > heads or heads % kv:
            raise ValueError(f"config field num_key_value_heads={kv} does not divide num_attention_heads={heads}")
        head_dim = self.head_dim(r, width, heads)
        qk = self.qk_norm.numbers(r, heads, kv, head_dim) if self.qk_norm else 0
        stored = heads if _resolve(self.stores_every_head, r) and kv != heads else None
        qkv_bias, out_bias = _resolve(self.qkv_bias, r), _resolve(self.out_bias, r)
        return [Attention(width=width, heads=heads, kv_heads=kv, head_dim=head_dim, qkv_bias=qkv_bias,
                          out_bias=out_bias, qk_norm=qk, window=w, stored_kv_heads=stored) for w in windows]

    def _ffns(self, r: Reader, layers: int, width: int) -> list[FeedForward | Experts | None]:
        if self.ffn_width is None:
            return [None] * layers
        experts = self.experts(r, layers, width) if self.experts else [None] * layers
        dense = None
        r.read.add("intermediate_size")  # the width of dense layers, when there are any
        if any(e is None for e in experts):
            dense = FeedForward(width, self.ffn_width(r, width), gated=self.gated, bias=_resolve(self.mlp_bias, r))
        return [e if e is not None else dense for e in experts]


# --- the families --------------------------------------------------------------------------------

_LLAMA_BIAS = Flag("attention_bias", False)

FAMILIES: tuple[Family, ...] = (
    Family("Llama", ("llama",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, mlp_bias=Flag("mlp_bias", False),
           summary="pre-norm blocks with two RMSNorms, a gated feed-forward part, rotary positions"),
    Family("Granite", ("granite",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, mlp_bias=Flag("mlp_bias", False),
           summary="the Llama layout with scaling factors that change no count"),
    Family("Mistral", ("mistral",), windows=windows_all(4096),
           summary="the Llama layout without biases; every layer windowed when sliding_window is set"),
    Family("Mixtral", ("mixtral",), windows=windows_all(None), experts=experts_every_layer,
           summary="the Mistral layout with a mixture of experts in every layer"),
    Family("Qwen2", ("qwen2",), kv_heads=kv_from_field(32), qkv_bias=True, windows=windows_qwen2,
           summary="the Llama layout with biases on the query, key and value projections"),
    Family("Qwen2-MoE", ("qwen2_moe",), kv_heads=kv_from_field(16), qkv_bias=Flag("qkv_bias", True),
           windows=windows_qwen2_moe, experts=experts_qwen(True, 60, 4, 1408),
           summary="Qwen2 with experts and a gated shared expert"),
    Family("Qwen3", ("qwen3",), kv_heads=kv_from_field(32), head_dim=head_dim_from_field(128),
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, qk_norm=QKNorm("head"), windows=windows_qwen2,
           summary="the Llama layout with queries and keys normalised per head"),
    Family("Qwen3-MoE", ("qwen3_moe",), kv_heads=kv_from_field(4), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           qk_norm=QKNorm("head"), windows=windows_qwen3_moe, experts=experts_qwen(False, 128, 8, 768),
           summary="Qwen3 with a mixture of experts"),
    Family("Gemma", ("gemma",), kv_heads=kv_from_field(16), head_dim=head_dim_from_field(256),
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, tied=True,
           summary="the Llama layout with tied embeddings and a GELU gate"),
    Family("Gemma-2", ("gemma2",), kv_heads=kv_from_field(4), head_dim=head_dim_from_field(256),
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, tied=True, norms_per_layer=4,
           windows=windows_alternating,
           summary="four RMSNorms a layer; windowed and full layers alternate"),
    Family("Gemma-3", ("gemma3_text",), kv_heads=kv_from_field(4), head_dim=head_dim_from_field(256),
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, tied=True, norms_per_layer=4,
           qk_norm=QKNorm("head"), windows=windows_gemma3,
           summary="four RMSNorms a layer, queries and keys normalised; most layers windowed"),
    Family("Phi", ("phi",), qkv_bias=True, out_bias=True, gated=False, mlp_bias=True, norm="layer",
           norms_per_layer=1, head_bias=True, head_dim=head_dim_from_field(),
           qk_norm=QKNorm("head", per_channel=2, flag=Flag("qk_layernorm", False)),
           summary="parallel attention and feed-forward after one LayerNorm; biases everywhere"),
    Family("Phi-3", ("phi3",), windows=windows_all(None),
           summary="the Llama layout with fused projections; every layer windowed when sliding_window is set"),
    Family("GPT-2", ("gpt2",), names=GPT2_NAMES, kv_heads=kv_all_heads, head_dim=head_dim_fixed,
           ffn_width=width_field("n_inner", four_times=True), gated=False, norm="layer", qkv_bias=True,
           out_bias=True, mlp_bias=True, positions=("n_positions", "max_position_embeddings"),
           position_default=1024, tied=True,
           refuse_if_true={"add_cross_attention": "cross-attention layers belong to an encoder-decoder"},
           summary="LayerNorm blocks with biases everywhere and a learned position table"),
    Family("GPT-J", ("gptj",), names=GPT2_NAMES, kv_heads=kv_all_heads, head_dim=head_dim_fixed,
           ffn_width=width_field("n_inner", four_times=True), gated=False, norm="layer", norms_per_layer=1,
           mlp_bias=True, head_bias=True, no_count=("n_positions",),
           summary="parallel attention and feed-forward after one LayerNorm; the head has a bias"),
    Family("GPT-NeoX", ("gpt_neox",), kv_heads=kv_all_heads, head_dim=head_dim_fixed, gated=False, norm="layer",
           qkv_bias=Flag("attention_bias", True), out_bias=Flag("attention_bias", True), mlp_bias=True,
           no_count=("use_parallel_residual",), summary="LayerNorm blocks with biases (Pythia)"),
    Family("Falcon", ("falcon",), names={**LLAMA_NAMES, "width": ("hidden_size", "n_embed")},
           kv_heads=kv_falcon, head_dim=head_dim_fixed,
           ffn_width=width_field("ffn_hidden_size", four_times=True), gated=False, norm="layer",
           norms_per_layer=norms_falcon, qkv_bias=Flag("bias", False), out_bias=Flag("bias", False),
           mlp_bias=Flag("bias", False), tied=True,
           stores_every_head=lambda r: r.flag("new_decoder_architecture", False),
           summary="parallel attention and feed-forward; multi-query or grouped attention"),
    Family("BLOOM", ("bloom",), names={"layers": ("n_layer", "num_hidden_layers"),
                                       "width": ("hidden_size", "n_embed"),
                                       "heads": ("n_head", "num_attention_heads")},
           kv_heads=kv_all_heads, head_dim=head_dim_fixed, ffn_width=width_four_times, gated=False,
           norm="layer", qkv_bias=True, out_bias=True, mlp_bias=True, embedding_norm=True, tied=True,
           summary="LayerNorm blocks with biases, a LayerNorm after the embeddings, ALiBi positions"),
    Family("OPT", ("opt",), kv_heads=kv_all_heads, head_dim=head_dim_fixed, ffn_width=width_field("ffn_dim"),
           gated=False, norm=norm_opt, final_norm=final_norm_opt, qkv_bias=Flag("enable_bias", True),
           out_bias=Flag("enable_bias", True), mlp_bias=Flag("enable_bias", True),
           positions=("max_position_embeddings",), position_default=2048, position_offset=2,
           embedding_width=("word_embed_proj_dim",), tied=True,
           summary="LayerNorm blocks with biases and a learned position table of max_position_embeddings + 2 rows"),
    Family("StarCoder (GPT-BigCode)", ("gpt_bigcode",), names=GPT2_NAMES, kv_heads=kv_multi_query_flag,
           head_dim=head_dim_fixed, ffn_width=width_field("n_inner", four_times=True), gated=False, norm="layer",
           qkv_bias=True, out_bias=True, mlp_bias=True, positions=("n_positions", "max_position_embeddings"),
           position_default=1024, tied=True,
           refuse_if_true={"add_cross_attention": "cross-attention layers belong to an encoder-decoder"},
           summary="GPT-2 blocks with multi-query attention"),
    Family("StarCoder2", ("starcoder2",), kv_heads=kv_from_field(2), gated=False, norm="layer",
           qkv_bias=Flag("use_bias", True), out_bias=Flag("use_bias", True), mlp_bias=Flag("use_bias", True),
           tied=True, windows=windows_all(None),
           summary="LayerNorm blocks with biases and grouped attention"),
    Family("StableLM", ("stablelm",), kv_heads=kv_from_field(32), head_dim=head_dim_fixed, norm="layer",
           norms_per_layer=norms_parallel_flag, qkv_bias=Flag("use_qkv_bias", False),
           qk_norm=QKNorm("every head", flag=Flag("qk_layernorm", False)),
           summary="LayerNorm blocks with a gated feed-forward part"),
    Family("OLMo", ("olmo",), norm="fixed", qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           summary="the Llama layout with LayerNorms that have no trainable numbers"),
    Family("OLMo-2", ("olmo2",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, qk_norm=QKNorm("every head"),
           summary="norms after attention and after the feed-forward part; queries and keys normalised"),
    Family("Cohere (Command-R)", ("cohere",), norm="scale", norms_per_layer=1, qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, qk_norm=QKNorm("every head", flag=Flag("use_qk_norm", False)), tied=True,
           summary="parallel attention and feed-forward after one LayerNorm without bias"),
    Family("DeepSeek-V2", ("deepseek_v2",), latent=True, mlp_bias=Flag("mlp_bias", False),
           experts=experts_deepseek(64, None, 1407, 2, 0, Flag("mlp_bias", False)),
           summary="latent attention and experts with shared experts"),
    Family("DeepSeek-V3", ("deepseek_v3",), latent=True, experts=experts_deepseek(256, 8, 2048, 1, 3, False),
           summary="latent attention and experts with a shared expert"),
    Family("Jamba", ("jamba",), kv_heads=kv_from_field(8), mixers=mixers_jamba, experts=experts_jamba,
           summary="Mamba layers with an attention layer every few, experts every other layer"),
    Family("Bamba", ("bamba",), kv_heads=kv_from_field(8), mixers=mixers_bamba,
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, mlp_bias=Flag("mlp_bias", False),
           summary="Mamba-2 layers with a few attention layers"),
    Family("Mamba", ("mamba",), ffn_width=None, mixers=mixers_mamba, norms_per_layer=1, tied=True,
           summary="Mamba layers only: no attention, no feed-forward part"),
)

_BY_TYPE = {t: f for f in FAMILIES for t in f.model_types}

GENERIC = Family("an unknown family", (), qkv_bias=False, out_bias=False,
                 summary="counted as the Llama layout (two norms a layer, no biases, no position table)")
"""The layout assumed for a ``model_type`` this calculator does not know (see ``hf_config``)."""

REFUSED_TYPES = {
    "gemma3": "is Gemma-3 with its vision encoder: save its text_config as a config.json of its own "
              '(with "model_type": "gemma3_text") to count the language model',
    "RefinedWebModel": "is an early Falcon file: transformers reads it only as model_type falcon",
    "RefinedWeb": "is an early Falcon file: transformers reads it only as model_type falcon",
}
"""Model types refused with a sentence saying what to do instead."""


def family_for(model_type: str | None) -> Family:
    """The family of ``model_type``, ``GENERIC`` if unknown, or a ValueError if it is refused."""
    if model_type in REFUSED_TYPES:
        raise ValueError(f"model_type {model_type!r} {REFUSED_TYPES[model_type]}")
    return _BY_TYPE.get(model_type, GENERIC)


STRUCTURE_FIELDS = frozenset({
    # sizes under another family's names
    "n_layer", "n_head", "n_embd", "n_embed", "n_inner", "ffn_dim", "ffn_hidden_size", "intermediate_size",
    "n_positions", "word_embed_proj_dim",
    # attention
    "num_key_value_heads", "num_kv_heads", "multi_query", "new_decoder_architecture", "head_dim",
    "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
    "qk_layernorm", "use_qk_norm", "qk_norm", "parallel_attn", "use_parallel_residual", "parallel_residual",
    "num_ln_in_parallel_attn",
    # biases
    "attention_bias", "mlp_bias", "qkv_bias", "use_bias", "bias", "use_qkv_bias", "enable_bias",
    # windows
    "sliding_window", "use_sliding_window", "layer_types", "sliding_window_pattern", "max_window_layers",
    "attention_chunk_size",
    # experts
    "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok",
    "moe_intermediate_size", "shared_expert_intermediate_size", "n_shared_experts", "first_k_dense_replace",
    "decoder_sparse_step", "mlp_only_layers", "moe_layer_freq", "expert_layer_period", "expert_layer_offset",
    # running summaries
    "attn_layer_period", "attn_layer_offset", "attn_layer_indices", "layers_block_type", "state_size",
    "conv_kernel", "expand", "time_step_rank", "use_conv_bias", "num_heads", "n_groups",
    "mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_dt_rank", "mamba_n_heads", "mamba_d_head",
    "mamba_n_groups", "mamba_conv_bias", "mamba_proj_bias",
    # our own override
    "gated_ffn",
})
"""Fields that change a count in some family: one a family does not read must be absent,
null, false, or (for sizes) equal to what the family uses, or the reader refuses the file."""
