"""Published configs of dense families, counted by the calculator and by the models ``transformers``
builds from the same files on the meta device (no weights): parameters, weight bytes, and which
layers the cache keeps whole or windowed. Experts and running summaries: test_families_sparse.py."""
import json

import pytest

from hf_reference import (PUBLISHED, config_path, build, cache_layer_kinds, is_sparse,
                          load_modelling_code, parameter_count, published, quiet, tiny,
                          weight_bytes)
from transformer_calculator.counting import costs
from transformer_calculator.anatomy.mixers import MixerKind
from transformer_calculator.reading.config import (example_config_path, example_configs,
                                                   model_from_config, read_config)

pytestmark = [pytest.mark.meta_device, pytest.mark.transformers]

DENSE = [name for name in PUBLISHED if not is_sparse(name)]
"""Every published config without experts, latent attention or running summaries, found
from the files (the library's ``published`` models and ``tests/configs``), never listed by
hand: a new file is checked against transformers the day it is added."""


@pytest.fixture(scope="module", autouse=True)
def _quiet():
    quiet()
    load_modelling_code()


def check_against_transformers(cfg: dict, name: str) -> None:
    shape, _ = model_from_config(cfg, name)
    model = build(cfg)
    assert costs.parameters(shape) == parameter_count(model)
    assert costs.weight_bytes(shape) == weight_bytes(model)
    for block, (kind, window) in zip(shape.layout.blocks, cache_layer_kinds(cfg), strict=True):
        if kind == "sliding_attention":  # transformers' DynamicSlidingWindowLayer keeps window - 1 tokens
            assert block.windowed and block.mixer.cache_cap == window - 1
        elif kind == "linear_attention":  # a running summary: no keys and values
            assert block.mixer.kind is MixerKind.RUNNING_SUMMARY and block.mixer.cache_numbers == 0
        else:
            assert kind == "full_attention" and block.mixer.cache_cap is None
            assert block.mixer.cache_numbers > 0


@pytest.mark.parametrize("name", DENSE)
def test_published_config_matches_transformers(name):
    check_against_transformers(published(name), name)


QUANTIZED_COPIES = {"deepseek-v3-fp8": "deepseek-v3"}
"""Shipped configs that are a tested file with its published ``quantization_config`` (the
format itself is checked against transformers' quantized model in test_formats_meta.py)."""

MADE_UP = [p for p in example_configs() if p.stem not in PUBLISHED and p.stem not in QUANTIZED_COPIES]


def unquantized(cfg: dict) -> dict:
    """``cfg`` without its ``quantization_config`` (in its text config too)."""
    cfg = json.loads(json.dumps(cfg))
    cfg.pop("quantization_config", None)
    if isinstance(cfg.get("text_config"), dict):
        cfg["text_config"].pop("quantization_config", None)
    return cfg


@pytest.mark.parametrize("path", MADE_UP, ids=lambda p: p.stem)
def test_shipped_example_matches_transformers(path):
    """A shipped config, unquantized as transformers builds it on the meta device; its
    published format packs the same parameters (its bytes: test_formats_meta.py and
    test_gathered_tables_and_formats.py)."""
    cfg = json.loads(path.read_text())
    check_against_transformers(unquantized(cfg), path.stem)
    ours, plain = model_from_config(cfg, path.stem)[0], model_from_config(unquantized(cfg), path.stem)[0]
    assert costs.parameters(ours) == costs.parameters(plain)


@pytest.mark.parametrize(("shipped", "tested"), QUANTIZED_COPIES.items())
def test_a_quantized_copy_is_the_tested_file_with_its_published_format(shipped, tested):
    from test_formats_meta import DEEPSEEK_FP8

    copy = json.loads(example_config_path(shipped).read_text())
    assert copy.pop("quantization_config") == DEEPSEEK_FP8
    assert copy == json.loads(config_path(tested).read_text())


