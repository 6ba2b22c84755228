"""Weight formats against the models transformers builds on the meta device (shapes only).

- The matrices a quantizer packs: the calculator's list (matrices.py), role by role, against
  the weight tensors of the model transformers builds (its Linear and Conv1D weights, its
  experts' stacked tensors, its routers, embeddings and head).
- Fine-grained fp8 (DeepSeek-V3's format): transformers' own quantized model, made by
  ``transformers.integrations.finegrained_fp8.replace_with_fp8_linear`` on the meta device
  (FP8Linear and FP8Experts with their float32 block scales), byte for byte.
- GPTQ and AWQ, whose kernels do not install here: every Linear of the transformers model
  replaced by the buffers their libraries register, as written in their sources:
  AutoGPTQ/AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_triton.py (commit 4b7393c): qweight
  int32 (in // 32 * bits, out), qzeros int32 (ceil(in / group), out // 32 * bits), scales fp16
  (ceil(in / group), out), g_idx int32 (in,); casper-hansen/AutoAWQ awq/modules/linear/gemm.py
  (commit d9dc8e5), WQLinear_GEMM: qweight int32 (in, out // 8), qzeros int32 (in // group,
  out // 8), scales fp16 (in // group, out).
"""
from __future__ import annotations

import math

import pytest
import torch

import hf_reference as H
from transformer_calculator.counting import stored
from transformer_calculator.reading.config import model_from_config
from transformer_calculator.anatomy.matrices import matrices

pytestmark = [pytest.mark.transformers, pytest.mark.meta_device, pytest.mark.slow(seconds=12)]

FILES = ["llama-3-8b", "mixtral-8x7b", "qwen1.5-moe-a2.7b", "deepseek-v3", "jamba-v0.1", "bamba-9b",
         "gpt2", "opt-350m"]
DEEPSEEK_FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                "weight_block_size": [128, 128]}
"""DeepSeek-V3's published quantization_config."""


@pytest.fixture(scope="module", autouse=True)
def _quiet():
    H.quiet()
    H.load_modelling_code()


def _role(name: str, module: torch.nn.Module | None) -> str | None:
    """The calculator's role for a weight transformers names so (None: not a matrix)."""
    if name.endswith(("embed_tokens.weight", "wte.weight", "wpe.weight", "embed_positions.weight")):
        return "embeddings"
    if name.endswith("lm_head.weight"):
        return "head"
    if ".experts." in name:
        return "experts"
    if name.endswith("shared_expert_gate.weight"):
        return "shared-gate"
    if name.endswith((".gate.weight", ".router.weight")):
        return "router"
    if module is None or not name.endswith(".weight") or not (
            isinstance(module, torch.nn.Linear) or type(module).__name__ == "Conv1D"):
        return None
    if "project_in" in name or "project_out" in name:
        return "projection"
    if ".mamba." in name or ".mixer." in name or ".linear_attn." in name:
        return "summary"
    if ".self_attn." in name or ".attn." in name:
        return "attention"
    return "feed-forward"


