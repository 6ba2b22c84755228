"""What the config reader refuses, and why: fields a family does not read that could
change a count, and files that describe something other than a decoder-only model."""

from __future__ import annotations

from .catalog import KINDS, entry, kind
from ..families import STRUCTURE_FIELDS, Family, Reader, short

__all__ = [
    "HARMLESS_FIELDS",
    "refuse_unread",
    "refuse_global",
    "refuse_per_layer",
    "refuse_kind",
    "language_model",
]

HARMLESS_FIELDS = frozenset(
    {
        "architectures",
        "model_type",
        "transformers_version",
        "torch_dtype",
        "dtype",
        "_name_or_path",
        "name_or_path",
        "auto_map",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "sep_token_id",
        "unk_token_id",
        "decoder_start_token_id",
        "initializer_range",
        "use_cache",
        "rope_theta",
        "rope_scaling",
        "rope_parameters",
        "rope_interleave",
        "partial_rotary_factor",
        "max_position_embeddings",
        "original_max_position_embeddings",
        "rms_norm_eps",
        "layer_norm_eps",
        "layer_norm_epsilon",
        "norm_epsilon",
        "hidden_act",
        "hidden_activation",
        "activation_function",
        "attention_dropout",
        "hidden_dropout",
        "dropout",
        "resid_pdrop",
        "embd_pdrop",
        "attn_pdrop",
        "classifier_dropout",
        "embedding_dropout",
        "residual_dropout",
        "pretraining_tp",
        "output_attentions",
        "output_hidden_states",
        "return_dict",
        "id2label",
        "label2id",
        "num_labels",
        "problem_type",
        "task_specific_params",
        "tokenizer_class",
        "torchscript",
        "chunk_size_feed_forward",
        "is_decoder",
        "logits_scaling",
        "embedding_multiplier",
        "residual_multiplier",
        "attention_multiplier",
        "logit_scale",
        "final_logit_softcapping",
        "attn_logit_softcapping",
        "query_pre_attn_scalar",
        "cache_implementation",
        "use_bfloat16",
        "clip_qkv",
        "max_length",
        "tie_encoder_decoder",
        "is_encoder_decoder",
        "add_cross_attention",
        "quantization_config",
        "per_layer_config",
    }
)
"""Fields that change no count, accepted in a file whose ``model_type`` is not a known
family (the last few are checked separately and refused when they describe something
else)."""

_OTHER_NAMES = {
    "n_layer": "num_hidden_layers",
    "n_head": "num_attention_heads",
    "n_embd": "hidden_size",
    "n_embed": "hidden_size",
    "n_inner": "intermediate_size",
    "num_kv_heads": "num_key_value_heads",
    "n_positions": "max_position_embeddings",
}


def _neutral(value: object) -> bool:
    return value is None or value is False or value == [] or value == ""


def refuse_unread(
    cfg: dict, r: Reader, family: Family, used: dict[str, int], known: bool
) -> None:
    """Stop at a field that could change a count but was not read for this family."""
    for key in sorted(cfg):
        if key in r.read:
            continue
        value = cfg[key]
        if key == "gated_ffn" and known and value is not None and value != used[key]:
            raise ValueError(
                f"config field gated_ffn={short(value)} contradicts the "
                f"{family.title} layout"
            )
        if _neutral(value) or used.get(key) == value:
            continue
        if not known:
            if key in HARMLESS_FIELDS:
                continue
            raise ValueError(
                f"config field {key}={short(value)} is not understood for "
                "model_type "
                f"{cfg.get('model_type')!r}, which is not a family this "
                "calculator knows, and "
                "it could change the count"
            )
        if key in STRUCTURE_FIELDS:
            hint = f" (they read {_OTHER_NAMES[key]})" if key in _OTHER_NAMES else ""
            raise ValueError(
                f"config field {key}={short(value)} is not read by "
                f"{family.title} models in "
                f"transformers{hint}, so the count cannot follow it"
            )
    if known:
        _refuse_unread_defaults(cfg, r, family, used)


def _refuse_unread_defaults(
    cfg: dict, r: Reader, family: Family, used: dict[str, int]
) -> None:
    """Stop at a class default (for a field the file leaves out) that could change a
    count but was not read for this family."""
    for key, value in sorted(r.defaults.items()):
        if key in cfg or key in r.read or _neutral(value) or used.get(key) == value:
            continue
        if key in STRUCTURE_FIELDS:
            raise ValueError(
                f"config field {key} is left out, and its {family.title} default in "
                f"transformers ({short(value)}) is not read by this calculator's "
                "layout, so the count cannot follow it"
            )


