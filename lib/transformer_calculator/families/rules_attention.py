"""Rules for attention: how many key-value heads and how wide, and which layers look
only at a window of recent positions. Each rule says in its docstring which
``transformers`` code it follows (``transformers`` 5.24: ``models/<family>/
configuration_*.py`` for names and defaults, ``modeling_*.py`` for the parts)."""

from __future__ import annotations

from collections.abc import Callable

from .reader import Reader, short, whole_field

# --- attention ------------------------------------------------------------------------


def kv_from_field(default: int | None = None) -> Callable[[Reader, int], int]:
    """``num_key_value_heads``, defaulting to the number of heads (``default`` None) or
    to a number."""

    def rule(r: Reader, heads: int) -> int:
        why = "plain multi-head attention" if default is None else ""
        return r.whole(
            "num_key_value_heads",
            default=heads if default is None else default,
            why=why,
        )

    rule.__doc__ = kv_from_field.__doc__
    return rule


def kv_all_heads(r: Reader, heads: int) -> int:
    """Every head has its own keys and values (the family has no grouped-query
    attention)."""
    return heads


def kv_multi_query_flag(r: Reader, heads: int) -> int:
    """GPT-BigCode: ``multi_query`` (default true) means one key-value head for all
    query heads."""
    return 1 if r.flag("multi_query", True) else heads


def kv_dbrx(r: Reader, heads: int) -> int:
    """DBRX (``DbrxAttention``): ``attn_config.kv_n_heads`` key-value heads (default
    1)."""
    return r.sub("attn_config").whole("kv_n_heads")


def kv_falcon(r: Reader, heads: int) -> int:
    """Falcon (``FalconAttention``): the new decoder architecture has ``num_kv_heads``
    (default: all heads); otherwise ``multi_query`` (default true) means one, and its
    absence all heads."""
    if r.flag("new_decoder_architecture", False):
        r.read.add("multi_query")  # not used by the new architecture
        return r.whole(
            "num_kv_heads", default=heads, why="the Falcon default: every head"
        )
    kv = 1 if r.flag("multi_query", True) else heads
    if r.given("num_kv_heads") and r.whole("num_kv_heads") != kv:
        raise ValueError(
            f"config field num_kv_heads={r.cfg['num_kv_heads']!r} is used "
            "by Falcon only with "
            f"new_decoder_architecture; without it this model has {kv} "
            "key-value head(s)"
        )
    return kv


def head_dim_from_field(
    default: int | None = None,
) -> Callable[[Reader, int, int], int]:
    """``head_dim``, defaulting to ``hidden_size / num_attention_heads`` (``default``
    None) or a number."""

    def rule(r: Reader, width: int, heads: int) -> int:
        if r.given("head_dim") or default is not None:
            return r.whole("head_dim", default=default)
        return _width_over_heads(r, width, heads, note=True)

    return rule


def head_dim_fixed(r: Reader, width: int, heads: int) -> int:
    """``hidden_size / num_attention_heads``; the family does not read a ``head_dim``
    field."""
    return _width_over_heads(r, width, heads, note=False)


def _width_over_heads(r: Reader, width: int, heads: int, note: bool) -> int:
    if width % heads:
        missing = "config field head_dim is missing and " if note else "config field "
        raise ValueError(
            f"{missing}hidden_size={width:,} is not a multiple of "
            f"num_attention_heads={heads}, "
            "so the heads have no whole width"
        )
    if note:
        r.notes.append(
            "head_dim not given: using hidden_size / num_attention_heads = "
            f"{width // heads}"
        )
    return width // heads


# --- windowed layers -----------------------------------------------------------

Windows = Callable[[Reader, int], list[int | None]]


def _window_size(r: Reader, default: int | None) -> int | None:
    """``sliding_window``: null in the file means no window; left out, the family's
    default."""
    found = r.raw(("sliding_window",))
    if found is None:
        if default is None or "sliding_window" in r.cfg:
            return None
        return r.default("sliding_window", default)
    return whole_field(*found)


def windows_all(r: Reader, layers: int) -> list[int | None]:
    """Every layer sees the last ``sliding_window`` positions when the field (or its
    class default) is set (Mistral, Mixtral, Phi-3, StarCoder2: one ``sliding_window``
    for the whole model)."""
    return [_window_size(r, None)] * layers


