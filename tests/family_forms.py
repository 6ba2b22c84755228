"""Every decoder family transformers builds, in the three forms a user's file takes, and
what transformers itself makes of each.

- ``defaults``: the file names only its ``model_type`` (every field takes its config
  class's default), plus the few fields without which transformers 5.24 cannot build that
  family at all (``FILL``);
- ``cut``: the defaults cut to the fields a short published ``config.json`` carries
  (``SHORT``): transformers reads it as the same model, so it shares the reference;
- ``shrunk``: the defaults with every size made small (``shrink``), built on the CPU and
  run, so that the cache it really fills can be read.

The reference for the first two is the model transformers builds on the meta device; for
the shrunk form, a real model on the CPU and its cache after a prompt and one more token.
"""
from __future__ import annotations

import inspect

import pytest
import torch
import transformers
from transformers.cache_utils import DynamicCache, get_layer_types_and_kwargs

from hf_reference import quiet
from transformer_calculator.reading import catalog

FILL = {
    "cohere_compass_text": {"layer_types": None},
    "dbrx": {"attn_config": {"rope_theta": 500000.0, "clip_qkv": 8}},
    "deepseek_v2": {"num_experts_per_tok": 6},
    "dots1": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},
    "hunyuan_v1_dense": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
                         "head_dim": 128},
    "hunyuan_v1_moe": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
                       "head_dim": 128},
    "lfm2_moe": {"layer_types": None},
    "ministral": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
                  "head_dim": 128},
    "nemotron": {"num_key_value_heads": 8},
    "qwen4_exp_text": {"head_dim": 128},
    "reformer": {"is_decoder": True},
}
"""Fields some class defaults lack before transformers 5.24 can build them (a published
file always states them)."""

SHORT = (
    "model_type", "architectures", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "vocab_size", "max_position_embeddings",
    "rms_norm_eps", "layer_norm_eps", "hidden_act", "bos_token_id", "eos_token_id",
    "rope_theta", "tie_word_embeddings", "torch_dtype", "n_embd", "n_layer", "n_head",
    "head_dim",
)
"""The fields a short published config.json carries (Llama-2's, say)."""

_SIZES = {
    "hidden_size": 64, "d_model": 64, "n_embd": 64, "intermediate_size": 96, "ffn_dim": 96,
    "n_inner": 96, "num_attention_heads": 4, "n_head": 4, "num_heads": 4, "vocab_size": 128,
    "num_local_experts": 4, "num_experts": 4, "n_routed_experts": 4, "moe_num_experts": 4,
    "num_experts_per_tok": 2, "moe_topk": 2, "moe_k": 2, "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 48, "kv_lora_rank": 16, "q_lora_rank": 24,
    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_group": 1,
    "topk_group": 1, "mamba_d_state": 8, "state_size": 8, "mamba_n_heads": 8,
    "mamba_d_head": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
    "linear_key_head_dim": 16, "linear_value_head_dim": 16, "index_head_dim": 16,
    "index_n_heads": 2, "index_topk": 4, "time_step_rank": 8,
}
"""Small sizes for the shrunk form (each applied where the class has the field)."""


