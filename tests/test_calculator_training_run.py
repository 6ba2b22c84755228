"""Training as it runs, without PyTorch: gradient accumulation (the optimizer's step once a
global batch), model-flops utilisation against the rates the step runs at (fp8 weights never
pass 100 %), the bytes a parameter as a choice (16, 18, 20, and the 12 of 16-bit training
without a master copy), a fused gated activation, and the step's work against the teaching
formula (``training.step_flops``) where both count the same thing."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json

import pytest

from transformer_arithmetic import ModelShape
from transformer_arithmetic import training as teaching
from transformer_calculator.counting.activations import activation_bytes
from transformer_calculator.counting.chips import chip
from transformer_calculator.command_line.cli import load_model, main
from transformer_calculator.reading.plain import model_of
from transformer_calculator.counting.training import (Training, bytes_per_parameter,
                                                      step_memory)
from transformer_calculator.counting.training_time import (model_time, optimizer_time,
                                                           pass_time, step_time,
                                                           step_work, train_figures)

H100 = chip("h100-sxm")
SHAPE = ModelShape(layers=3, heads=8, kv_heads=2, head_dim=32, ffn_width=512, vocab=1024,
                   gated_ffn=True, tied_embeddings=False)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("shape", [SHAPE, dataclasses.replace(SHAPE, tied_embeddings=True)])
@pytest.mark.parametrize(("recompute", "words"), [("none", "score grids"),
                                                  ("selective", "score grids"),
                                                  ("full", "everything")])
def test_a_steps_work_is_the_teaching_count(shape, recompute, words):
    """Forward 2 a number a token is multiplied by (the input table looked up, the norms left
    out), backward 4, the pairs three times, recomputation's forward again (full: every layer,
    not the head): training.step_flops for the plain decoder. Selective recomputation redoes
    the grid; "none" keeps it, and the teaching count's "nothing" differs by those pairs."""
    w = step_work(model_of(shape), Training(batch=2, seq_len=128, recompute=recompute))
    want = teaching.step_flops(shape, 2, 128, words if recompute != "none" else "nothing")
    assert w.matrix + w.other == want
    assert w.model == teaching.step_flops(shape, 2, 128, "nothing")


def test_gradient_accumulation_takes_the_optimizers_step_once():
    """A step of 16 sequences in 16 micro-batches runs 16 passes (the last 15 adding
    into the gradients) and one optimizer step, holding one micro-batch's activations; run unaccumulated (16 steps of one sequence) the
    optimizer's states are read and written 16 times."""
    model = model_of(SHAPE)
    one = Training(batch=1, seq_len=256)
    acc = Training(batch=16, seq_len=256, micro_batches=16)
    assert step_time(model, H100, acc) == pytest.approx(
        pass_time(model, H100, acc) + 15 * pass_time(model, H100, acc, adding=True)
        + optimizer_time(model, H100, acc), rel=1e-12)
    assert pass_time(model, H100, acc, adding=True) >= pass_time(model, H100, acc)
    assert step_time(model, H100, acc) < 16 * step_time(model, H100, one)
    assert step_memory(model, acc)["activations"] == step_memory(model, one)["activations"]


def test_deepseek_v3s_floor_is_below_its_real_run():
    """DeepSeek-V3 trained 14.8T tokens in 2.788M H800 GPU-hours (its report, Table 1); one
    optimizer step a global batch of 15,360 sequences of 4,096 (the batch it reached), the
    floor on H100s (the same arithmetic) comes in below it, as a floor must (before, one
    optimizer step a sequence put the 'floor' above reality)."""
    code, out, err = cli("train", "deepseek-v3-fp8", "--chip", "h100", "--seq-len", "4096",
                         "--batch", "15360", "--micro-batches", "15360", "--tokens",
                         "14.8e12", "--json")
    assert code == 0, err
    assert json.loads(out)["chip_hours"] < 2.788e6


def test_fp8_utilisation_is_against_the_fp8_rate_and_never_past_one():
    """With fp8 weights the matrices multiply at the chip's fp8 rate; utilisation is the time
    the model's own work takes at the rates used over the step's time, never above 100 %."""
    for weights in ([], ["--weights", "fp8"]):
        code, out, err = cli("train", "llama-3-8b", "--chip", "h100-sxm", "--json", *weights)
        r = json.loads(out)
        assert code == 0 and 0 < r["model_flops_utilisation"] <= 1, err
        assert ("fp8" in r["utilisation_against"]) is bool(weights)
    model, _ = load_model("llama-3-8b")
    t = Training(seq_len=4096)
    assert model_time(model, H100, t) <= step_time(model, H100, t)


@pytest.mark.parametrize(("flags", "per"), [({}, 16), ({"gradients": "fp32"}, 18),
                                            ({"gradients": "both"}, 20),
                                            ({"master_weights": False}, 12)])
def test_bytes_a_parameter_are_a_choice(flags, per):
    """AdamW on 16-bit weights: 16 bytes a parameter with 16-bit gradients and a float32
    master copy, 18 with float32 gradients only (Megatron-LM), 20 with both (DeepSpeed,
    nanotron), 12 without a master copy (the 16-bit fine-tuning QLoRA measures itself
    against)."""
    model = model_of(SHAPE)
    t = Training(**flags)
    assert bytes_per_parameter(model, t) == per
    parts = step_memory(model, t)
    states = ("weights", "gradients", "float32 gradients", "float32 master weights",
              "optimizer states")
    assert sum(parts[k] for k in states) == per * model.layout.parameters


def test_the_cli_takes_the_choices_and_says_them():
    code, out, err = cli("train", "llama-3-8b", "--chip", "h100", "--gradients", "fp32",
                         "--dropout", "--fused-glu", "--batch", "4", "--micro-batches", "4",
                         "--no-master-weights")
    assert code == 0, err
    assert "14 bytes each" in out and "cut into 4 micro-batches" in out
    assert "with dropout's one-byte masks" in out
    code, _, err = cli("train", "llama-3-8b", "--batch", "4", "--micro-batches", "3")
    assert code == 2 and "--micro-batches" in err
    code, _, err = cli("train", "llama-3-8b", "--gradients", "fp32", "--fp32-gradients")
    assert code == 2 and "--gradients" in err


def test_a_fused_gated_activation_keeps_three_inner_vectors():
    """Megatron-LM's bias-SwiGLU keeps its input (gate and up) and recomputes the activated
    gate: one inner vector a token fewer than PyTorch's own operations keep."""
    model, n = model_of(SHAPE), 64
    eager = activation_bytes(model, 1, n, "selective")
    fused = activation_bytes(model, 1, n, "selective", fused_glu=True)
    assert eager - fused == n * SHAPE.layers * SHAPE.ffn_width * SHAPE.bytes_per_number


def test_train_figures_hang_together():
    model = model_of(SHAPE)
    t = Training(batch=8, seq_len=512, micro_batches=4, devices=2)
    r = train_figures(model, H100, t, 10**9)
    assert r["tokens_per_s"] == pytest.approx(8 * 512 * 2 / r["step_seconds"])
    assert r["memory_bytes"] == sum(r["memory"].values())
    assert r["bytes_per_parameter"] == 16
