"""Rules for two kinds of layer that read less than every earlier token: Qwen3-Next's
and Qwen3.5's Gated DeltaNet layers (a fixed memory a head, three to each attention
layer) and DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5). Each rule says
in its docstring which ``transformers`` code it follows (``transformers`` 5.24)."""

from __future__ import annotations

import dataclasses

from ..anatomy.attention_kinds import SparseLatentAttention
from ..anatomy.feedforward import Experts, FeedForward
from ..anatomy.mixers import LatentAttention
from ..anatomy.recurrent import GatedDeltaNet
from .reader import Reader, short
from .rules_experts import Ffns, _experts, experts_deepseek

__all__ = ["sparse_latent", "mixers_qwen_next", "experts_qwen3_5",
           "indexers_every_layer", "indexers_glm", "experts_deepseek_v32"]


def _layer_types(r: Reader, layers: int) -> list[str]:
    """``layer_types``, or else (``Qwen3NextConfig``) every
    ``full_attention_interval``-th layer (default 4) full attention and the others
    linear attention."""
    types = r.layer_list("layer_types", layers, ("linear_attention", "full_attention"))
    if types is not None:
        r.read.add("full_attention_interval")
        return types
    every = r.whole("full_attention_interval", default=4)
    return ["linear_attention" if (i + 1) % every else "full_attention"
            for i in range(layers)]


def mixers_qwen_next(r: Reader, layers: int, width: int) -> list:
    """Qwen3-Next and Qwen3.5 (``Qwen3NextGatedDeltaNet``, ``Qwen3_5GatedDeltaNet``):
    each linear-attention layer a Gated DeltaNet of ``linear_num_key_heads`` heads of
    ``linear_key_head_dim`` and ``linear_num_value_heads`` of
    ``linear_value_head_dim``, after a filter of ``linear_conv_kernel_dim`` tokens; the
    full-attention layers attention."""
    key_heads = r.whole("linear_num_key_heads")
    value_heads = r.whole("linear_num_value_heads")
    if value_heads % key_heads:
        raise ValueError(
            f"config field linear_num_value_heads={value_heads} is not a multiple of "
            f"linear_num_key_heads={key_heads}: transformers shares each key head "
            "among a whole number of value heads"
        )
    mixer = GatedDeltaNet(
        width=width, key_heads=key_heads, key_dim=r.whole("linear_key_head_dim"),
        value_heads=value_heads, value_dim=r.whole("linear_value_head_dim"),
        conv=r.whole("linear_conv_kernel_dim"),
    )
    return [mixer if t == "linear_attention" else None for t in _layer_types(r, layers)]


def experts_qwen3_5(r: Reader, layers: int, width: int) -> list[Experts | None]:
    """Qwen3.5-MoE (``Qwen3_5MoeDecoderLayer``): every layer holds ``num_experts``
    experts of ``moe_intermediate_size`` and a gated shared expert of
    ``shared_expert_intermediate_size`` (the class drops ``mlp_only_layers`` and
    ``decoder_sparse_step``: no layer is dense)."""
    r.read.update({"mlp_only_layers", "decoder_sparse_step", "intermediate_size"})
    shared = FeedForward(width, r.whole("shared_expert_intermediate_size"), gated=True)
    e = _experts(r, width, ("num_experts",), None, None,
                 r.whole("moe_intermediate_size"), shared=shared, shared_gate=True)
    return [e] * layers


def experts_deepseek_v32(shared_bias: bool) -> Ffns:
    """DeepSeek-V3.2 and GLM-5 (``DeepseekV32DecoderLayer``): DeepSeek-V3's experts,
    in the layers ``mlp_layer_types`` marks sparse when the file lists them (else
    after the first ``first_k_dense_replace``)."""
    base = experts_deepseek(shared_bias)

    def rule(r: Reader, layers: int, width: int) -> list[Experts | None]:
        types = r.layer_list("mlp_layer_types", layers, ("dense", "sparse"))
        if types is None:
            return base(r, layers, width)
        found = [x for x in base(r, layers, width) if x is not None]
        if not found:
            raise ValueError(
                "config field first_k_dense_replace makes every layer dense while "
                "mlp_layer_types lists sparse ones: the experts' sizes are not counted "
                "from such a file")
        return [found[0] if t == "sparse" else None for t in types]

    rule.__doc__ = experts_deepseek_v32.__doc__
    return rule


def indexers_every_layer(r: Reader, layers: int) -> list[bool]:
    """DeepSeek-V3.2 (``DeepseekV32Attention``): every layer runs its own indexer."""
    return [True] * layers


def _setting(r: Reader, name: str, default: int) -> int:
    """A whole-number setting transformers takes from the file's extra fields (not a
    field of its config class, so no default is noted)."""
    r.read.add(name)
    value = r.cfg.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"config field {name} must be a whole number, got "
                         f"{short(value)}")
    return value


def indexers_glm(r: Reader, layers: int) -> list[bool]:
    """GLM-5 (``GlmMoeDsaConfig``): ``indexer_types`` ("full" runs the indexer,
    "shared" reuses the previous full layer's choice), else ``index_topk_pattern`` ("F"
    and "S"), else layer i runs its own when max(i - ``index_skip_topk_offset`` + 1, 0)
    is a multiple of ``index_topk_freq`` (defaults 2 and 1: every layer)."""
    types = r.layer_list("indexer_types", layers, ("full", "shared"))
    r.read.add("index_topk_pattern")
    if types is None:
        pattern = r.cfg.get("index_topk_pattern")
        if pattern is not None:
            if (not isinstance(pattern, (str, list)) or len(pattern) != layers
                    or not all(c in ("F", "S", "full", "shared") for c in pattern)):
                raise ValueError(
                    f"config field index_topk_pattern must give F or S for each of the "
                    f"{layers} layers, got {short(pattern)}")
            types = ["full" if c in ("F", "full") else "shared" for c in pattern]
        else:
            freq = max(_setting(r, "index_topk_freq", 1), 1)
            offset = _setting(r, "index_skip_topk_offset", 2)
            types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared"
                     for i in range(layers)]
    if types and types[0] == "shared":
        raise ValueError("config field indexer_types: the first layer cannot reuse a "
                         "previous layer's choice (transformers then has none to "
                         "reuse)")
    return [t == "full" for t in types]


def sparse_latent(r: Reader, part: LatentAttention,
                  own: list[bool]) -> list[SparseLatentAttention]:
    """DeepSeek Sparse Attention (``DeepseekV32Indexer``): each layer's latent
    attention ``part`` with an indexer of ``index_n_heads`` heads of
    ``index_head_dim`` choosing ``index_topk`` tokens a query, its own where ``own``
    says so. The indexer's queries come from the compressed query, so a file without
    ``q_lora_rank`` is refused."""
    if part.q_rank is None:
        raise ValueError("config field q_lora_rank is null: DeepSeek Sparse "
                         "Attention's indexer projects its queries from the "
                         "compressed query")
    fields = {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}
    index = {"index_heads": r.whole("index_n_heads"),
             "index_dim": r.whole("index_head_dim"), "topk": r.whole("index_topk")}
    kinds = {flag: SparseLatentAttention(**fields, **index, own_indexer=flag)
             for flag in (True, False)}
    return [kinds[flag] for flag in own]