SHRUNK = {
    "bamba": {"attn_layer_indices": [1]},
    "granitemoehybrid": {"layer_types": ["mamba", "attention"] * 4},
    "mamba2": {"num_heads": 8, "head_dim": 16, "n_groups": 2},
    "granitemoeshared": {"shared_intermediate_size": 48},
    "falcon_h1": {"mamba_d_ssm": 128, "mamba_n_heads": 8, "mamba_d_state": 8},
    "zamba2": {"layers_block_type": ["mamba", "hybrid"] * 4, "n_mamba_heads": 8},
    "gpt_neo": {"attention_types": [[["global", "local"], 4]], "window_size": 5},
    "recurrent_gemma": {"attention_window_size": 5},
    "dory": {"n_input_layers": 2, "n_output_layers": 2},
    "inkling2_loop_text": {"swa_num_attention_heads": 4, "swa_num_key_value_heads": 2,
                           "swa_head_dim": 16, "sliding_window_size": 5,
                           "loop_layer_index_start": 2, "loop_layer_index_end": 6,
                           "n_layers_per_attn_res_block": 2, "unpadded_vocab_size": 128,
                           "loop_gate_rank": 8},
    "zaya": {"num_experts_per_tok": 1},
    "gemma3n_text": {"num_kv_shared_layers": 2},
    "reformer": {"axial_pos_embds_dim": [32, 32], "attention_head_size": 16,
                 "feed_forward_size": 96},
    "xlstm": {"hidden_size": 128},
    "longcat_flash": {"head_dim": 8, "zero_expert_num": 2, "expert_ffn_hidden_size": 32,
                      "ffn_hidden_size": 96, "moe_topk": 2},
}
"""Per-family changes to the shrunk form: a hybrid needs an attention layer to run."""


def defaults_form(model_type: str) -> dict:
    """A file naming only its model type (and ``FILL``)."""
    return {"model_type": model_type, **FILL.get(model_type, {})}


def cut_form(model_type: str) -> dict:
    """The class defaults cut to ``SHORT`` (and ``FILL``)."""
    d = catalog.defaults(model_type)
    return {**{k: d[k] for k in SHORT if k in d and d[k] is not None},
            **defaults_form(model_type)}


def shrunk_form(model_type: str, layers: int, overrides: dict | None = None) -> dict:
    """The class defaults with small sizes, ``layers`` layers and no token ids."""
    d = catalog.defaults(model_type)
    cfg = {k: v for k, v in _SIZES.items() if d.get(k) is not None}
    for name in ("num_key_value_heads", "num_kv_heads"):
        if d.get(name) is not None or (name == "num_key_value_heads" and name in d):
            cfg[name] = 4 if "kv_lora_rank" in d else 2  # latent attention: every head
    if any(k in cfg for k in ("num_local_experts", "num_experts", "n_routed_experts",
                              "moe_num_experts")):
        cfg["num_experts_per_tok"] = 2
    if d.get("rotary_dim") is not None:
        cfg["rotary_dim"] = 8
    if d.get("head_dim") is not None:
        cfg["head_dim"] = 16
    for name in ("sliding_window", "attention_chunk_size"):
        if d.get(name) is not None:
            cfg[name] = 5
    for name in ("num_hidden_layers", "n_layer", "num_layers"):
        if name in d:
            cfg[name] = layers
    ids = {k: None if d[k] is None else 0  # a class that requires a token id keeps one
           for k in ("pad_token_id", "bos_token_id", "eos_token_id") if k in d}
    return {**defaults_form(model_type), **cfg, **ids, **SHRUNK.get(model_type, {}),
            **(overrides or {})}


@pytest.fixture(scope="module", autouse=True)
def quiet_on_one_thread():
    """transformers silenced and torch on one thread for a module's tests (the real CPU
    models are tiny: more threads only wait on each other)."""
    quiet()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def hf_config(cfg: dict) -> transformers.PreTrainedConfig:
    """The config object transformers makes from a file's dictionary."""
    return transformers.CONFIG_MAPPING[cfg["model_type"]].from_dict(dict(cfg))


def build(cfg: dict, device: str = "meta") -> torch.nn.Module:
    """The causal language model transformers builds from ``cfg``, at float32 unless the
    file says otherwise."""
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(
        cfg.get("torch_dtype"), torch.float32)
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(hf_config(cfg), dtype=dtype).eval()


