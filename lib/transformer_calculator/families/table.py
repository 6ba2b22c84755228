"""The families the calculator reads, one ``Family`` entry each: data, no code.

Every entry gives the family's own field names and the layout of its blocks (norms,
biases, position table, attention kind, windowed layers, experts, running-summary
layers), naming a rule from ``rules_attention.py`` or ``rules_layers.py`` where a part
is more than a switch. The defaults its ``transformers`` config class uses for fields a
file leaves out are not written here: they are read from the shipped catalogue
(``catalog.py``), made from ``transformers`` itself. The reference is ``transformers``
5.24.
"""
from __future__ import annotations

from .family import GPT2_NAMES, LLAMA_NAMES, Family
from .parts import Flag, QKNorm
from .rules_attention import (
    head_dim_fixed, head_dim_from_field, head_dim_required, kv_all_heads, kv_dbrx,
    kv_falcon,
    kv_from_field, kv_multi_query_flag, kv_required, windows_all, windows_alternating,
    windows_cohere2, windows_exaone4, windows_gemma3, windows_gpt_oss,
    windows_ministral, windows_olmo3,
    windows_qwen2, windows_qwen2_moe, windows_qwen3_moe, windows_smollm3,
)
from .rules_experts import (
    experts_dbrx, experts_deepseek, experts_ernie, experts_every_layer,
    experts_gpt_oss,
    experts_granite_hybrid, experts_granite_shared, experts_jamba, experts_jetmoe,
    experts_qwen, mixers_jetmoe,
)
from .layouts import layout_longcat
from .rules_sparse import (
    experts_deepseek_v32, experts_qwen3_5, indexers_every_layer, indexers_glm,
    mixers_qwen_next,
)
from .rules_recurrent import (
    dense_recurrent_gemma, dense_rwkv, dense_xlstm, mixers_recurrent_gemma, mixers_rwkv,
    mixers_xlstm, norms_xlstm, windows_recurrent_gemma,
)
from .rules_layers import (
    final_norm_opt, mixers_bamba, mixers_granite_hybrid, mixers_jamba, mixers_mamba,
    mixers_mamba2, norm_opt, norms_falcon, norms_parallel_flag, width_field,
    width_four_times,
)

__all__ = ["FAMILIES", "GENERIC", "REFUSED_TYPES", "STRUCTURE_FIELDS"]

_LLAMA_BIAS = Flag("attention_bias", False)
_CROSS_ATTENTION = {
    "add_cross_attention": "cross-attention layers belong to an encoder-decoder"}

_QWEN_NEXT = {"kv_heads": kv_from_field(), "head_dim": head_dim_from_field(),
              "qkv_bias": _LLAMA_BIAS, "out_bias": _LLAMA_BIAS,
              "qk_norm": QKNorm("head"), "out_gate": True, "mixers": mixers_qwen_next}
"""What Qwen3-Next and Qwen3.5 share: Gated DeltaNet layers beside attention whose
output is gated, its queries and keys normalised per head."""

_QWEN3_5_UNCOUNTED = ("attn_output_gate", "mamba_ssm_dtype",
                      "mtp_use_dedicated_embeddings")
"""Qwen3.5's fields transformers' model does not read (its output gate is always there;
the multi-token-prediction layers are not built)."""

