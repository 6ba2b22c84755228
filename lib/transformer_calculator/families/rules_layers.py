"""Rules for the other parts of a layer: which layers hold a mixture of experts, which
are running summaries (Mamba) instead of attention, how many normalisations a block has
and how wide the feed-forward part is. Each rule says in its docstring which
``transformers`` code it follows (``transformers`` 5.24)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..feedforward import Experts, FeedForward
from ..mixers import Mamba, Mamba2
from .parts import Flag, resolve
from .reader import Reader, short, whole_field

# --- mixtures of experts -------------------------------------------------------

Ffns = Callable[[Reader, int, int], list[Experts | None]]


def _experts(
    r: Reader,
    width: int,
    count_names: Sequence[str],
    count_default: int | None,
    per_token_default: int | None,
    inner: int,
    **kw: Any,
) -> Experts:
    count = r.whole(*count_names, default=count_default)
    per_token = r.whole("num_experts_per_tok", default=per_token_default)
    if per_token > count:
        raise ValueError(
            f"config field num_experts_per_tok={per_token} is more than "
            f"the {count} experts"
        )
    return Experts(width=width, count=count, per_token=per_token, inner=inner, **kw)


def experts_every_layer(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """Mixtral: every layer holds ``num_local_experts`` (default 8) experts of
    ``intermediate_size``, ``num_experts_per_tok`` (default 2) for each token."""
    e = _experts(
        r,
        width,
        ("num_local_experts", "num_experts"),
        8,
        2,
        r.whole("intermediate_size"),
    )
    return [e] * layers


def experts_granite_shared(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """Granite-MoE-shared (``GraniteMoeSharedDecoderLayer``): experts in every layer as
    Mixtral's, plus a gated shared part of ``shared_intermediate_size`` (none when 0)
    that every token uses."""
    shared = r.whole("shared_intermediate_size", default=0, minimum=0)
    e = _experts(
        r,
        width,
        ("num_local_experts", "num_experts"),
        8,
        2,
        r.whole("intermediate_size"),
        shared=FeedForward(width, shared, gated=True) if shared else None,
    )
    return [e] * layers


def experts_qwen(
    shared: bool, count_default: int, per_token_default: int, inner_default: int
) -> Ffns:
    """Qwen2-MoE and Qwen3-MoE: layers not in ``mlp_only_layers`` and at every
    ``decoder_sparse_step``-th place hold ``num_experts`` experts of
    ``moe_intermediate_size`` (Qwen2-MoE adds a gated shared expert of
    ``shared_expert_intermediate_size``); the other layers have a dense feed-forward
    part of ``intermediate_size``."""

    def rule(r: Reader, layers: int, width: int) -> list[Experts | None]:
        count = r.whole(
            "num_experts", "num_local_experts", default=count_default, minimum=0
        )
        step = r.whole("decoder_sparse_step", default=1)
        dense_only = _index_list(r, "mlp_only_layers", layers)
        if count == 0:
            return [None] * layers
        inner = r.whole("moe_intermediate_size", default=inner_default)
        extra: dict[str, Any] = {}
        if shared:
            extra = {
                "shared": FeedForward(
                    width,
                    r.whole("shared_expert_intermediate_size", default=5632),
                    gated=True,
                ),
                "shared_gate": True,
            }
        e = _experts(
            r,
            width,
            ("num_experts", "num_local_experts"),
            count_default,
            per_token_default,
            inner,
            **extra,
        )
        return [
            None if (i in dense_only or (i + 1) % step) else e for i in range(layers)
        ]

    rule.__doc__ = experts_qwen.__doc__
    return rule


def experts_deepseek(
    count_default: int,
    per_token_default: int | None,
    inner_default: int,
    shared_default: int,
    dense_default: int,
    shared_bias: bool | Flag,
) -> Ffns:
    """DeepSeek-V2/V3: the first ``first_k_dense_replace`` layers are dense; the rest
    hold ``n_routed_experts`` experts of ``moe_intermediate_size``,
    ``num_experts_per_tok`` a token, plus ``n_shared_experts`` shared experts (one
    feed-forward part of their summed width) that every token uses. The router is held
    in float32 (``DeepseekV3TopkRouter``)."""

    def rule(r: Reader, layers: int, width: int) -> list[Experts | None]:
        first_moe = r.whole("first_k_dense_replace", default=dense_default, minimum=0)
        frequency = r.whole("moe_layer_freq", default=1)
        if frequency != 1:
            raise ValueError(
                f"config field moe_layer_freq={frequency}: transformers "
                "puts experts in every "
                "layer after first_k_dense_replace, so a model with gaps "
                "is not built as published"
            )
        inner = r.whole("moe_intermediate_size", default=inner_default)
        n_shared = r.whole("n_shared_experts", default=shared_default, minimum=0)
        shared = (
            FeedForward(
                width, inner * n_shared, gated=True, bias=resolve(shared_bias, r)
            )
            if n_shared
            else None
        )
        e = _experts(
            r,
            width,
            ("n_routed_experts", "num_experts", "num_local_experts"),
            count_default,
            per_token_default,
            inner,
            shared=shared,
            router_float32=True,
        )
        return [None if i < first_moe else e for i in range(layers)]

    rule.__doc__ = experts_deepseek.__doc__
    return rule


def experts_jamba(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """Jamba: layer i holds ``num_experts`` (default 16) experts of
    ``intermediate_size`` when i % ``expert_layer_period`` (default 2) equals
    ``expert_layer_offset`` (default 1)."""
    period = r.whole("expert_layer_period", default=2)
    offset = r.whole("expert_layer_offset", default=1, minimum=0)
    if offset >= period:
        raise ValueError(
            f"config field expert_layer_offset={offset} must be smaller "
            "than "
            f"expert_layer_period={period}"
        )
    count = r.whole("num_experts", "num_local_experts", default=16)
    if count == 1:
        return [None] * layers
    e = _experts(
        r,
        width,
        ("num_experts", "num_local_experts"),
        16,
        2,
        r.whole("intermediate_size"),
    )
    return [e if i % period == offset else None for i in range(layers)]


def _index_list(r: Reader, name: str, layers: int) -> set[int]:
    """The layer numbers config field ``name`` lists (none when absent)."""
    found = r.raw((name,))
    if found is None:
        return set()
    value = found[1]
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < layers
        for v in value
    ):
        raise ValueError(
            f"config field {name} must list layer numbers from 0 to "
            f"{layers - 1}, "
            f"got {short(value)}"
        )
    return set(value)


def _rank(r: Reader, name: str, width: int) -> int:
    """A step-size projection's width: config field ``name``, or ceil(width / 16) when
    it is absent or "auto"."""
    found = r.raw((name,))
    if found is None or found[1] == "auto":
        return math.ceil(width / 16)
    return whole_field(*found)


# --- running-summary (state-space) layers --------------------------------------

Mixers = Callable[[Reader, int, int], list[Mamba | Mamba2 | None]]


def _mamba_jamba(r: Reader, width: int) -> Mamba:
    return Mamba(
        width=width,
        inner=r.whole("mamba_expand", default=2) * width,
        state_size=r.whole("mamba_d_state", default=16),
        conv=r.whole("mamba_d_conv", default=4),
        dt_rank=_rank(r, "mamba_dt_rank", width),
        conv_bias=r.flag("mamba_conv_bias", True),
        proj_bias=r.flag("mamba_proj_bias", False),
        inner_norms=True,
    )


def mixers_jamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Jamba: layer i is attention when i % ``attn_layer_period`` (default 8) equals
    ``attn_layer_offset`` (default 4), a Mamba mixer otherwise."""
    period = r.whole("attn_layer_period", default=8)
    offset = r.whole("attn_layer_offset", default=4, minimum=0)
    if offset >= period:
        raise ValueError(
            f"config field attn_layer_offset={offset} must be smaller "
            f"than attn_layer_period={period}"
        )
    mamba = _mamba_jamba(r, width)
    return [None if i % period == offset else mamba for i in range(layers)]


