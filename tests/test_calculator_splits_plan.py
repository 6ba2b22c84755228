"""A tensor-parallel device's share against ``transformers``' own tensor-parallel plan: the
``base_model_tp_plan`` of each real config class (and the model's ``_tp_plan`` for the head)
says which matrices are cut by their outputs (``colwise``, ``packed_colwise``: weight dimension
-2 and its bias) and which by their inputs (``rowwise``: dimension -1, its bias whole), and
everything it does not name stays whole on every rank. Applied to the model ``transformers``
builds on the meta device, it gives each rank's numbers layer by layer, which must equal the
calculator's device layout (``splits.device_model``).

Where the two differ, by design, the test says so: ``transformers`` keeps the input table
whole (the calculator cuts it by vocabulary rows, as Megatron-LM's VocabParallelEmbedding
does), and its DeepSeek-V3 plan names no attention matrix (the calculator cuts latent attention
by heads, as vLLM and SGLang do), so for DeepSeek-V3 only the feed-forward parts are compared.
"""
from __future__ import annotations

import fnmatch
import json

import pytest

import hf_reference as hf
from transformer_calculator.command_line.cli import main
from transformer_calculator.reading.config import example_config_path, read_config
from transformer_calculator.splits import Split, device_model

pytestmark = [pytest.mark.transformers, pytest.mark.meta_device, pytest.mark.slow(seconds=8)]

CASES = [  # (config, shipped with the library?, tensor-parallel sizes, compare attention?)
    ("llama-3-70b", True, (2, 4, 8), True),
    ("mixtral-8x7b", False, (2, 8), True),
    ("qwen3-30b-a3b", False, (2, 4), True),
    ("deepseek-v3", False, (8,), False),
]


def _config(name: str, shipped: bool) -> tuple[dict, object]:
    path = example_config_path(name) if shipped else hf.config_path(name)
    cfg = json.loads(path.read_text())
    cfg.pop("quantization_config", None)
    return cfg, read_config(path)[0]


def _local(name: str, shape: tuple[int, ...], plan: dict, tp: int) -> int:
    """Numbers of one parameter a rank holds under ``plan``."""
    module, _, leaf = name.rpartition(".")
    style = next((s for k, s in plan.items()
                  if fnmatch.fnmatchcase(module, k) or fnmatch.fnmatchcase(name, k)), None)
    numbers = 1
    for d in shape:
        numbers *= d
    if style in ("colwise", "packed_colwise", "colwise_gather_output"):
        cut = shape[-2] if len(shape) >= 2 else shape[0]
    elif style == "rowwise":
        cut = shape[-1] if len(shape) >= 2 else None  # a row-split layer's bias is whole
    else:
        cut = None
    if cut is None:
        return numbers
    assert cut % tp == 0, (name, shape, tp)
    return numbers // tp


@pytest.mark.parametrize("name, shipped, sizes, attention", CASES)
def test_each_ranks_share_is_transformers_tp_plan(name, shipped, sizes, attention):
    hf.quiet()
    cfg, model = _config(name, shipped)
    built = hf.build(cfg)
    plan = {f"model.{k}": v for k, v in type(built.config).base_model_tp_plan.items()}
    plan.update(type(built)._tp_plan)
    assert plan, "the config class names a tensor-parallel plan"
    layers = built.config.num_hidden_layers
    for tp in sizes:
        ours = device_model(model, Split(tp=tp)).layout
        for i in sorted({0, layers - 1}):
            got = {"self_attn": 0, "mlp": 0}
            for n, p in built.named_parameters():
                part = n.split(".")[3] if n.startswith(f"model.layers.{i}.") else None
                if part in got:
                    got[part] += _local(n, tuple(p.shape), plan, tp)
            block = ours.blocks[i]
            assert got["mlp"] == block.ffn.parameters, (name, tp, i)
            if attention:
                assert got["self_attn"] == block.mixer.parameters, (name, tp, i)
        head = _local("lm_head.weight", tuple(built.lm_head.weight.shape), plan, tp)
        assert head == ours.vocab * ours.width, (name, tp)


def test_a_model_counted_by_the_transformers_route_is_not_split():
    code = main(["report", "llama-3-8b", "--chip", "h100", "--route", "transformers",
                 "--tp", "2"])
    assert code == 2