def counts(model: torch.nn.Module, per_token: int | None) -> dict:
    """Parameters (shared tensors once), their bytes, and the parameters one token uses
    (each tensor of a module called ``experts``, or of an ``...Experts`` class with a
    ``num_experts``, counts
    ``per_token`` of its experts: as many as the module's ``num_experts``, or else its
    tensors' first dimension; a router's tensors and one-dimensional ones are every
    token's)."""
    unique = {id(p): (n, p) for n, p in model.named_parameters()}
    experts = {name: getattr(m, "num_experts", None) for name, m in model.named_modules()
               if name.split(".")[-1] == "experts"
               or ("Experts" in type(m).__name__ and hasattr(m, "num_experts"))}
    params = sum(p.numel() for _, p in unique.values())
    active = 0
    for name, p in unique.values():
        parts = name.split(".")
        cut = next((k for k in range(len(parts) - 1, 0, -1)
                    if ".".join(parts[:k]) in experts), None)
        count = (experts[".".join(parts[:cut])] or p.shape[0]) if cut else 0
        routed = (cut is not None and per_token and p.dim() >= 2 and p.shape[0] % count == 0
                  and not {"router", "gate", "gating"} & set(parts[cut:]))
        active += round(p.numel() // count * per_token) if routed else p.numel()
    return {"parameters": params, "active": active,
            "weight_bytes": sum(p.numel() * p.element_size() for _, p in unique.values())}


def layer_kinds(cfg: dict) -> list[tuple[str, int | None]]:
    """(kind, window) of each layer of the cache transformers makes for ``cfg``."""
    config = hf_config(cfg).get_text_config(decoder=True)
    types, kwargs = get_layer_types_and_kwargs(config)
    return [(t, kw.get("sliding_window")) for t, kw in zip(types, kwargs)]


def held_bytes(cache) -> int:
    """Bytes of every floating-point tensor a transformers cache holds: its layers and
    any other list it keeps (MiniMax's linear attention states), each tensor once."""
    seen: set[int] = set()

    def walk(value) -> int:
        if id(value) in seen:
            return 0
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            return value.numel() * value.element_size() if value.is_floating_point() else 0
        if isinstance(value, dict):
            return sum(walk(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return sum(walk(v) for v in value)
        if type(value).__module__.startswith("transformers.") and hasattr(value, "__dict__"):
            return sum(walk(v) for k, v in vars(value).items() if k != "config")
        return 0

    return walk(cache)


def kept_between_calls(model: torch.nn.Module) -> list:
    """Tensors the model's modules keep as plain attributes between calls (neither
    parameters nor buffers): RecurrentGemma's layers keep their cache so."""
    kept = []
    for m in model.modules():
        own = {id(t) for t in (*m._parameters.values(), *m._buffers.values())}
        kept += [v for v in vars(m).values()
                 if isinstance(v, torch.Tensor) and id(v) not in own]
    return kept


def real_cache(model: torch.nn.Module, tokens: int, vocab: int) -> tuple[int, int]:
    """Bytes the cache holds after a CPU prompt of ``tokens`` tokens and one more: the
    cache transformers returns (its ``past_key_values``, RWKV's ``state``, xLSTM's
    ``cache``, Reformer's ``past_buckets_states``) and any tensor a module keeps between
    calls."""
    ids = torch.randint(0, vocab, (1, tokens + 1), generator=torch.Generator().manual_seed(0))

    given = {}

    def state(out) -> dict:
        for name in ("past_key_values", "state", "cache_params", "cache",
                     "past_buckets_states"):
            if getattr(out, name, None) is not None:
                return {"cache" if name == "past_key_values" else name: getattr(out, name)}
        return given

    def held(out) -> int:
        return held_bytes([*state(out).values(), *kept_between_calls(model)])

    with torch.no_grad():
        out = model(input_ids=ids[:, :tokens], use_cache=True)
        if not state(out) and "cache" in inspect.signature(model.forward).parameters:
            # RecurrentGemma keeps its cache without returning it: hand it one
            given["cache"] = DynamicCache(config=model.config)
            out = model(input_ids=ids[:, :tokens], use_cache=True, **given)
        first = held(out)
        try:
            out = model(input_ids=ids[:, tokens:], use_cache=True, **state(out))
        except RuntimeError:  # CPM-Ant takes the whole text again with its cache
            out = model(input_ids=ids[:, :tokens], use_cache=True)
            first = held(out)
            out = model(input_ids=ids, use_cache=True, **state(out))
        return first, held(out)
