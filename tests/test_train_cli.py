"""The train command, and a QLoRA step, without PyTorch: bad flags get one line naming them
(exit 2), the JSON is valid and its figures hang together, and a 4-bit base with adapters
fits a chip that full training does not; the activations of the plain decoder follow the
teaching formula (Korthikanti et al.'s count)."""
from __future__ import annotations

import contextlib
import io
import json

import pytest

from transformer_arithmetic import ModelShape
from transformer_arithmetic.memory import layer_activation_bytes
from transformer_calculator.counting.activations import activation_bytes
from transformer_calculator.counting.chips import chip
from transformer_calculator.command_line.cli import main
from transformer_calculator.reading.config import (example_config_path,
                                                   model_from_config, read_config)
from transformer_calculator.reading.plain import model_of
from transformer_calculator.counting.training import (ALL_LINEAR, Lora, Training,
                                                      lora_parameters,
                                                      optimizer_state_bytes)
from transformer_calculator.counting.training_time import step_work, train_figures


SHAPE = ModelShape(layers=2, heads=4, kv_heads=2, head_dim=16, ffn_width=96, vocab=512, gated_ffn=True,
                   tied_embeddings=False, norm_bias=True, bytes_per_number=2)
B, N = 2, 32


def test_activations_equal_the_teaching_formula_for_the_plain_decoder():
    """Korthikanti et al.'s count as the book teaches it (memory.layer_activation_bytes without
    dropout): with the grid (no recomputation) and without it (selective)."""
    m = model_of(SHAPE)
    for recompute, keep in (("none", True), ("selective", False)):
        layer = sum(layer_activation_bytes(SHAPE, B, N, keep_scores=keep, dropout=False).values())
        outer = 2 * B * N * SHAPE.width * 2  # the final norm's and the head's inputs
        assert activation_bytes(m, B, N, recompute) == SHAPE.layers * layer + outer


def test_qlora_fits_a_small_chip_and_full_training_does_not():
    m, _ = read_config(example_config_path("llama-3-8b"))
    lora = Training(seq_len=2048, lora=Lora(16, ALL_LINEAR[:7]), recompute="full")
    q = model_from_config({**json.loads(example_config_path("llama-3-8b").read_text()),
                           "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                                   "bnb_4bit_quant_type": "nf4"}})[0]
    small = chip("rtx-4090")
    assert train_figures(q, small, lora, 10**9)["fits"]
    assert not train_figures(m, small, Training(seq_len=2048), 10**9)["fits"]
    work = step_work(q, lora)  # a frozen base: no weights' gradients; forward, backward and
    # the layers' forward again (full recomputation), 2 operations a multiplied number each:
    # every matrix but the input table (looked up) and the head (not run again)
    multiplied = m.layout.active_parameters - m.layout.looked_up - (2 * 32 + 1) * 4096
    head = m.layout.vocab * m.layout.width
    assert work.matrix == 2048 * 2 * (3 * multiplied - head)
    assert optimizer_state_bytes(q, lora) == 8 * lora_parameters(q, lora.lora)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("argv", "flag"), [
    (["--devices", "0"], "--devices"), (["--zero-stage", "4"], "--zero-stage"),
    (["--optimizer", "lion"], "--optimizer"), (["--recompute", "some"], "--recompute"),
    (["--lora-targets", "q_proj"], "--lora-targets"), (["--lora-rank", "0"], "--lora-rank"),
    (["--lora-rank", "8", "--lora-targets", "wq"], "--lora-targets"), (["--tokens", "1e40"], "--tokens"),
    (["--seq-len", "2.5"], "--seq-len"), (["--batch", "x"], "--batch"),
])
def test_train_flags(argv, flag):
    code, out, err = run("train", "gated-gqa-1b", *argv)
    assert (code, out) == (2, "") and flag in err and err.count("\n") == 1, err


def test_train_command_json_and_text():
    code, out, err = run("train", "llama-3-8b", "--chip", "h100", "--zero-stage", "3", "--devices", "8",
                         "--batch", "2", "--seq-len", "4096", "--tokens", "1e12", "--json",
                         "--flops-efficiency", "0.5")
    assert code == 0, err
    r = json.loads(out)
    assert r["training"]["zero_stage"] == 3 and 0 < r["model_flops_utilisation"] <= 0.5
    assert r["chip_hours"] == pytest.approx(r["training_seconds"] * 8 / 3600)
    assert r["tokens_per_s"] == pytest.approx(8 * 2 * 4096 / r["step_seconds"])
    text = run("train", "llama-3-8b", "--chip", "h100", "--lora-rank", "16")[1]
    assert "LoRA of rank 16 on q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj" in text
    code, _, err = run("train", "jamba-v0.1")
    assert code == 1 and "running summary" in err


def test_train_ddp_buckets_add_one_copy_of_the_gradients():
    args = ("train", "llama-3-8b", "--chip", "h100", "--devices", "8", "--json")
    plain = json.loads(run(*args)[1])["memory"]
    code, out, err = run(*args, "--ddp-buckets")
    assert code == 0, err
    kept = json.loads(out)["memory"]
    assert plain["gradient buckets"] == 0 and kept["gradient buckets"] == kept["gradients"] > 0