def transformers_roles(model: torch.nn.Module) -> dict[str, int]:
    """Numbers in each role's weight tensors of a transformers model (tied tensors once)."""
    modules = dict(model.named_modules())
    seen, roles = set(), {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            continue
        seen.add(id(p))
        role = _role(name, modules.get(name.rsplit(".", 1)[0]))
        if role:
            roles[role] = roles.get(role, 0) + p.numel()
    return roles


@pytest.mark.parametrize("name", FILES)
def test_matrices_are_the_weights_transformers_builds(name):
    cfg = H.published(name)
    ours = {}
    for m in matrices(model_from_config(cfg)[0].layout):
        ours[m.role] = ours.get(m.role, 0) + m.numbers
    assert ours == transformers_roles(H.build(cfg))


def _all_bytes(model: torch.nn.Module) -> int:
    """Bytes of every parameter (FP8Linear and FP8Experts hold their weights and scales as
    parameters; the rotary tables are buffers, not weights)."""
    return sum(p.numel() * p.element_size() for p in H.unique_parameters(model))


@pytest.mark.parametrize("name", ["llama-3-8b", "mixtral-8x7b", "qwen1.5-moe-a2.7b", "deepseek-v3"])
def test_fine_grained_fp8_against_transformers_quantized_model(name):
    from transformers import FineGrainedFP8Config
    from transformers.integrations.finegrained_fp8 import replace_with_fp8_linear

    cfg = {**H.published(name), "quantization_config": DEEPSEEK_FP8}
    model = H.build({k: v for k, v in cfg.items() if k != "quantization_config"})
    qc = FineGrainedFP8Config(weight_block_size=(128, 128), activation_scheme="dynamic")
    # the layers made with the model's dtype as torch's default (as from_pretrained sets it while
    # it builds the model), so a converted layer's bias comes out in that dtype
    default = torch.get_default_dtype()
    torch.set_default_dtype(H.dtype(cfg))
    try:
        replace_with_fp8_linear(model, modules_to_not_convert=["lm_head"], quantization_config=qc)
    finally:
        torch.set_default_dtype(default)
    ours, _ = model_from_config(cfg)
    assert stored.weight_bytes(ours) == _all_bytes(model)


@pytest.mark.parametrize("name", ["llama-3-8b", "mixtral-8x7b"])
def test_fbgemm_fp8_against_transformers_own_layer(name):
    """transformers' FbgemmFp8Linear (integrations/fbgemm_fp8.py) in place of every Linear but
    the head, as replace_with_fbgemm_fp8_linear does (it needs fbgemm's GPU kernels to run):
    fp8 weights and a float32 scale an output row; Mixtral's stacked experts are no Linear and
    stay as built."""
    from transformers.integrations.fbgemm_fp8 import FbgemmFp8Linear

    model = H.build(H.published(name))
    with torch.device("meta"):
        for key, module in list(model.named_modules()):
            if isinstance(module, torch.nn.Linear) and not key.endswith("lm_head"):
                model.set_submodule(key, FbgemmFp8Linear(module.in_features, module.out_features,
                                                         module.bias is not None))
    ours, _ = model_from_config({**H.published(name), "quantization_config": {"quant_method": "fbgemm_fp8"}})
    assert stored.weight_bytes(ours) == _all_bytes(model)


def _from_source(model: torch.nn.Module, scheme: str, bits: int, group: int) -> int:
    """Bytes of the model with every Linear but the head replaced by the buffers its
    library registers (see the module's docstring), everything else as built."""
    total, packed = 0, set()
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear) or name.endswith("lm_head"):
            continue
        i, o = module.in_features, module.out_features
        packed.add(id(module.weight))
        g = i if group == -1 else group
        if scheme == "gptq":  # qweight, qzeros, scales, g_idx
            total += 4 * (i // 32 * bits) * o + 4 * math.ceil(i / g) * (o // 32 * bits)
            total += 2 * math.ceil(i / g) * o + 4 * i
        else:  # awq: qweight, qzeros, scales
            total += 4 * i * (o // 8) + 4 * (i // g) * (o // 8) + 2 * (i // g) * o
    rest = {id(p): p for p in model.parameters() if id(p) not in packed}
    return total + sum(p.numel() * p.element_size() for p in rest.values())


@pytest.mark.parametrize(("scheme", "bits", "group"), [("gptq", 4, 128), ("gptq", 8, -1), ("gptq", 2, 64),
                                                       ("awq", 4, 128), ("awq", 4, 64)])
def test_gptq_and_awq_by_their_sources_layout(scheme, bits, group):
    qc = {"quant_method": scheme, "bits": bits, "group_size": group}
    if scheme == "awq":
        qc |= {"version": "gemm", "zero_point": True}
    cfg = {**H.published("llama-3-8b"), "quantization_config": qc}
    ours, notes = model_from_config(cfg)
    assert stored.weight_bytes(ours) == _from_source(H.build(H.published("llama-3-8b")), scheme, bits, group)
    assert any("quantization_config" in n for n in notes)