FAMILIES: tuple[Family, ...] = (
    Family("Llama", ("llama",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           mlp_bias=Flag("mlp_bias", False),
           summary=("pre-norm blocks with two RMSNorms, a gated feed-forward part, "
                    "rotary positions")),
    Family("Granite", ("granite",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           mlp_bias=Flag("mlp_bias", False),
           summary="the Llama layout with scaling factors that change no count"),
    Family("Mistral", ("mistral",), windows=windows_all,
           summary=("the Llama layout without biases; every layer windowed when "
                    "sliding_window is set")),
    Family("Mixtral", ("mixtral",), windows=windows_all,
           experts=experts_every_layer,
           summary="the Mistral layout with a mixture of experts in every layer"),
    Family("Qwen2", ("qwen2",), kv_heads=kv_from_field(), qkv_bias=True,
           windows=windows_qwen2,
           summary=("the Llama layout with biases on the query, key and value "
                    "projections")),
    Family("Qwen2-MoE", ("qwen2_moe",), kv_heads=kv_from_field(),
           qkv_bias=Flag("qkv_bias", True), windows=windows_qwen2_moe,
           experts=experts_qwen(True),
           summary="Qwen2 with experts and a gated shared expert"),
    Family("Qwen3", ("qwen3",), kv_heads=kv_from_field(),
           head_dim=head_dim_from_field(), qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, qk_norm=QKNorm("head"), windows=windows_qwen2,
           summary="the Llama layout with queries and keys normalised per head"),
    Family("Qwen3-MoE", ("qwen3_moe",), kv_heads=kv_from_field(), qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, qk_norm=QKNorm("head"), windows=windows_qwen3_moe,
           experts=experts_qwen(False),
           summary="Qwen3 with a mixture of experts"),
    Family("Gemma", ("gemma",), kv_heads=kv_from_field(),
           head_dim=head_dim_from_field(), qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, tied=True,
           summary="the Llama layout with tied embeddings and a GELU gate"),
    Family("Gemma-2", ("gemma2",), kv_heads=kv_from_field(),
           head_dim=head_dim_from_field(), qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, tied=True, norms_per_layer=4,
           windows=windows_alternating,
           summary="four RMSNorms a layer; windowed and full layers alternate"),
    Family("Gemma-3", ("gemma3_text",), kv_heads=kv_from_field(),
           head_dim=head_dim_from_field(), qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, tied=True, norms_per_layer=4, qk_norm=QKNorm("head"),
           windows=windows_gemma3,
           summary=("four RMSNorms a layer, queries and keys normalised; most layers "
                    "windowed")),
    Family("Phi", ("phi",), qkv_bias=True, out_bias=True, gated=False, mlp_bias=True,
           norm="layer", norms_per_layer=1, head_bias=True,
           head_dim=head_dim_from_field(),
           qk_norm=QKNorm("head", per_channel=2, flag=Flag("qk_layernorm", False)),
           summary=("parallel attention and feed-forward after one LayerNorm; biases "
                    "everywhere")),
    Family("Phi-3", ("phi3",), windows=windows_all,
           summary=("the Llama layout with fused projections; every layer windowed "
                    "when sliding_window is set")),
    Family("GPT-2", ("gpt2",), names=GPT2_NAMES, kv_heads=kv_all_heads,
           head_dim=head_dim_fixed, ffn_width=width_field("n_inner", four_times=True),
           gated=False, norm="layer", qkv_bias=True, out_bias=True, mlp_bias=True,
           positions=("n_positions", "max_position_embeddings"),
           tied=True, refuse_if_true=_CROSS_ATTENTION,
           summary=("LayerNorm blocks with biases everywhere and a learned position "
                    "table")),
    Family("GPT-J", ("gptj",), names=GPT2_NAMES, kv_heads=kv_all_heads,
           head_dim=head_dim_fixed, ffn_width=width_field("n_inner", four_times=True),
           gated=False, norm="layer", norms_per_layer=1, mlp_bias=True, head_bias=True,
           no_count=("n_positions",),
           summary=("parallel attention and feed-forward after one LayerNorm; the "
                    "head has a bias")),
    Family("GPT-NeoX", ("gpt_neox",), kv_heads=kv_all_heads, head_dim=head_dim_fixed,
           gated=False, norm="layer", qkv_bias=Flag("attention_bias", True),
           out_bias=Flag("attention_bias", True), mlp_bias=True,
           no_count=("use_parallel_residual",),
           summary="LayerNorm blocks with biases (Pythia)"),
    Family("Falcon", ("falcon",),
           names={**LLAMA_NAMES, "width": ("hidden_size", "n_embed")},
           kv_heads=kv_falcon, head_dim=head_dim_fixed,
           ffn_width=width_field("ffn_hidden_size", four_times=True), gated=False,
           norm="layer", norms_per_layer=norms_falcon, qkv_bias=Flag("bias", False),
           out_bias=Flag("bias", False), mlp_bias=Flag("bias", False), tied=True,
           stores_every_head=lambda r: r.flag("new_decoder_architecture", False),
           summary=("parallel attention and feed-forward; multi-query or grouped "
                    "attention")),
    Family("BLOOM", ("bloom",),
           names={"layers": ("n_layer", "num_hidden_layers"),
                  "width": ("hidden_size", "n_embed"),
                  "heads": ("n_head", "num_attention_heads")}, kv_heads=kv_all_heads,
           head_dim=head_dim_fixed, ffn_width=width_four_times, gated=False,
           norm="layer", qkv_bias=True, out_bias=True, mlp_bias=True,
           embedding_norm=True, tied=True,
           summary=("LayerNorm blocks with biases, a LayerNorm after the embeddings, "
                    "ALiBi positions")),
    Family("OPT", ("opt",), kv_heads=kv_all_heads, head_dim=head_dim_fixed,
           ffn_width=width_field("ffn_dim"), gated=False, norm=norm_opt,
           final_norm=final_norm_opt, qkv_bias=Flag("enable_bias", True),
           out_bias=Flag("enable_bias", True), mlp_bias=Flag("enable_bias", True),
           positions=("max_position_embeddings",),
           position_offset=2, embedding_width=("word_embed_proj_dim",), tied=True,
           summary=("LayerNorm blocks with biases and a learned position table of "
                    "max_position_embeddings + 2 rows")),
    Family("GPT (OpenAI GPT-1)", ("openai-gpt",), names=GPT2_NAMES,
           kv_heads=kv_all_heads, head_dim=head_dim_fixed, ffn_width=width_four_times,
           gated=False, norm="layer", final_norm=False, qkv_bias=True, out_bias=True,
           mlp_bias=True, positions=("n_positions",), tied=True, keeps_no_cache=True,
           no_count=("afn",),
           summary=("LayerNorms after attention and the feed-forward part, biases "
                    "everywhere, a learned position table, no final norm")),
    Family("BioGPT", ("biogpt",), kv_heads=kv_all_heads, head_dim=head_dim_fixed,
           gated=False, norm="layer", qkv_bias=True, out_bias=True, mlp_bias=True,
           positions=("max_position_embeddings",), position_offset=2, tied=True,
           no_count=("scale_embedding", "layerdrop"),
           summary=("LayerNorm blocks with biases and a learned position table of "
                    "max_position_embeddings + 2 rows")),
    Family("StarCoder (GPT-BigCode)", ("gpt_bigcode",), names=GPT2_NAMES,
           kv_heads=kv_multi_query_flag, head_dim=head_dim_fixed,
           ffn_width=width_field("n_inner", four_times=True), gated=False, norm="layer",
           qkv_bias=True, out_bias=True, mlp_bias=True,
           positions=("n_positions", "max_position_embeddings"),
           tied=True, refuse_if_true=_CROSS_ATTENTION,
           summary="GPT-2 blocks with multi-query attention"),
    Family("StarCoder2", ("starcoder2",), kv_heads=kv_from_field(), gated=False,
           norm="layer", qkv_bias=Flag("use_bias", True),
           out_bias=Flag("use_bias", True), mlp_bias=Flag("use_bias", True), tied=True,
           windows=windows_all,
           summary="LayerNorm blocks with biases and grouped attention"),
    Family("StableLM", ("stablelm",), kv_heads=kv_from_field(),
           head_dim=head_dim_fixed, norm="layer", norms_per_layer=norms_parallel_flag,
           qkv_bias=Flag("use_qkv_bias", False),
           qk_norm=QKNorm("every head", flag=Flag("qk_layernorm", False)),
           summary="LayerNorm blocks with a gated feed-forward part"),
    Family("OLMo", ("olmo",), norm="fixed", qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           summary="the Llama layout with LayerNorms that have no trainable numbers"),
    Family("OLMo-2", ("olmo2",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           qk_norm=QKNorm("every head"),
           summary=("norms after attention and after the feed-forward part; queries "
                    "and keys normalised")),
    Family("Cohere (Command-R)", ("cohere",), norm="scale", norms_per_layer=1,
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           qk_norm=QKNorm("every head", flag=Flag("use_qk_norm", False)), tied=True,
           summary=("parallel attention and feed-forward after one LayerNorm without "
                    "bias")),
    Family("DeepSeek-V2", ("deepseek_v2",), latent=True,
           mlp_bias=Flag("mlp_bias", False),
           experts=experts_deepseek(Flag("mlp_bias", False)),
           summary="latent attention and experts with shared experts"),
    Family("DeepSeek-V3", ("deepseek_v3",), latent=True,
           experts=experts_deepseek(False),
           summary="latent attention and experts with a shared expert"),
    Family("DeepSeek-V3.2", ("deepseek_v32",), latent=True,
           indexers=indexers_every_layer, experts=experts_deepseek_v32(False),
           summary=("DeepSeek-V3's layout with sparse attention: a lightning indexer "
                    "picks the tokens each query reads")),
    Family("GLM-5 (GLM-MoE-DSA)", ("glm_moe_dsa",), latent=True,
           indexers=indexers_glm, experts=experts_deepseek_v32(False),
           no_count=("indexer_rope_interleave", "rope_interleave"),
           summary=("latent attention with DeepSeek's sparse attention (an indexer "
                    "a layer, or the last one's) and experts with a shared expert")),
    Family("Qwen3-Next", ("qwen3_next",), **_QWEN_NEXT, experts=experts_qwen(True),
           summary=("three Gated DeltaNet layers to each attention layer (its output "
                    "gated), experts with a gated shared expert")),
    Family("Qwen3.5", ("qwen3_5_text",), **_QWEN_NEXT, no_count=_QWEN3_5_UNCOUNTED,
           summary=("three Gated DeltaNet layers to each attention layer (its output "
                    "gated), gated feed-forward parts")),
    Family("Qwen3.5-MoE", ("qwen3_5_moe_text",), **_QWEN_NEXT, experts=experts_qwen3_5,
           no_count=_QWEN3_5_UNCOUNTED,
           summary=("three Gated DeltaNet layers to each attention layer (its output "
                    "gated), experts with a gated shared expert in every layer")),
    Family("gpt-oss", ("gpt_oss",), qkv_bias=Flag("attention_bias", True),
           out_bias=Flag("attention_bias", True), sinks=True, float32_norms=True,
           windows=windows_gpt_oss, experts=experts_gpt_oss,
           no_count=("swiglu_limit", "swiglu_alpha", "experts_per_token",
                     "initial_context_length"),
           summary=("biases on every projection and expert, a learned sink a head, "
                    "windowed and full layers alternating, experts in every layer, "
                    "normalisations in float32")),
    Family("MiniMax-M2", ("minimax_m2",), head_dim=head_dim_from_field(128),
           qk_norm=QKNorm("every head"), experts=experts_every_layer,
           no_count=("use_qk_norm", "qk_norm_type", "use_routing_bias", "use_mtp",
                     "mtp_transformer_layers", "num_mtp_modules", "scoring_func",
                     "rotary_dim", "partial_rotary_factor",
                     "shared_intermediate_size"),
           summary=("attention with its queries and keys normalised across every "
                    "head, experts in every layer")),
    Family("Jamba", ("jamba",), kv_heads=kv_from_field(), mixers=mixers_jamba,
           experts=experts_jamba,
           summary=("Mamba layers with an attention layer every few, experts every "
                    "other layer")),
    Family("Bamba", ("bamba",), kv_heads=kv_from_field(), mixers=mixers_bamba,
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, mlp_bias=Flag("mlp_bias", False),
           summary="Mamba-2 layers with a few attention layers"),
    Family("SmolLM3", ("smollm3",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           mlp_bias=Flag("mlp_bias", False), windows=windows_smollm3,
           summary=("the Llama layout; every fourth layer has no rotary positions and "
                    "may be windowed")),
    Family("Ministral", ("ministral",), head_dim=head_dim_required,
           windows=windows_ministral,
           summary="the Mistral layout, with windows layer by layer (layer_types)"),
    Family("Ministral-3", ("ministral3",), head_dim=head_dim_from_field(),
           windows=windows_all,
           summary=("the Mistral layout with head_dim; windowed when sliding_window is "
                    "set")),
    Family("Seed-OSS", ("seed_oss",), head_dim=head_dim_from_field(),
           qkv_bias=Flag("attention_bias", True),
           out_bias=Flag("attention_out_bias", False),
           mlp_bias=Flag("mlp_bias", False),
           summary=("the Llama layout with biases on the query, key and value "
                    "projections")),
    Family("GLM", ("glm",), head_dim=head_dim_from_field(),
           qkv_bias=Flag("attention_bias", True),
           summary=("the Llama layout with query, key and value biases and a fused "
                    "gate")),
    Family("GLM-4", ("glm4",), head_dim=head_dim_from_field(),
           qkv_bias=Flag("attention_bias", True), norms_per_layer=4,
           summary=("GLM with four RMSNorms a layer (after attention and the "
                    "feed-forward part too)")),
    Family("OLMo-3", ("olmo3",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           qk_norm=QKNorm("every head"), windows=windows_olmo3,
           summary="OLMo-2 with three windowed layers to each full one"),
    Family("ERNIE-4.5", ("ernie4_5",), head_dim=head_dim_from_field(),
           qkv_bias=Flag("use_bias", False), out_bias=Flag("use_bias", False),
           mlp_bias=Flag("use_bias", False),
           summary="the Llama layout, with biases everywhere when use_bias is set"),
    Family("ERNIE-4.5-MoE", ("ernie4_5_moe",), head_dim=head_dim_from_field(),
           qkv_bias=Flag("use_bias", False), out_bias=Flag("use_bias", False),
           mlp_bias=Flag("use_bias", False), head_bias=Flag("use_bias", False),
           experts=experts_ernie,
           summary=("ERNIE-4.5 with experts and shared experts from "
                    "moe_layer_start_index on")),
    Family("EXAONE-4", ("exaone4",), head_dim=head_dim_from_field(),
           qk_norm=QKNorm("head"),
           windows=windows_exaone4,
           summary=("norms after attention and the feed-forward part, queries and keys "
                    "normalised; three windowed layers to each full one")),
    Family("Cohere-2", ("cohere2",), head_dim=head_dim_fixed, norm="scale",
           norms_per_layer=1, qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, tied=True,
           windows=windows_cohere2,
           summary=("parallel attention and feed-forward after one LayerNorm without "
                    "bias; three windowed layers to each full one")),
    Family("HunYuan dense", ("hunyuan_v1_dense",), head_dim=head_dim_required,
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, qk_norm=QKNorm("head"),
           summary="the Llama layout with queries and keys normalised per head"),
    Family("Nemotron", ("nemotron",), kv_heads=kv_required,
           head_dim=head_dim_from_field(),
           gated=False, norm="layer", qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           mlp_bias=Flag("mlp_bias", False),
           summary="LayerNorm blocks with a plain feed-forward part (squared ReLU)"),
    Family("Arcee", ("arcee",), head_dim=head_dim_from_field(), gated=False,
           qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS, mlp_bias=Flag("mlp_bias", False),
           summary="the Llama layout with a plain feed-forward part (squared ReLU)"),
    Family("OLMoE", ("olmoe",), head_dim=head_dim_fixed, qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, qk_norm=QKNorm("every head"),
           experts=experts_every_layer,
           summary=("OLMo's blocks, queries and keys normalised, experts in every "
                    "layer")),
    Family("Granite-MoE", ("granitemoe",), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           experts=experts_every_layer,
           summary="the Granite layout with experts in every layer"),
    Family("Granite-MoE-shared", ("granitemoeshared",), qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, experts=experts_granite_shared,
           summary="Granite-MoE with a shared feed-forward part beside the experts"),
    Family("Granite 4.0 hybrid", ("granitemoehybrid",), mixers=mixers_granite_hybrid,
           head_dim=head_dim_from_field(), qkv_bias=_LLAMA_BIAS, out_bias=_LLAMA_BIAS,
           ffn_width=width_field("shared_intermediate_size"),
           experts=experts_granite_hybrid, no_count=("position_embedding_type",),
           summary=("Mamba-2 layers and attention layers as layer_types names them, "
                    "experts beside a shared feed-forward part in every layer")),
    Family("DBRX", ("dbrx",),
           names={"layers": ("n_layers", "num_hidden_layers"),
                  "width": ("d_model", "hidden_size"),
                  "heads": ("n_heads", "num_attention_heads")},
           kv_heads=kv_dbrx, head_dim=head_dim_fixed, norm="scale",
           experts=experts_dbrx,
           summary=("LayerNorms without bias, fused query-key-value projection, "
                    "experts in every layer")),
    Family("JetMoE", ("jetmoe",), mixers=mixers_jetmoe, experts=experts_jetmoe,
           tied=True,
           summary=("a mixture of attention heads (query experts over shared keys and "
                    "values) and a mixture of feed-forward experts in every layer")),
    Family("LongCat-Flash", ("longcat_flash",), layout=layout_longcat,
           no_count=("routed_scaling_factor",),
           summary=("two latent attentions and two feed-forward parts a layer, with "
                    "a mixture of experts (some of which do no work) beside them")),
    Family("PhiMoE", ("phimoe",), norm="layer", qkv_bias=_LLAMA_BIAS,
           out_bias=_LLAMA_BIAS, head_bias=Flag("lm_head_bias", False),
           windows=windows_all, experts=experts_every_layer,
           summary="LayerNorm blocks with experts in every layer"),
    Family("Mamba-2", ("mamba2",), ffn_width=None, mixers=mixers_mamba2,
           norms_per_layer=1,
           summary="Mamba-2 layers only: no attention, no feed-forward part"),
    Family("Falcon-Mamba", ("falcon_mamba",), ffn_width=None, mixers=mixers_mamba,
           norms_per_layer=1,
           summary=("Mamba layers only, with normalisations without trainable numbers "
                    "inside the mixer")),
    Family("RWKV", ("rwkv",), mixers=mixers_rwkv, dense=dense_rwkv, norm="layer",
           embedding_norm=True, no_count=("context_length", "rescale_every"),
           summary=("RWKV-4 blocks: a time mix (a decaying sum of past values) and a "
                    "channel mix, after LayerNorms; a LayerNorm after the "
                    "embeddings")),
    Family("RecurrentGemma (Griffin)", ("recurrent_gemma",), head_dim=head_dim_fixed,
           mixers=mixers_recurrent_gemma, windows=windows_recurrent_gemma,
           qkv_bias=_LLAMA_BIAS, out_bias=True, dense=dense_recurrent_gemma, tied=True,
           no_count=("logits_soft_cap", "w_init_variance_scale",
                     "final_w_init_variance_scale"),
           summary=("two recurrent blocks (RG-LRU) to each local attention layer, "
                    "gated feed-forward parts with biases")),
    Family("xLSTM", ("xlstm",),
           names={**LLAMA_NAMES, "layers": ("num_hidden_layers", "num_blocks"),
                  "width": ("hidden_size", "embedding_dim")},
           mixers=mixers_xlstm, dense=dense_xlstm, norms_per_layer=norms_xlstm,
           summary=("mLSTM layers (a gated key-value memory per head) and gated "
                    "feed-forward parts, after RMSNorms")),
    Family("Mamba", ("mamba",), ffn_width=None, mixers=mixers_mamba, norms_per_layer=1,
           tied=True, summary="Mamba layers only: no attention, no feed-forward part"),
)

GENERIC = Family("an unknown family", (), qkv_bias=False, out_bias=False,
                 summary=("counted as the Llama layout (two norms a layer, no biases, "
                          "no "
                          "position table)"))
"""The layout assumed for a ``model_type`` this calculator does not know (see
``hf_config``)."""

_EARLY_FALCON = ("is an early Falcon file: transformers reads it only as model_type "
                 "falcon")

REFUSED_TYPES = {
    "RefinedWebModel": _EARLY_FALCON,
    "RefinedWeb": _EARLY_FALCON,
}
"""Model types refused with a sentence saying what to do instead."""


STRUCTURE_FIELDS = frozenset({
    # sizes under another family's names
    "n_layer", "n_head", "n_embd", "n_embed", "n_inner", "ffn_dim", "ffn_hidden_size",
    "intermediate_size",
    "n_positions", "word_embed_proj_dim",
    # attention
    "num_key_value_heads", "num_kv_heads", "multi_query", "new_decoder_architecture",
    "head_dim",
    "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
    "qk_layernorm", "use_qk_norm", "qk_norm", "parallel_attn", "use_parallel_residual",
    "parallel_residual",
    "num_ln_in_parallel_attn",
    # biases
    "attention_bias", "mlp_bias", "qkv_bias", "use_bias", "bias", "use_qkv_bias",
    "enable_bias", "attention_out_bias",
    # windows
    "sliding_window", "use_sliding_window", "layer_types", "sliding_window_pattern",
    "max_window_layers",
    "attention_chunk_size",
    # experts
    "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts",
    "num_experts_per_tok",
    "moe_intermediate_size", "shared_expert_intermediate_size", "n_shared_experts",
    "shared_intermediate_size",
    "first_k_dense_replace",
    "decoder_sparse_step", "mlp_only_layers", "moe_layer_freq", "expert_layer_period",
    "moe_num_shared_experts", "moe_layer_start_index", "moe_layer_end_index",
    "moe_layer_interval", "moe_k",
    "expert_layer_offset",
    # running summaries
    "attn_layer_period", "attn_layer_offset", "attn_layer_indices", "layers_block_type",
    "state_size",
    "conv_kernel", "expand", "time_step_rank", "use_conv_bias", "num_heads", "n_groups",
    "mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_dt_rank", "mamba_n_heads",
    "mamba_d_head",
    "mamba_n_groups", "mamba_conv_bias", "mamba_proj_bias",
    # linear attention (Gated DeltaNet) and sparse attention's indexer
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
    "linear_value_head_dim", "linear_conv_kernel_dim", "full_attention_interval",
    "index_n_heads", "index_head_dim", "index_topk", "indexer_types",
    "mlp_layer_types",
    # our own override
    "gated_ffn",
})
"""Fields that change a count in some family: one a family does not read must be absent,
null, false, or (for sizes) equal to what the family uses, or the reader refuses the
file."""