def _windows_from_types(
    r: Reader, layers: int, window: int | None, pattern: Callable[[int], bool]
) -> list[int | None]:
    """``layer_types`` when the file lists it, else ``pattern(i)`` says which layers are
    windowed."""
    types = r.layer_list("layer_types", layers, ("full_attention", "sliding_attention"))
    sliding = (
        [t == "sliding_attention" for t in types]
        if types
        else [pattern(i) for i in range(layers)]
    )
    if any(sliding) and window is None:
        raise ValueError(
            "config field layer_types marks windowed layers but "
            "sliding_window is null "
            "(or use_sliding_window is false)"
        )
    return [window if s else None for s in sliding]


def _qwen_windows(windowed: Callable[[int, int], bool], doc: str) -> Windows:
    """A Qwen rule: with ``use_sliding_window`` (default false), the layers for which
    ``windowed(i, max_window_layers)`` holds see the last ``sliding_window`` (default
    4,096) positions; ``max_window_layers`` defaults to 28."""

    def rule(r: Reader, layers: int) -> list[int | None]:
        use = r.flag("use_sliding_window", False)
        window = _window_size(r, 4096) if use else None
        r.read.update({"sliding_window", "max_window_layers"})
        edge = r.whole("max_window_layers", default=28, minimum=0) if use else 0
        return _windows_from_types(
            r, layers, window, lambda i: window is not None and windowed(i, edge)
        )

    rule.__doc__ = doc
    return rule


windows_qwen2 = _qwen_windows(
    lambda i, edge: i >= edge,
    """Qwen2, Qwen3 (``Qwen2Config``): with ``use_sliding_window`` (default false),
    layers from ``max_window_layers`` (default 28) on see the last ``sliding_window``
    (default 4,096) positions.""",
)

windows_qwen2_moe = _qwen_windows(
    lambda i, edge: (i + 1) % 2 == 1 and i < edge,
    """Qwen2-MoE (``Qwen2MoeConfig``): with ``use_sliding_window`` (default false), the
    even-numbered layers below ``max_window_layers`` (default 28) are windowed.""",
)


def windows_qwen3_moe(r: Reader, layers: int) -> list[int | None]:
    """Qwen3-MoE (``Qwen3MoeConfig``): with ``use_sliding_window`` (default false),
    every layer sees the last ``sliding_window`` (default 4,096) positions."""
    use = r.flag("use_sliding_window", False)
    r.read.update({"sliding_window", "max_window_layers"})
    if use and r.given("max_window_layers"):
        r.notes.append(
            "max_window_layers is not used by transformers' Qwen3-MoE: "
            "every layer is windowed"
        )
    return [_window_size(r, 4096) if use else None] * layers


def windows_alternating(r: Reader, layers: int) -> list[int | None]:
    """Gemma-2 (``Gemma2Config``): ``layer_types``, or else windowed and full layers
    alternate, starting with a windowed one; ``sliding_window`` defaults to 4,096."""
    return _windows_from_types(
        r, layers, _window_size(r, 4096), lambda i: (i + 1) % 2 == 1
    )


def windows_gpt_oss(r: Reader, layers: int) -> list[int | None]:
    """gpt-oss (``GptOssConfig``): ``layer_types``, or else windowed and full layers
    alternate, starting with a windowed one; ``sliding_window`` defaults to 128."""
    return _windows_from_types(
        r, layers, _window_size(r, 128), lambda i: (i + 1) % 2 == 1
    )


def windows_gemma3(r: Reader, layers: int) -> list[int | None]:
    """Gemma-3 (``Gemma3TextConfig``): ``layer_types``, or else every
    ``sliding_window_pattern``-th layer (default 6) is full and the others see the last
    ``sliding_window`` (default 4,096)."""
    every = r.whole("sliding_window_pattern", default=6)
    r.read.add("use_bidirectional_attention")
    if r.cfg.get("use_bidirectional_attention") not in (None, False):
        raise ValueError(
            "config field use_bidirectional_attention is true: that is an "
            "encoder (every "
            "position sees the whole text), not a decoder that writes "
            "tokens"
        )
    return _windows_from_types(
        r, layers, _window_size(r, 4096), lambda i: (i + 1) % every != 0
    )


