"""A training step's model states and LoRA's adapters against DeepSpeed and PEFT.

- DeepSpeed's own estimators (``estimate_zero2_model_states_mem_needs`` and
  ``estimate_zero3_model_states_mem_needs``, DeepSpeed 0.19.8), fed the parameter counts of the
  book's plain decoder built on the meta device.
- PEFT's LoRA (0.21.2): the trainable parameters of ``get_peft_model`` on models transformers
  builds on the meta device.
"""
from __future__ import annotations

import warnings

import pytest
import torch

import hf_reference as H
from transformer_arithmetic import ModelShape
from transformer_arithmetic.runs.reference_model import Decoder
from transformer_calculator.reading.config import model_from_config
from transformer_calculator.reading.plain import model_of
from transformer_calculator.counting.training import (ALL_LINEAR, Lora, Training,
                                                      lora_parameters, step_memory)

pytestmark = [pytest.mark.meta_device, pytest.mark.transformers, pytest.mark.slow(seconds=10)]

SHAPE = ModelShape(layers=2, heads=4, kv_heads=2, head_dim=16, ffn_width=96, vocab=512, gated_ffn=True,
                   tied_embeddings=False, norm_bias=True, bytes_per_number=2)


@pytest.fixture(scope="module", autouse=True)
def _quiet():
    warnings.filterwarnings("ignore")
    H.quiet()


def test_deepspeed_estimators():
    """DeepSpeed's estimate_zero2 (no offload) counts 2 bytes a parameter on every device and
    18 split across them (16-bit and 32-bit gradients, a 32-bit master copy, Adam's two
    moments): the calculator's stage 2 with a float32 gradient copy, exactly. Its estimate_zero3
    counts the largest layer gathered (4 bytes a number) and the same 18 split; the calculator
    also splits the 16-bit gradients (2 bytes a parameter more over the devices)."""
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    with torch.device("meta"):
        decoder = Decoder(SHAPE).to(torch.bfloat16)
    # DeepSpeed's model_to_params, by its own definition (it tells tied tensors apart by their
    # data pointers, which the meta device does not have): every parameter once, and the most
    # numbers one module holds itself
    total = sum(p.numel() for p in {id(p): p for p in decoder.parameters()}.values())
    largest = max(sum(p.numel() for p in mod.parameters(recurse=False)) for mod in decoder.modules())
    m = model_of(SHAPE)
    assert total == m.layout.parameters
    for devices in (1, 8, 64):
        t2 = Training(zero_stage=2, devices=devices, gradients="both")
        states = ("weights", "gradients", "float32 gradients", "float32 master weights", "optimizer states")
        ours2 = step_memory(m, t2)
        _, gpu2 = estimate_zero2_model_states_mem_needs(total, devices, 1, cpu_offload=False)
        assert sum(ours2[k] for k in states) == pytest.approx(gpu2, abs=1)
        t3 = Training(zero_stage=3, devices=devices, gradients="both")
        ours3 = step_memory(m, t3)
        _, gpu3, gathered = estimate_zero3_model_states_mem_needs(
            total, largest, devices, 1, cpu_offload=False, cpu_offload_params=False)
        assert ours3["gathered weights"] == (gathered if devices > 1 else 0)
        assert sum(ours3[k] for k in states) + ours3["gathered weights"] == pytest.approx(
            gpu3 + 2 * total / devices - (0 if devices > 1 else gathered), abs=1)


@pytest.mark.parametrize(("name", "rank", "targets", "full"), [
    ("llama-3-8b", 16, "all-linear", True), ("llama-3-8b", 8, ["q_proj", "v_proj"], False),
    ("mixtral-8x7b", 4, "all-linear", False), ("qwen1.5-moe-a2.7b", 4, "all-linear", False),
    ("jamba-v0.1", 4, "all-linear", False),
    ("opt-350m", 4, "all-linear", False), ("deepseek-v3", 4, ["q_b_proj", "kv_b_proj"], False)])
def test_lora_parameters_against_peft(name, rank, targets, full):
    """PEFT's LoRA on the model transformers builds (Llama-3-8B's published widths, a shrunk
    model of each other family): attention, feed-forward, routers, stacked experts,
    running summaries' projections, OPT's projections."""
    from peft import LoraConfig, get_peft_model

    H.quiet()
    # the published widths with 2 of Llama-3-8B's 32 layers (each layer adds the same adapters;
    # PEFT takes seconds a layer on the meta device), or a shrunk model of the family
    cfg = {**H.published(name), "num_hidden_layers": 2} if full else H.tiny(name)
    model = get_peft_model(H.build(cfg), LoraConfig(r=rank, target_modules=targets))
    trainable, _ = model.get_nb_trainable_parameters()
    ours = model_from_config(cfg)[0]
    names = tuple(targets) if targets != "all-linear" else ALL_LINEAR + (
        ("gate", "experts") if name == "mixtral-8x7b" else ())  # PEFT adapts Mixtral's experts too
    assert lora_parameters(ours, Lora(rank, names)) == trainable
    if full:  # the whole model: 32 layers of the same adapters
        assert trainable * 16 == 41_943_040 == lora_parameters(
            model_from_config(H.published(name))[0], Lora(rank, names))