def refuse_per_layer(cfg: dict) -> None:
    """Stop at ``per_layer_config`` (layers that differ field by field) on the layout
    route, which lays out no family that has them."""
    if not _neutral(cfg.get("per_layer_config")):
        raise ValueError(
            "config field per_layer_config is set: layers that differ field by field "
            "are counted from the model transformers builds (--route transformers), "
            "not by a layout"
        )


def refuse_global(cfg: dict) -> None:
    """Stop at a file that describes an encoder-decoder."""
    if cfg.get("is_encoder_decoder") not in (None, False) or cfg.get(
        "add_cross_attention"
    ) not in (None, False):
        raise ValueError(
            "config field is_encoder_decoder (or add_cross_attention) is "
            "set: this calculator "
            "covers decoder-only models"
        )




_NOT_DECODER_ARCHITECTURES = (
    "ForMaskedLM",
    "ForPreTraining",
    "ForSeq2SeqLM",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "EncoderModel",
    "EncoderDecoderModel",
    "ForSpeechSeq2Seq",
    "ForImageClassification",
)
"""Endings of ``architectures`` names that are not a decoder writing tokens."""


def refuse_kind(cfg: dict) -> None:
    """Stop at a file that describes an encoder, an encoder-decoder or something else
    than a decoder, from its ``model_type`` and ``architectures``."""
    model_type = cfg.get("model_type")
    found = kind(model_type) if isinstance(model_type, str) else None
    if found in ("encoder", "encoder-decoder"):
        raise ValueError(f"model_type {model_type!r} is {KINDS[found]}")
    if found == "other" and not isinstance(cfg.get("text_config"), dict):
        raise ValueError(f"model_type {model_type!r} is {KINDS['other']}")
    names = cfg.get("architectures")
    if isinstance(names, list) and found != "decoder":
        for name in names:
            if isinstance(name, str) and name.endswith(_NOT_DECODER_ARCHITECTURES):
                raise ValueError(
                    f"config field architectures names {name}, which is not a "
                    "decoder-only language model: this calculator covers those"
                )


def language_model(cfg: dict) -> tuple[dict, str] | None:
    """For a file of a model with a vision or audio tower beside its language model,
    the language model's own config (from ``text_config``) and a note saying so; None
    for any other file."""
    model_type = cfg.get("model_type")
    found = entry(model_type) if isinstance(model_type, str) else None
    if found is None or found["kind"] not in ("multimodal", "other"):
        return None
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        raise ValueError(
            f"model_type {model_type!r} is {KINDS[found['kind']]}, and the file has no "
            "text_config to count its language model from"
        )
    text = dict(text)
    own = text.get("model_type")
    text_type = own or found.get("text")
    if isinstance(own, str) and kind(own) is None and found.get("text"):
        text_type = found["text"]  # transformers builds text_config as its own class
    if not isinstance(text_type, str) or kind(text_type) != "decoder":
        raise ValueError(
            f"model_type {model_type!r} is {KINDS[found['kind']]}, and its language "
            f"model ({text_type!r}) is not a decoder transformers builds on its own"
        )
    text["model_type"] = text_type
    top_dtype = [k for k in ("torch_dtype", "dtype") if cfg.get(k) is not None]
    if top_dtype:  # the whole model is built at the top level's format
        text.pop("dtype", None)
        text["torch_dtype"] = cfg[top_dtype[0]]
    top, inner = cfg.get("tie_word_embeddings"), text.get("tie_word_embeddings")
    if top is not None and inner is not None and top != inner:
        raise ValueError(
            "config fields tie_word_embeddings and text_config.tie_word_embeddings "
            "disagree: which output head the model has cannot be told"
        )
    if top is not None:
        text["tie_word_embeddings"] = top
    note = (
        f"model_type {model_type!r} is {KINDS[found['kind']]}: counted here is its "
        f"language model alone, from text_config (model_type {text_type!r}); the "
        "towers and the projector that feeds them in are left out"
    )
    if own != text_type and isinstance(own, str):
        note += (f"; text_config names model_type {own!r}, which transformers does not "
                 f"know: {model_type!r} builds it as {text_type!r}")
    return text, note
