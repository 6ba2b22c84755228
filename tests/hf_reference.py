"""The independent reference for the calculator: the models ``transformers`` builds from a config.

Full-size models are built on the meta device (shapes only, no memory, no weights); tiny
models of the same families are built on the CPU and run, so that their caches can be
read after a prompt and after one more token. Nothing is downloaded.

``TINY`` shrinks each published config (the library's own, ``published.model_names()``, and the
further ones in ``tests/configs``) to a few layers of width 64
and keeps every structural field as published (windows are shortened to a few tokens so
that a short prompt runs past them; patterns keep enough layers to show each kind).
"""
from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import torch
import transformers
from transformers.cache_utils import get_layer_types_and_kwargs

from published import model_config, model_config_path, model_names

CONFIGS = Path(__file__).resolve().parent / "configs"
"""Published configs the tests check beyond those the library ships (no file in both)."""


def config_path(name: str) -> Path:
    """The file of the published config ``name``: the library's own, or the tests'."""
    own = CONFIGS / f"{name}.json"
    return own if own.is_file() else model_config_path(name)


PUBLISHED = sorted({p.stem for p in CONFIGS.glob("*.json")}
                   | {n for n in model_names() if "quantization_config" not in model_config(n)})
"""Every published config checked against transformers in its own format (a shipped copy with
its published quantization_config is checked as the file it copies, test_families.py)."""

def language_config(cfg: dict) -> dict:
    """The config transformers builds the language model of ``cfg`` from: ``cfg``
    itself, or for a vision-language file with no causal model of its own (Kimi K2.5's
    ``kimi_k25``), the text config transformers' own config class makes of it
    (``deepseek_v3``), without the file's pointers to remote code."""
    names = transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    if cfg["model_type"] in names or "text_config" not in cfg:
        return cfg
    local = {k: v for k, v in cfg.items() if k != "auto_map"}
    text = hf_config(local).get_text_config(decoder=True)
    return {k: v for k, v in text.to_dict().items() if k != "auto_map"}


def is_sparse(name: str) -> bool:
    """Whether the published config ``name`` holds experts, latent attention or
    running-summary layers, as the calculator reads it (test_families_sparse.py checks
    those, test_families.py the dense rest)."""
    from transformer_calculator.reading.config import model_from_config
    from transformer_calculator.anatomy.feedforward import Experts
    from transformer_calculator.anatomy.mixers import LatentAttention, Mamba
    from transformer_calculator.anatomy.recurrent import GatedDeltaNet, Mamba2

    model, _ = model_from_config(published(name), name)
    return any(isinstance(b.ffn, Experts)
               or isinstance(b.mixer, (LatentAttention, Mamba, Mamba2, GatedDeltaNet))
               for b in model.layout.blocks)


DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}

