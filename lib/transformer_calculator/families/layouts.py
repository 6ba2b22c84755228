"""Whole-model rules for families whose layers are not one mixer and one feed-forward
part each. Each rule says in its docstring which ``transformers`` code it follows
(``transformers`` 5.24)."""

from __future__ import annotations

from ..anatomy.feedforward import Experts, FeedForward
from ..anatomy.layout import Block, Layout
from ..anatomy.mixers import LatentAttention
from .reader import MAX_LAYERS, Reader

__all__ = ["layout_longcat"]


def layout_longcat(r: Reader) -> Layout:
    """LongCat-Flash (``LongcatFlashDecoderLayer``): each of ``num_layers`` layers runs
    two latent attentions (each caching its own latent), two gated feed-forward parts
    of ``ffn_hidden_size`` and, beside them, a mixture of ``n_routed_experts`` experts
    of ``expert_ffn_hidden_size`` and ``zero_expert_num`` experts that do no work,
    ``moe_topk`` picked a token. Laid out as two blocks a layer: the first carries the
    experts, its feed-forward part their shared expert."""
    layers = r.whole("num_layers", maximum=MAX_LAYERS // 2)
    width = r.whole("hidden_size")
    heads = r.whole("num_attention_heads")
    nope, rope = r.whole("qk_nope_head_dim"), r.whole("qk_rope_head_dim")
    if r.given("qk_head_dim") and r.whole("qk_head_dim") != nope + rope:
        raise ValueError(
            f"config field qk_head_dim={r.cfg['qk_head_dim']!r} is not "
            f"qk_nope_head_dim + qk_rope_head_dim = {nope + rope}: not laid out here"
        )
    r.read.update({"num_key_value_heads", "head_dim", "num_hidden_layers"})
    attention = LatentAttention(
        width=width, heads=heads, kv_rank=r.whole("kv_lora_rank"),
        q_rank=r.whole("q_lora_rank"), nope_dim=nope, rope_dim=rope,
        v_dim=r.whole("v_head_dim"), bias=r.flag("attention_bias", False),
    )
    dense = FeedForward(width, r.whole("ffn_hidden_size", "intermediate_size"), True)
    count = r.whole("n_routed_experts", "num_local_experts")
    per_token = r.whole("moe_topk", "num_experts_per_tok")
    zero = r.whole("zero_expert_num", default=0, minimum=0)
    if per_token > count + zero:
        raise ValueError(
            f"config field moe_topk={per_token} is more than the {count + zero} experts"
        )
    experts = Experts(
        width=width, count=count, per_token=per_token, zero=zero, shared=dense,
        inner=r.whole("expert_ffn_hidden_size", "moe_intermediate_size"),
        router_extra=count + zero if r.flag("router_bias", False) else 0,
    )
    if zero:
        unused = zero * 2 * width * experts.inner * layers
        r.notes.append(
            f"zero_expert_num={zero}: transformers gives each expert that does no work "
            f"a gate and an up matrix ({unused:,} numbers in all), which the published "
            "weights do not hold; they are counted here as transformers builds them"
        )
    norms = 2 * width
    pair = (Block(attention, experts, norms), Block(attention, dense, norms))
    return Layout(
        vocab=r.whole("vocab_size"), width=width, blocks=pair * layers,
        tied=r.flag("tie_word_embeddings", False), final_norm=width, norm_numbers=1,
        norm="RMSNorm", family=r.title,
    )
