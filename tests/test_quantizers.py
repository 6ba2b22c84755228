"""Weight formats against real quantizers' packed bytes, on the CPU.

A tiny model of a published family is built by transformers on the CPU; a real quantizer then
packs its matrices, and the bytes of the tensors it keeps must equal the calculator's count for
the same config with the same quantization_config:

- bitsandbytes (0.50.2): every Linear but the head becomes a ``bnb.nn.Linear4bit`` (nf4 and fp4,
  with and without double quantisation) or ``bnb.nn.Linear8bitLt``, moved to the CPU, which
  quantizes it; the count is the packed weight and its quantisation state's tensors.
- compressed-tensors (0.20.0): the library's own ``apply_quantization_config`` and
  ``ModelCompressor.compress_model`` (pack-quantized 4 and 8 bits, symmetric and not, by group
  and by channel; int-quantized and float-quantized by channel, tensor and block); the count
  is the compressed state dict.
"""
from __future__ import annotations

import warnings

import pytest
import torch

import hf_reference as H
from transformer_calculator.counting import stored
from transformer_calculator.reading.config import model_from_config

pytestmark = [pytest.mark.transformers, pytest.mark.torch_counts, pytest.mark.slow(seconds=10)]

TINY = {**H.tiny("llama-3-8b"), "hidden_size": 64, "intermediate_size": 96, "head_dim": 16,
        "num_attention_heads": 4, "num_key_value_heads": 2, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16"}
"""Llama-3 shrunk: every matrix a multiple of 32 inputs and outputs, as the packers need."""


@pytest.fixture(scope="module", autouse=True)
def _quiet():
    H.quiet()
    warnings.filterwarnings("ignore")


def _tiny_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return H.build(TINY, device="cpu")


def _replace_linears(model, make):
    for name, module in list(model.named_modules()):
        if isinstance(module, torch.nn.Linear) and not name.endswith("lm_head"):
            model.set_submodule(name, make(module))


def _tensor_bytes(tensors) -> int:
    unique = {t.data_ptr(): t for t in tensors if t is not None}
    return sum(t.numel() * t.element_size() for t in unique.values())


@pytest.mark.parametrize(("kind", "double"), [("nf4", False), ("nf4", True), ("fp4", False)])
def test_bitsandbytes_4bit(kind, double):
    import bitsandbytes as bnb

    model = _tiny_model()

    def make(lin):
        new = bnb.nn.Linear4bit(lin.in_features, lin.out_features, bias=False, quant_type=kind,
                                compress_statistics=double, compute_dtype=torch.bfloat16)
        new.weight = bnb.nn.Params4bit(lin.weight.data.clone(), requires_grad=False, quant_type=kind,
                                       compress_statistics=double, blocksize=64)
        return new.to("cpu")  # quantizes here

    _replace_linears(model, make)
    held = []
    for module in model.modules():
        if isinstance(module, bnb.nn.Linear4bit):
            qs = module.weight.quant_state
            held += [module.weight, qs.absmax, qs.code]
            if qs.nested:
                held += [qs.offset, qs.state2.absmax, qs.state2.code]
            assert module.weight.bnb_quantized
    packed = {id(m.weight) for m in model.modules() if isinstance(m, bnb.nn.Linear4bit)}
    rest = [p for p in H.unique_parameters(model) if id(p) not in packed]
    qc = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": kind,
          "bnb_4bit_use_double_quant": double}
    ours, _ = model_from_config({**TINY, "quantization_config": qc})
    per_matrix = [t for t in held if t.dim() <= 1 and t.numel() in (16, 256)]  # the code tables
    assert len({t.data_ptr() for t in per_matrix}) == len(per_matrix)  # one table a matrix
    assert stored.weight_bytes(ours) == _tensor_bytes(held) + _tensor_bytes(rest)


def test_bitsandbytes_8bit():
    import bitsandbytes as bnb

    model = _tiny_model()

    def make(lin):
        new = bnb.nn.Linear8bitLt(lin.in_features, lin.out_features, bias=False, has_fp16_weights=False)
        new.weight = bnb.nn.Int8Params(lin.weight.data.clone().half(), requires_grad=False,
                                       has_fp16_weights=False)
        return new.to("cpu")

    _replace_linears(model, make)
    held = [t for m in model.modules() if isinstance(m, bnb.nn.Linear8bitLt)
            for t in (m.weight, m.weight.SCB)]
    assert all(t.dtype in (torch.int8, torch.float32) for t in held)
    packed = {id(m.weight) for m in model.modules() if isinstance(m, bnb.nn.Linear8bitLt)}
    rest = [p for p in H.unique_parameters(model) if id(p) not in packed]
    ours, _ = model_from_config({**TINY, "quantization_config": {"quant_method": "bitsandbytes",
                                                                 "load_in_8bit": True}})
    assert stored.weight_bytes(ours) == _tensor_bytes(held) + _tensor_bytes(rest)


def _weights(**args) -> dict:
    return {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", **args}


@pytest.mark.parametrize(("fmt", "weights"), [
    ("pack-quantized", _weights(num_bits=4, strategy="group", group_size=32)),
    ("pack-quantized", _weights(num_bits=4, strategy="group", group_size=32, symmetric=False)),
    ("pack-quantized", _weights(num_bits=8, strategy="channel")),
    ("int-quantized", _weights()),
    ("float-quantized", _weights(type="float", strategy="tensor")),
    ("float-quantized", _weights(type="float", strategy="block", block_structure=[32, 32])),
])
def test_compressed_tensors(fmt, weights):
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config

    qc = {"quant_method": "compressed-tensors", "format": fmt, "ignore": ["lm_head"],
          "quantization_status": "compressed",
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}}}
    model = _tiny_model()
    config = QuantizationConfig.model_validate({**qc, "quantization_status": "calibration"})
    apply_quantization_config(model, config)
    ModelCompressor.from_pretrained_model(model, quantization_format=fmt).compress_model(model)
    state = model.state_dict()
    real = _tensor_bytes(state.values())
    ours, _ = model_from_config({**TINY, "quantization_config": qc})
    assert any(k.endswith(("weight_packed", "weight_scale")) for k in state)
    assert stored.weight_bytes(ours) == real