_S = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 128}
TINY = {
    "llama-2-7b": {**_S, "num_key_value_heads": 4},
    "llama-3-8b": {**_S, "num_key_value_heads": 2},
    "mistral-7b-v0.1": {**_S, "num_key_value_heads": 2, "sliding_window": 5},
    "mixtral-8x7b": {**_S, "num_key_value_heads": 2, "num_local_experts": 4},
    "qwen2.5-7b": {**_S, "num_hidden_layers": 3, "num_key_value_heads": 2, "use_sliding_window": True,
                   "sliding_window": 5, "max_window_layers": 1},
    "qwen3-8b": {**_S, "num_key_value_heads": 2, "head_dim": 16, "max_window_layers": 2},
    "qwen1.5-moe-a2.7b": {**_S, "num_key_value_heads": 4, "moe_intermediate_size": 32,
                          "shared_expert_intermediate_size": 48, "num_experts": 4, "num_experts_per_tok": 2,
                          "max_window_layers": 1},
    "qwen3-30b-a3b": {**_S, "num_key_value_heads": 2, "head_dim": 16, "moe_intermediate_size": 32,
                      "num_experts": 4, "num_experts_per_tok": 2, "max_window_layers": 2},
    "gemma-2b": {**_S, "num_key_value_heads": 1, "head_dim": 16},
    "gemma-2-9b": {**_S, "num_key_value_heads": 2, "head_dim": 16, "sliding_window": 5},
    "gemma-3-1b": {**_S, "num_hidden_layers": 7, "num_key_value_heads": 1, "head_dim": 16, "sliding_window": 5},
    "phi-2": {**_S, "num_key_value_heads": 4},
    "phi-3-mini-4k": {**_S, "num_key_value_heads": 4, "sliding_window": 5},
    "gpt2": {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "n_ctx": 32, "vocab_size": 128},
    "gpt-j-6b": {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 32, "rotary_dim": 8, "vocab_size": 128},
    "pythia-1.4b": _S,
    "falcon-7b": {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 128},
    "falcon-40b": {"hidden_size": 64, "num_attention_heads": 4, "num_kv_heads": 2, "num_hidden_layers": 2,
                   "vocab_size": 128},
    "bloom-560m": {"hidden_size": 64, "n_head": 4, "n_layer": 2, "vocab_size": 128},
    "opt-1.3b": {"hidden_size": 64, "ffn_dim": 96, "num_attention_heads": 4, "num_hidden_layers": 2,
                 "max_position_embeddings": 32, "word_embed_proj_dim": 64, "vocab_size": 128},
    "opt-350m": {"hidden_size": 64, "ffn_dim": 96, "num_attention_heads": 4, "num_hidden_layers": 2,
                 "max_position_embeddings": 32, "word_embed_proj_dim": 32, "vocab_size": 128},
    "starcoder": {"n_embd": 64, "n_inner": 96, "n_head": 4, "n_layer": 2, "n_positions": 32, "vocab_size": 128},
    "starcoder2-7b": {**_S, "num_key_value_heads": 2, "sliding_window": 5},
    "stablelm-2-1.6b": {**_S, "num_key_value_heads": 4},
    "olmo-7b": {**_S, "num_key_value_heads": 4},
    "olmo-2-7b": {**_S, "num_key_value_heads": 4},
    "command-r": {**_S, "num_key_value_heads": 4},
    "granite-3.0-8b": {**_S, "num_key_value_heads": 2},
    "deepseek-v2-lite": {**_S, "num_key_value_heads": 4, "moe_intermediate_size": 32, "n_routed_experts": 4,
                         "num_experts_per_tok": 2, "kv_lora_rank": 16, "qk_nope_head_dim": 16,
                         "qk_rope_head_dim": 8, "v_head_dim": 16},
    "deepseek-v3": {**_S, "num_key_value_heads": 4, "moe_intermediate_size": 32, "n_routed_experts": 8,
                    "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1, "first_k_dense_replace": 1,
                    "kv_lora_rank": 16, "q_lora_rank": 24, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
                    "v_head_dim": 16},
    "jamba-v0.1": {**_S, "num_hidden_layers": 5, "num_key_value_heads": 2, "num_experts": 4, "mamba_d_state": 8,
                   "mamba_dt_rank": 8},
    "bamba-9b": {**_S, "num_hidden_layers": 3, "attn_layer_indices": [1], "num_key_value_heads": 2,
                 "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_state": 8, "mamba_chunk_size": 16},
    "mamba-2.8b": {"hidden_size": 64, "num_hidden_layers": 2, "n_layer": 2, "intermediate_size": 128,
                   "state_size": 8, "time_step_rank": 8, "vocab_size": 128},
}
"""Each published config's sizes shrunk; its structural fields are kept as published."""


def quiet() -> None:
    """Silence transformers' advice (slow kernels, token ids outside a tiny vocabulary)."""
    transformers.logging.set_verbosity_error()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module="transformers")


