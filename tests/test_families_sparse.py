"""Published configs with experts, latent attention or running-summary layers, counted by the
calculator and by the models ``transformers`` builds from the same files on the meta device:
total and active parameters, weight bytes, and the kind of each layer's cache."""
import pytest

from hf_reference import (PUBLISHED, active_parameter_count, build, cache_layer_kinds,
                          hf_config, is_sparse, language_config, load_modelling_code,
                          parameter_count, published, quiet, weight_bytes)
from test_families import unquantized
from transformer_calculator.counting import costs
from transformer_calculator.reading.config import model_from_config
from transformer_calculator.anatomy.feedforward import Experts
from transformer_calculator.anatomy.mixers import LatentAttention, Mamba, Mamba2

pytestmark = [pytest.mark.meta_device, pytest.mark.transformers]

SPARSE = [name for name in PUBLISHED if is_sparse(name)]
"""Every published config with experts, latent attention or running summaries, found from
the files, never listed by hand."""


def test_every_published_config_is_checked_against_transformers():
    from test_families import DENSE

    assert sorted(DENSE + SPARSE) == PUBLISHED and not set(DENSE) & set(SPARSE)
    assert {"mixtral-8x7b", "deepseek-v3", "jamba-v0.1", "mamba-2.8b"} <= set(SPARSE)
    assert {"llama-3-8b", "gpt2", "gemma-2-9b"} <= set(DENSE)


@pytest.fixture(scope="module", autouse=True)
def _quiet():
    quiet()
    load_modelling_code()


@pytest.mark.parametrize("name", SPARSE)
def test_published_config_matches_transformers(name):
    """Each file as transformers builds it, in its own format (a quantization_config in
    a vision-language file's text_config left out on both sides: its format is checked in
    test_formats_meta.py); a vision-language file by its language model."""
    cfg = unquantized(published(name))
    shape, notes = model_from_config(cfg, name)
    cfg = language_config(cfg)
    model = build(cfg)
    assert costs.parameters(shape) == parameter_count(model)
    assert costs.weight_bytes(shape) == weight_bytes(model)
    per_token = getattr(hf_config(cfg), "num_experts_per_tok", None)
    if per_token:
        assert costs.active_parameters(shape) == active_parameter_count(model, per_token)
        assert costs.active_parameters(shape) < costs.parameters(shape)
    for block, (kind, window) in zip(shape.layout.blocks, cache_layer_kinds(cfg), strict=True):
        assert window is None and not block.windowed
        if kind == "linear_attention":
            assert isinstance(block.mixer, (Mamba, Mamba2))
        else:
            assert kind == "full_attention" and not isinstance(block.mixer, (Mamba, Mamba2))


def test_published_totals_and_active_counts():
    """The headline sizes these models are known by, from the counts above."""
    def billions(name):
        shape, _ = model_from_config(published(name), name)
        return (round(costs.parameters(shape) / 1e9, 1), round(costs.active_parameters(shape) / 1e9, 1))
    assert billions("mixtral-8x7b") == (46.7, 12.9)
    assert billions("deepseek-v3")[0] == 671.0
    assert billions("qwen3-30b-a3b")[0] == 30.5
    assert billions("jamba-v0.1") == (51.6, 12.1)


def test_layers_are_read_as_published():
    ds3, notes = model_from_config(published("deepseek-v3"))
    kinds = [type(b.ffn).__name__ for b in ds3.layout.blocks]
    assert kinds == ["FeedForward"] * 3 + ["Experts"] * 58  # first_k_dense_replace = 3
    assert all(isinstance(b.mixer, LatentAttention) for b in ds3.layout.blocks)
    assert costs.cache_bytes_per_token(ds3) == 61 * (512 + 64) * 2  # the latent and the rotary key, 2 bytes
    assert any("multi-token-prediction" in n for n in notes)
    jamba, _ = model_from_config(published("jamba-v0.1"))
    attention = [i for i, b in enumerate(jamba.layout.blocks) if not isinstance(b.mixer, Mamba)]
    experts = [i for i, b in enumerate(jamba.layout.blocks) if isinstance(b.ffn, Experts)]
    assert attention == [4, 12, 20, 28] and experts == list(range(1, 32, 2))
    mamba, _ = model_from_config(published("mamba-2.8b"))
    assert costs.cache_bytes_per_token(mamba) == 0
    assert costs.state_bytes(mamba) == 64 * 5120 * (4 * 4 + 16 * 4)  # filter at 4 bytes, summary in float32


def test_kimi_k25s_text_model_is_deepseek_v3s_layout_as_transformers_builds_it():
    """Kimi-K2.5's files need their own modelling code (``kimi_k25``, ``kimi_k2``), which is
    never run here; its text model is DeepSeek-V3's architecture (its ``auto_map`` names
    DeepSeek-V3's classes), so transformers' own DeepSeek-V3 built from its text config,
    unquantized, is the reference for the calculator's count of the whole file."""
    from test_families import unquantized

    cfg = published("kimi-k2.5")
    text = unquantized({**cfg["text_config"], "model_type": "deepseek_v3",
                        "architectures": ["DeepseekV3ForCausalLM"]})
    ours = model_from_config(unquantized(cfg), "kimi-k2.5")[0]
    model = build(text)
    assert costs.parameters(ours) == parameter_count(model)