def kv_required(r: Reader, heads: int) -> int:
    """``num_key_value_heads``, which the family needs stated (Nemotron's
    ``NemotronAttention`` divides by it: left out or null, transformers cannot build the
    model)."""
    return r.whole("num_key_value_heads")


def head_dim_required(r: Reader, width: int, heads: int) -> int:
    """``head_dim``, which the family needs stated (HunYuan's and Ministral's attention
    take ``config.head_dim`` as it is: left out or null, transformers cannot build
    them)."""
    return r.whole("head_dim")


def windows_ministral(r: Reader, layers: int) -> list[int | None]:
    """Ministral (``MinistralConfig``): ``layer_types``, or else every layer sees the
    last ``sliding_window`` (default 4,096) positions when it is set."""
    window = _window_size(r, 4096)
    return _windows_from_types(r, layers, window, lambda i: window is not None)


def windows_olmo3(r: Reader, layers: int) -> list[int | None]:
    """OLMo-3 (``Olmo3Config``): ``layer_types``, or else three windowed layers (of
    ``sliding_window``, default 4,096) then a full one."""
    return _windows_from_types(r, layers, _window_size(r, 4096), lambda i: (i + 1) % 4)


def windows_exaone4(r: Reader, layers: int) -> list[int | None]:
    """EXAONE-4 (``Exaone4Config``): ``layer_types``, or else every
    ``sliding_window_pattern``-th layer (default 4) is full and the others see the last
    ``sliding_window`` (default 4,096); without a window transformers divides by a
    pattern of 0 and cannot lay the layers out."""
    window = _window_size(r, 4096)
    if window is None and not r.given("layer_types"):
        raise ValueError(
            "config field sliding_window is null and layer_types is not given: "
            "transformers' EXAONE-4 config then has no pattern to lay the layers out"
        )
    every = r.whole("sliding_window_pattern", default=4)
    return _windows_from_types(r, layers, window, lambda i: (i + 1) % every != 0)


def windows_cohere2(r: Reader, layers: int) -> list[int | None]:
    """Cohere-2 (``Cohere2Config``): ``layer_types``, or else every
    ``sliding_window_pattern``-th layer (default 4) is full and the others see the last
    ``sliding_window`` (default 4,096)."""
    every = r.whole("sliding_window_pattern", default=4)
    return _windows_from_types(
        r, layers, _window_size(r, 4096), lambda i: (i + 1) % every != 0
    )


def windows_smollm3(r: Reader, layers: int) -> list[int | None]:
    """SmolLM3 (``SmolLM3Config``): with ``use_sliding_window`` (default false) and a
    ``sliding_window``, the layers without rotary positions (``no_rope_layers``, or
    every ``no_rope_layer_interval``-th, default 4) are windowed; ``layer_types``
    overrides. The attention is windowed only with ``use_sliding_window``, so a
    ``layer_types`` with windowed layers needs it."""
    use = r.flag("use_sliding_window", False)
    window = _window_size(r, None) if use else None
    r.read.update({"sliding_window", "no_rope_layers", "no_rope_layer_interval"})
    found = r.raw(("no_rope_layers",))
    if found is not None:
        value = found[1]
        if not isinstance(value, list) or len(value) != layers:
            raise ValueError(
                f"config field no_rope_layers must list a 0 or 1 for each of the "
                f"{layers} layers, got {short(value)}"
            )
        has_rope = [bool(v) for v in value]
    else:
        every = r.whole("no_rope_layer_interval", default=4)
        has_rope = [(i + 1) % every != 0 for i in range(layers)]
    types = r.layer_list("layer_types", layers, ("full_attention", "sliding_attention"))
    if types and "sliding_attention" in types and window is None:
        raise ValueError(
            "config field layer_types marks windowed layers but use_sliding_window is "
            "false (or sliding_window null): transformers' SmolLM3 attention then sees "
            "every position while its cache keeps a window"
        )
    return _windows_from_types(
        r, layers, window, lambda i: window is not None and not has_rope[i]
    )
