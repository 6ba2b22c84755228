"""The calculator's speculative decoding against the book's own formulas (section 1.6):
on the plain decoder the round, the tokens it yields and the time a token are the
teaching module's, and the command prints when it pays."""

from __future__ import annotations

import dataclasses
import json

import pytest

import transformer_arithmetic as ta
from transformer_arithmetic import timing
from transformer_calculator.counting.chips import chip
from transformer_calculator.command_line.cli import main
from transformer_calculator.reading.plain import model_of
from transformer_calculator.service.serving import Serving
from transformer_calculator.service.speculative import speculative_row

SHAPE = ta.ModelShape(layers=32, heads=32, kv_heads=8, head_dim=128, ffn_width=14336,
                      vocab=128256, gated_ffn=True, tied_embeddings=True, name="t")
DRAFT = dataclasses.replace(SHAPE, layers=4, name="d")


@pytest.mark.parametrize("context,k,a", [(1024, 4, 0.8), (8192, 2, 0.5),
                                          (512, 7, 1.0)])
def test_one_conversation_is_the_books_formula(context, k, a):
    acc = chip("h100-sxm")
    row = speculative_row(model_of(SHAPE), model_of(DRAFT), acc, Serving(), context,
                          1, k, a)
    per_token = row["round_seconds"] / row["tokens_per_round"]
    teaching = timing.speculative_time_per_token(SHAPE, DRAFT, acc, context, k, a)
    assert per_token == pytest.approx(teaching, rel=1e-12)
    assert row["tokens_per_round"] == (k + 1 if a == 1 else (1 - a ** (k + 1)) / (1 - a))
    assert row["check_seconds"] == pytest.approx(
        timing.verify_step_time(SHAPE, acc, context, k + 1), rel=1e-12)


def test_it_pays_at_small_batches_and_not_past_the_critical_batch():
    acc, m, d = chip("h100-sxm"), model_of(SHAPE), model_of(DRAFT)
    small = speculative_row(m, d, acc, Serving(), 1024, 1, 4, 0.8)
    large = speculative_row(m, d, acc, Serving(), 64, 1024, 4, 0.8)
    assert small["pays"] and small["speedup"] > 1
    assert not large["pays"] and large["speedup"] < 1


def test_the_report_prints_it_per_batch_row(capsys):
    args = ["report", "llama-3-8b", "--chip", "h100-sxm", "--context", "1024",
            "--batch", "1,256", "--draft", "llama-3.1-8b", "--draft-tokens", "4",
            "--acceptance", "0.7"]
    assert main(args + ["--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["speculative"]["rows"]
    assert [r["batch"] for r in rows] == [1, 256]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Speculative decoding" in out and "floor" in out


@pytest.mark.parametrize("extra", [["--draft-tokens", "4"],
                                   ["--draft", "plain-small", "--acceptance", "1.5"],
                                   ["--draft", "plain-small", "--tp", "2"]])
def test_bad_draft_input_is_one_line_and_exit_2(extra, capsys):
    code = main(["report", "llama-3-8b", "--chip", "h100-sxm", *extra])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