def mixers_bamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Bamba: the layers listed in ``attn_layer_indices`` are attention, the others
    Mamba-2 mixers of ``mamba_n_heads`` heads (``BambaMixer``)."""
    attention = _index_list(r, "attn_layer_indices", layers)
    expand = r.whole("mamba_expand", default=2)
    inner = expand * width
    heads = r.whole("mamba_n_heads", default=128)
    head = r.raw(("mamba_d_head",))
    head_dim = (
        inner // heads if head is None or head[1] == "auto" else whole_field(*head)
    )
    if head_dim * heads != inner:
        raise ValueError(
            f"config fields mamba_n_heads={heads} and "
            f"mamba_d_head={head_dim} do not make "
            f"mamba_expand * hidden_size = {inner:,} channels"
        )
    groups = r.whole("mamba_n_groups", default=1)
    if heads % groups:
        raise ValueError(
            f"config field mamba_n_groups={groups} does not divide "
            f"mamba_n_heads={heads}"
        )
    mixer = Mamba2(
        width=width,
        inner=inner,
        heads=heads,
        head_dim=head_dim,
        groups=groups,
        state_size=r.whole("mamba_d_state", default=256),
        conv=r.whole("mamba_d_conv", default=4),
        conv_bias=r.flag("mamba_conv_bias", True),
        proj_bias=r.flag("mamba_proj_bias", False),
    )
    return [None if i in attention else mixer for i in range(layers)]


def mixers_mamba(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Mamba: every layer is a Mamba mixer of ``expand * hidden_size`` channels
    (``MambaMixer``)."""
    r.read.add("intermediate_size")  # transformers sets it to expand * hidden_size
    mixer = Mamba(
        width=width,
        inner=r.whole("expand", default=2) * width,
        state_size=r.whole("state_size", default=16),
        conv=r.whole("conv_kernel", default=4),
        dt_rank=_rank(r, "time_step_rank", width),
        conv_bias=r.flag("use_conv_bias", True),
        proj_bias=r.flag("use_bias", False),
    )
    return [mixer] * layers