def load_modelling_code() -> None:
    """Import what transformers otherwise loads when it builds its first model (its modelling and
    generation utilities, which bring torch.distributed.tensor and torch._dynamo: about three
    seconds, once a process), so that the cost shows in a module fixture's setup rather than
    inside whichever test happens to build a model first."""
    import transformers.generation.utils  # noqa: F401
    import transformers.masking_utils  # noqa: F401
    import transformers.modeling_utils  # noqa: F401


def published(name: str) -> dict:
    """A published config.json, as a dictionary."""
    return json.loads(config_path(name).read_text())


def tiny(name: str) -> dict:
    """The published config ``name`` shrunk by ``TINY``, without token ids outside the tiny vocabulary."""
    return {**published(name), **TINY[name], "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def hf_config(cfg: dict) -> transformers.PreTrainedConfig:
    """The config object transformers makes from this dictionary (as from_pretrained would)."""
    return transformers.CONFIG_MAPPING[cfg["model_type"]].from_dict(cfg)


def dtype(cfg: dict) -> torch.dtype:
    """The torch dtype the file names, or its text_config names (a vision-language file
    such as Qwen3.5's states it there only); float32 when it names none, as transformers
    builds it."""
    text = cfg.get("text_config") or {}
    return DTYPES[cfg.get("torch_dtype") or cfg.get("dtype") or text.get("torch_dtype")
                  or text.get("dtype") or "float32"]


def build(cfg: dict, device: str = "meta") -> torch.nn.Module:
    """The causal language model transformers builds from ``cfg`` (on the meta device: shapes only)."""
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(hf_config(cfg), dtype=dtype(cfg)).eval()


def unique_parameters(model: torch.nn.Module) -> list[torch.Tensor]:
    """Every parameter tensor once (tied matrices are one tensor)."""
    return list({id(p): p for p in model.parameters()}.values())


def parameter_count(model: torch.nn.Module) -> int:
    """Trainable numbers, shared tensors counted once."""
    return sum(p.numel() for p in unique_parameters(model))


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of the parameters at the dtypes transformers holds them in."""
    return sum(p.numel() * p.element_size() for p in unique_parameters(model))


def active_parameter_count(model: torch.nn.Module, per_token: int) -> int:
    """Parameters one token uses: every stacked expert tensor (first dimension = experts)
    counts only ``per_token`` of its experts."""
    total = 0
    for name, p in model.named_parameters():
        if ".experts." in name:
            total += p.numel() // p.shape[0] * per_token
        else:
            total += p.numel()
    return total


def cache_layer_kinds(cfg: dict) -> list[tuple[str, int | None]]:
    """(kind, sliding window) for each layer of the cache transformers' DynamicCache makes."""
    config = hf_config(cfg)
    types, kwargs = get_layer_types_and_kwargs(config.get_text_config(decoder=True))
    return [(t, kw.get("sliding_window")) for t, kw in zip(types, kwargs)]


def cache_bytes(cache) -> int:
    """Bytes of every tensor a transformers cache holds: keys, values, filter and summary states."""
    total = 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            x = getattr(layer, name, None)
            if isinstance(x, torch.Tensor):
                total += x.numel() * x.element_size()
        for name in ("conv_states", "recurrent_states"):
            for x in (getattr(layer, name, None) or {}).values():
                if isinstance(x, torch.Tensor):
                    total += x.numel() * x.element_size()
    return total


def run_cache(model: torch.nn.Module, tokens: int, vocab: int) -> tuple[int, int]:
    """Cache bytes after a prompt of ``tokens`` tokens, and after one more token decoded with that cache."""
    generator = torch.Generator().manual_seed(tokens)
    ids = torch.randint(0, vocab, (1, tokens + 1), generator=generator)
    with torch.no_grad():
        out = model(input_ids=ids[:, :tokens], use_cache=True)
        cache = out.past_key_values
        after_prompt = cache_bytes(cache)
        out = model(input_ids=ids[:, tokens:], cache=cache, use_cache=True)
        return after_prompt, cache_bytes(out.past_key_values)
