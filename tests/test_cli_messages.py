"""The command line answers a reader who does not know it yet: called bare it prints its
usage and its commands; a mistyped flag or command gets the nearest one; a short chip
name that fits two chips says which it took; each command's help lists its own options
only; a config that names no family, or one nobody knows, is answered in Hugging Face's
own field names; and every tool of the book's machinery answers ``--help``."""
from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json

import pytest

from book_files import ROOT
from transformer_calculator.command_line.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_called_bare_it_prints_its_usage_and_every_command():
    code, out, err = run()
    assert code == 0 and err == ""
    assert out.startswith("usage: python -m transformer_calculator")
    for command in ("report", "train", "configs", "chips", "families"):
        assert f"\n    {command} " in out, f"the usage does not list {command}"


@pytest.mark.parametrize(("argv", "said"), [
    (("report", "llama-3-8b", "--contxt", "4096"), "did you mean --context?"),
    (("train", "llama-3-8b", "--zero-satge", "2"), "did you mean --zero-stage?"),
    (("reprot", "llama-3-8b"), "did you mean report?"),
    (("report", "llama-3-8b", "--micro-batches", "2"),
     "--micro-batches is an option of train, not of report"),
])
def test_a_mistyped_flag_or_command_gets_the_nearest_one(argv, said):
    code, out, err = run(*argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert said in err, err


@pytest.mark.parametrize("command", ["report", "train"])
def test_a_chip_name_that_fits_two_chips_says_which_it_took(command):
    _, out, _ = run(command, "llama-3-8b", "--chip", "h100", "--json")
    said = [a for a in json.loads(out)["assumptions"] if a.startswith("--chip h100:")]
    assert said and "h100-sxm" in said[0] and "--chip h100-pcie" in said[0], said
    text = run(command, "llama-3-8b", "--chip", "h100")[1]
    assert said[0] in text
    exact = json.loads(run(command, "llama-3-8b", "--chip", "h100-sxm", "--json")[1])
    assert not any(a.startswith("--chip") for a in exact["assumptions"])


def test_each_commands_help_lists_its_own_options():
    report, train = run("report", "--help")[1], run("train", "--help")[1]
    assert "--micro-batches" not in report and "--micro-batches" in train
    assert "--kv-dtype" in report and "--kv-dtype" not in train
    assert "--zero-stage" in train and "--zero-stage" not in report
    for command in ("configs", "chips", "families"):
        help_text = run(command, "--help")[1]
        described = help_text.split("\n\n")[1]
        assert not described.startswith(("options:", "positional")), f"{command} --help: {help_text}"


@pytest.mark.parametrize(("config", "field"), [
    ({}, "model_type"),
    ({"model_type": "not-a-family", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128}, "hidden_act"),
    ({"model_type": "not-a-family", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128,
      "hidden_act": "weird"}, "hidden_act"),
])
def test_a_bare_or_unknown_config_is_answered_in_hugging_faces_field_names(tmp_path, config, field):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, err = run("report", str(path))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert f"config field {field}" in err, err
    assert "gated_ffn" not in err, err


def test_an_empty_place_in_a_list_holds_nothing():
    data = json.loads(run("report", "llama-3-8b", "--context", "4096,", "--batch", " 1, 8,",
                          "--json")[1])
    assert [r["tokens"] for r in data["lengths"]] == [4096]
    assert sorted({r["batch"] for r in data["throughput"]}) == [1, 8]
    code, _, err = run("report", "llama-3-8b", "--context", ",")
    assert code == 2 and "argument --context: needs a whole number" in err


def machinery_tools() -> list[str]:
    """Every book_machinery module a reader runs with python -m (it has a __main__ block)."""
    found = []
    for path in sorted((ROOT / "lib" / "book_machinery").glob("*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body):
            found.append(path.stem)
    return found


def test_there_are_tools_to_ask():
    assert {"execute", "pdf", "lab", "preview", "swap", "bench"} <= set(machinery_tools())


@pytest.mark.parametrize("name", machinery_tools())
def test_every_machinery_tool_answers_help(name, capsys):
    module = importlib.import_module(f"book_machinery.{name}")
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m book_machinery.{name}"), out[:200]