def mixers_mamba2(r: Reader, layers: int, width: int) -> list[Mamba | Mamba2 | None]:
    """Mamba-2 (``Mamba2Mixer``): every layer is a Mamba-2 mixer of ``num_heads`` heads
    of ``head_dim`` channels, ``expand * hidden_size`` in all, B and C in ``n_groups``
    groups of ``state_size`` (``time_step_rank`` is not used)."""
    r.read.update({"intermediate_size", "time_step_rank"})
    inner = r.whole("expand", default=2) * width
    heads = r.whole("num_heads", default=128)
    head_dim = r.whole("head_dim", default=64)
    groups = r.whole("n_groups", default=8)
    if heads * head_dim != inner or heads % groups:
        raise ValueError(
            f"config fields num_heads={heads}, head_dim={head_dim} and "
            f"n_groups={groups} "
            f"do not make expand * hidden_size = {inner:,} channels in whole groups"
        )
    mixer = Mamba2(
        width=width, inner=inner, heads=heads, head_dim=head_dim, groups=groups,
        state_size=r.whole("state_size", default=128),
        conv=r.whole("conv_kernel", default=4),
        conv_bias=r.flag("use_conv_bias", True), proj_bias=r.flag("use_bias", False),
    )
    return [mixer] * layers


# --- normalisations and widths --------------------------------------------------------


def norms_falcon(r: Reader) -> int:
    """Falcon (``FalconDecoderLayer``): two norms, except with ``parallel_attn``
    (default true), where there is one unless ``num_ln_in_parallel_attn`` is 2 (the
    default for the new decoder architecture)."""
    new = r.flag("new_decoder_architecture", False)
    if not r.flag("parallel_attn", True):
        r.read.add("num_ln_in_parallel_attn")  # only used with parallel attention
        return 2
    n = r.whole(
        "num_ln_in_parallel_attn",
        default=2 if new else 1,
        why="2 with the new decoder architecture, 1 otherwise",
    )
    if n not in (1, 2):
        raise ValueError(
            f"config field num_ln_in_parallel_attn must be 1 or 2, got {n}"
        )
    return n


def norms_parallel_flag(r: Reader) -> int:
    """StableLM: one norm with ``use_parallel_residual`` (default false), two
    otherwise."""
    return 1 if r.flag("use_parallel_residual", False) else 2


def norm_opt(r: Reader) -> int:
    """OPT: LayerNorm with a scale and a bias, or none if
    ``layer_norm_elementwise_affine`` is false."""
    return 2 if r.flag("layer_norm_elementwise_affine", True) else 0


def final_norm_opt(r: Reader) -> bool:
    """OPT: a final norm only with ``do_layer_norm_before`` (default true) and without
    the old ``_remove_final_layer_norm``."""
    return r.flag("do_layer_norm_before", True) and not r.flag(
        "_remove_final_layer_norm", False
    )


def width_field(*names: str, four_times: bool = False) -> Callable[[Reader, int], int]:
    """The feed-forward width from ``names``; with ``four_times``, absent or null means
    4 x the width."""

    def rule(r: Reader, width: int) -> int:
        if four_times and not r.given(*names):
            r.notes.append(
                f"{names[0]} not given or null: using four times "
                f"hidden_size = {4 * width:,} "
                f"(the {r.title} rule)"
            )
            return 4 * width
        return r.whole(*names)

    return rule


def width_four_times(r: Reader, width: int) -> int:
    """BLOOM: the feed-forward width is always four times the model's width."""
    return 4 * width
