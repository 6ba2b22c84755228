"""Rules for mixtures of experts: which layers hold experts, how many, how wide, and
what every token uses beside them (shared experts, a router held in float32). Each rule
says in its docstring which ``transformers`` code it follows (``transformers``
5.24)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ..anatomy.attention_kinds import MixtureOfAttention
from ..anatomy.feedforward import Experts, FeedForward
from .parts import Flag, resolve
from .reader import Reader, whole_field
from .rules_layers import index_list

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


def experts_gpt_oss(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """gpt-oss (``GptOssMLP``): every layer holds ``num_local_experts`` (default 128)
    experts of ``intermediate_size``, ``num_experts_per_tok`` (default 4) a token, each
    expert's matrices with biases, and a router with a bias (one number an expert)."""
    e = _experts(
        r,
        width,
        ("num_local_experts", "num_experts"),
        128,
        4,
        r.whole("intermediate_size"),
        bias=True,
    )
    return [dataclasses.replace(e, router_extra=e.count)] * layers


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


def experts_granite_hybrid(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """Granite 4.0 hybrid (``GraniteMoeHybridDecoderLayer``): with ``num_local_experts``
    above 0, every layer holds that many experts of ``intermediate_size`` beside the
    gated shared part of ``shared_intermediate_size`` every token uses; with 0, the
    shared part alone is the layer's feed-forward part."""
    count = r.whole("num_local_experts", "num_experts", default=8, minimum=0)
    if count == 0:
        r.read.update({"num_experts_per_tok", "intermediate_size"})
        return [None] * layers
    return experts_granite_shared(r, layers, width)


def experts_dbrx(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """DBRX (``DbrxFFN``): every layer holds ``ffn_config.moe_num_experts`` gated
    experts of ``ffn_config.ffn_hidden_size``, ``ffn_config.moe_top_k`` a token, and a
    router without bias."""
    f = r.sub("ffn_config")
    count = f.whole("moe_num_experts")
    per_token = f.whole("moe_top_k")
    if per_token > count:
        raise ValueError(
            f"config field ffn_config.moe_top_k={per_token} is more than the {count} "
            "experts"
        )
    e = Experts(width=width, count=count, per_token=per_token,
                inner=f.whole("ffn_hidden_size"))
    return [e] * layers


def experts_jetmoe(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """JetMoE (``JetMoeMoE``): every layer holds ``num_local_experts`` gated experts of
    ``intermediate_size``, ``num_experts_per_tok`` a token, a router without bias and an
    output bias every token uses."""
    e = _experts(r, width, ("num_local_experts",), None, None,
                 r.whole("intermediate_size"), router_extra=width)
    return [e] * layers


def mixers_jetmoe(r: Reader, layers: int, width: int) -> list:
    """JetMoE (``JetMoeAttention``): every layer's attention is a mixture of
    ``num_local_experts`` query experts of ``num_key_value_heads`` heads of
    ``kv_channels``, ``num_experts_per_tok`` a token; transformers sets
    ``num_attention_heads`` to their product."""
    count = r.whole("num_local_experts")
    per_token = r.whole("num_experts_per_tok")
    kv = r.whole("num_key_value_heads")
    if per_token > count:
        raise ValueError(
            f"config field num_experts_per_tok={per_token} is more than the {count} "
            "experts"
        )
    given = r.given("num_attention_heads")
    if given and r.whole("num_attention_heads") != kv * per_token:
        raise ValueError(
            f"config field num_attention_heads={r.cfg['num_attention_heads']!r} is not "
            f"num_key_value_heads x num_experts_per_tok = {kv * per_token}, which "
            "transformers' JetMoE uses"
        )
    return [MixtureOfAttention(width, count, per_token, kv,
                               r.whole("kv_channels"))] * layers


def experts_ernie(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """ERNIE-4.5-MoE (``Ernie4_5_MoeDecoderLayer``): layer i holds ``moe_num_experts``
    experts of ``moe_intermediate_size``, ``moe_k`` a token, when (i + 1) is a multiple
    of ``moe_layer_interval`` and i lies from ``moe_layer_start_index`` to
    ``moe_layer_end_index`` (-1: the last layer); ``moe_num_shared_experts`` shared
    experts make one part of their summed width, with biases if ``use_bias``. The
    router and its score-correction bias (one a expert) are held in float32."""
    count = r.whole("moe_num_experts", "num_experts", default=64)
    per_token = r.whole("moe_k", "num_experts_per_tok", default=6)
    if per_token > count:
        raise ValueError(
            f"config field moe_k={per_token} is more than the {count} experts"
        )
    inner = r.whole("moe_intermediate_size", default=1536)
    n_shared = r.whole("moe_num_shared_experts", default=2, minimum=0)
    start = r.whole("moe_layer_start_index", default=1, minimum=0)
    interval = r.whole("moe_layer_interval", default=1)
    found = r.raw(("moe_layer_end_index",))
    end = -1 if found is None or found[1] == -1 else whole_field(*found, minimum=0)
    end = layers - 1 if end == -1 else end
    bias = r.flag("use_bias", False)
    shared = FeedForward(width, inner * n_shared, gated=True, bias=bias)
    e = Experts(width=width, count=count, per_token=per_token, inner=inner,
                shared=shared if n_shared else None, router_float32=True,
                router_extra=count)
    return [e if (i + 1) % interval == 0 and start <= i <= end else None
            for i in range(layers)]


def experts_qwen(shared: bool) -> Ffns:
    """Qwen2-MoE and Qwen3-MoE: layers not in ``mlp_only_layers`` and at every
    ``decoder_sparse_step``-th place hold ``num_experts`` experts of
    ``moe_intermediate_size`` (Qwen2-MoE adds a gated shared expert of
    ``shared_expert_intermediate_size``); the other layers have a dense feed-forward
    part of ``intermediate_size``. Every default is the family's class default."""

    def rule(r: Reader, layers: int, width: int) -> list[Experts | None]:
        count = r.whole("num_experts", "num_local_experts", minimum=0)
        step = r.whole("decoder_sparse_step", default=1)
        dense_only = index_list(r, "mlp_only_layers", layers)
        if count == 0:
            return [None] * layers
        inner = r.whole("moe_intermediate_size")
        extra: dict[str, Any] = {}
        if shared:
            extra = {
                "shared": FeedForward(
                    width,
                    r.whole("shared_expert_intermediate_size"),
                    gated=True,
                ),
                "shared_gate": True,
            }
        e = _experts(
            r, width, ("num_experts", "num_local_experts"), None, None, inner, **extra
        )
        return [
            None if (i in dense_only or (i + 1) % step) else e for i in range(layers)
        ]

    rule.__doc__ = experts_qwen.__doc__
    return rule


def experts_deepseek(shared_bias: bool | Flag) -> Ffns:
    """DeepSeek-V2/V3: the first ``first_k_dense_replace`` layers are dense; the rest
    hold ``n_routed_experts`` experts of ``moe_intermediate_size``,
    ``num_experts_per_tok`` a token, plus ``n_shared_experts`` shared experts (one
    feed-forward part of their summed width) that every token uses. The router is held
    in float32 (``DeepseekV3TopkRouter``)."""

    def rule(r: Reader, layers: int, width: int) -> list[Experts | None]:
        first_moe = r.whole("first_k_dense_replace", minimum=0)
        frequency = r.whole("moe_layer_freq", default=1)
        if frequency != 1:
            raise ValueError(
                f"config field moe_layer_freq={frequency}: transformers "
                "puts experts in every "
                "layer after first_k_dense_replace, so a model with gaps "
                "is not built as published"
            )
        inner = r.whole("moe_intermediate_size")
        n_shared = r.whole("n_shared_experts", minimum=0)
        shared = (
            FeedForward(
                width, inner * n_shared, gated=True, bias=resolve(shared_bias, r)
            )
            if n_shared
            else None
        )
        e = _experts(
            r, width, ("n_routed_experts", "num_experts", "num_local_experts"), None,
            None, inner, shared=shared, router_float32=True,
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