def test_no_published_config_is_stated_twice():
    shipped = {p.stem for p in example_configs()}
    tests_own = {p.stem for p in (config_path("gpt2").parent).glob("*.json")}
    assert config_path("gpt2").parent.name == "configs" and len(tests_own) >= 20
    assert not shipped & tests_own, shipped & tests_own   # one file a published model


@pytest.mark.parametrize(("name", "changes"), [
    ("qwen2.5-7b", {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 2}),
    ("qwen1.5-moe-a2.7b", {"use_sliding_window": True, "sliding_window": 7, "max_window_layers": 2,
                           "mlp_only_layers": [1], "qkv_bias": False}),
    ("qwen3-30b-a3b", {"use_sliding_window": True, "sliding_window": 7, "decoder_sparse_step": 2}),
    ("gemma-2-9b", {"layer_types": ["full_attention", "sliding_attention"]}),
    ("gemma-3-1b", {"sliding_window_pattern": 4}),
    ("deepseek-v3", {"q_lora_rank": None, "first_k_dense_replace": 0, "n_shared_experts": 2}),
    ("deepseek-v2-lite", {"mlp_bias": True, "attention_bias": True}),
    ("jamba-v0.1", {"attn_layer_period": 2, "attn_layer_offset": 0, "expert_layer_period": 5,
                    "expert_layer_offset": 2, "mamba_conv_bias": False, "mamba_proj_bias": True}),
    ("bamba-9b", {"attn_layer_indices": [0, 2], "mamba_n_groups": 2, "mamba_proj_bias": True}),
    ("mamba-2.8b", {"use_bias": True, "use_conv_bias": False, "tie_word_embeddings": False}),
    ("phi-2", {"qk_layernorm": True}),
    ("stablelm-2-1.6b", {"qk_layernorm": True, "use_parallel_residual": True, "use_qkv_bias": False}),
    ("command-r", {"use_qk_norm": True, "tie_word_embeddings": False}),
    ("falcon-7b", {"parallel_attn": False, "bias": True}),
    ("falcon-40b", {"parallel_attn": False, "num_ln_in_parallel_attn": 2}),
    ("falcon-40b", {"num_ln_in_parallel_attn": 1}),
    ("starcoder", {"multi_query": False}),
    ("opt-1.3b", {"enable_bias": False, "layer_norm_elementwise_affine": False}),
    ("opt-1.3b", {"_remove_final_layer_norm": True}),
    ("pythia-1.4b", {"attention_bias": False}),
    ("llama-3-8b", {"attention_bias": True, "mlp_bias": True, "head_dim": 64}),
    ("granite-3.0-8b", {"mlp_bias": True}),
])
def test_family_switches_match_transformers(name, changes):
    """Each switch a family reads, turned the other way, on its published file shrunk (test_family_caches.py)."""
    check_against_transformers({**tiny(name), **changes}, name)


def test_a_field_left_out_takes_the_family_default():
    """A hand-written Llama-2 file without tie_word_embeddings: Llama's default is a separate head."""
    cfg = {k: v for k, v in published("llama-2-7b").items() if k != "tie_word_embeddings"}
    shape, notes = model_from_config(cfg)
    assert costs.parameters(shape) == parameter_count(build(cfg)) == 6_738_415_616
    assert any("tie_word_embeddings not given: using false" in n for n in notes)


def test_the_closing_claims_of_the_issue():
    """StarCoder is multi-query (one key-value head), Falcon-7B too; Falcon-40B has 8 key-value heads."""
    star, _ = read_config(config_path("starcoder"))
    falcon, _ = read_config(config_path("falcon-7b"))
    falcon40, notes = read_config(config_path("falcon-40b"))
    assert [m.summary()["kv_heads"] for m in (star, falcon, falcon40)] == [1, 1, 8]
    assert costs.cache_bytes_per_token(star) == 2 * 40 * 128 * 4  # 40 layers, one head of 128, float32
    assert any("copied out to every query head" in n for n in notes)
