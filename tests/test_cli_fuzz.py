"""The command line on malformed input: it never shows a traceback and never prints invalid JSON.

The report's and the train command's flags (chips, formats, lengths, batches, requests,
efficiencies, the engine's memory, ZeRO, LoRA) are driven too, each with good and bad values
and in any combination: a bad value or an impossible combination ends in exit 2 and one line.

Every run must end in one of three ways: exit 0 with a report (``--json``: strictly valid
JSON, every number finite), exit 1 with one line on standard error for a config it cannot
read or refuses, exit 2 with one line for a bad argument. ``main`` is called in-process.
"""
import contextlib
import io
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transformer_calculator.command_line.cli import main
from transformer_calculator.families import STRUCTURE_FIELDS

BASES = {
    "llama": {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "hidden_size": 64, "intermediate_size": 96, "vocab_size": 128, "torch_dtype": "bfloat16"},
    "gpt2": {"model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 64, "n_inner": None, "vocab_size": 128},
    "mixtral": {"model_type": "mixtral", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64,
                "intermediate_size": 96, "vocab_size": 128, "num_local_experts": 4, "num_experts_per_tok": 2,
                "sliding_window": 8, "torch_dtype": "float16"},
    "gemma3": {"model_type": "gemma3_text", "num_hidden_layers": 7, "num_attention_heads": 4, "head_dim": 16,
               "num_key_value_heads": 1, "hidden_size": 64, "intermediate_size": 96, "vocab_size": 128,
               "sliding_window": 6, "torch_dtype": "bfloat16"},
    "jamba": {"model_type": "jamba", "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2,
              "hidden_size": 64, "intermediate_size": 96, "vocab_size": 128, "num_experts": 4,
              "torch_dtype": "bfloat16"},
    "deepseek": {"model_type": "deepseek_v3", "num_hidden_layers": 3, "num_attention_heads": 4, "hidden_size": 64,
                 "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 8,
                 "num_experts_per_tok": 2, "kv_lora_rank": 16, "q_lora_rank": None, "vocab_size": 128},
    "unknown": {"model_type": "new", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64,
                "intermediate_size": 96, "vocab_size": 128, "hidden_act": "silu", "rms_norm_eps": 1e-5,
                "tie_word_embeddings": False},
}

KEYS = sorted(STRUCTURE_FIELDS | {
    "model_type", "num_hidden_layers", "num_attention_heads", "hidden_size", "vocab_size", "torch_dtype", "dtype",
    "tie_word_embeddings", "hidden_act", "rms_norm_eps", "layer_norm_eps", "num_nextn_predict_layers",
    "quantization_config", "text_config", "anything_else"})

QUANTIZATION = st.sampled_from([
    {"quant_method": "gptq", "bits": 4, "group_size": 32}, {"quant_method": "gptq", "bits": 3},
    {"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemm"},
    {"quant_method": "awq", "version": "gemv"}, {"quant_method": "bitsandbytes", "load_in_4bit": True},
    {"quant_method": "bitsandbytes", "load_in_8bit": True, "load_in_4bit": True},
    {"quant_method": "fp8", "weight_block_size": [16, 16]}, {"quant_method": "fp8", "weight_block_size": [1]},
    {"quant_method": "fbgemm_fp8"}, {"quant_method": "compressed-tensors", "format": "pack-quantized",
                                      "config_groups": {"g": {"targets": ["Linear"], "weights": {
                                          "num_bits": 4, "strategy": "group", "group_size": 32}}}},
    {"quant_method": "hqq"}, {"quant_method": "gptq", "modules_to_not_convert": ["layers.0"]}, [], "x"])
"""quantization_config values, read or refused."""

scalars = (st.none() | st.booleans()
           | st.integers(-3, 70) | st.integers(min_value=-(10**30), max_value=10**30)
           | st.sampled_from([0, 1, 2**40, 2**40 + 1, 10**400, -(10**400)])
           | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1e308, -0.0, 4096.0])
           | st.text(max_size=12)
           | st.sampled_from(["llama", "mixtral", "jamba", "gemma3", "gemma3_text", "gpt2", "bamba", "mamba",
                              "falcon", "auto", "bfloat16", "float32", "int8", "sliding_attention",
                              "full_attention"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                           max_size=3), max_leaves=6)
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
QUICK = settings(FUZZ, max_examples=50)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _no_constant(name: str):
    raise AssertionError(f"JSON output holds {name}")


def check_outcome(code: int, out: str, err: str, usage: bool = False) -> None:
    """One of the three allowed endings, with nothing else printed."""
    assert "Traceback" not in out + err
    if code == 0:
        assert err == ""
        if out.lstrip().startswith("{"):
            data = json.loads(out, parse_constant=_no_constant)
            assert all(math.isfinite(x) for x in _numbers(data))
    else:
        assert code == (2 if usage else 1), (code, err)
        assert out == "" and err.startswith("error: ") and err.count("\n") == 1, err


def _numbers(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value) if abs(value) < 1e300 else math.inf if isinstance(value, float) else 0.0
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


@FUZZ
@given(base=st.sampled_from(sorted(BASES)), changes=st.dictionaries(st.sampled_from(KEYS), values, max_size=4),
       as_json=st.booleans())
def test_malformed_fields(folder, base, changes, as_json):
    path = folder / "config.json"
    path.write_text(json.dumps({**BASES[base], **changes}))  # NaN and Infinity written as JSON allows them
    check_outcome(*run("report", str(path), *(["--json"] if as_json else [])))


@QUICK
@given(text=st.text(max_size=80) | st.sampled_from(["", "[]", "null", "3", '"x"', "{", '{"a": NaN}',
                                                      "[" * 100_000, '{"vocab_size": 1' + "0" * 5000 + "}"]))
def test_malformed_files(folder, text):
    path = folder / "config.json"
    path.write_text(text)
    check_outcome(*run("report", str(path), "--json"))


@QUICK
@given(spec=st.text(max_size=30) | st.lists(st.sampled_from(["1e-320", "1e300", "0", "-1", "nan", "inf", "1e12",
                                                              "80", "1", "1e30", "1e31", "x", ""]),
                                             min_size=1, max_size=4).map(",".join))
def test_malformed_accelerators(spec):
    code, out, err = run("report", "gated-gqa-1b", "--json", f"--accelerator={spec}")
    check_outcome(code, out, err, usage=True)


@pytest.mark.parametrize(("argv", "code"), [
    (["report", "gated-gqa-1b", "--accelerator", "1e12,1e12,1e300"], 2),
    (["report", "gated-gqa-1b", "--accelerator", "1e-320,1e12,80", "--json"], 2),
    (["report", "gated-gqa-1b", "--accelerator", "1,1,1e-6", "--json"], 0),
    (["report", "gated-gqa-1b", "--accelerator", "1e30,1e30,1e12", "--json"], 0),
    (["report"], 2), (["nonsense"], 2), (["report", "gated-gqa-1b", "--bogus"], 2),
    (["report", "no such file \x00"], 1), (["report", "/"], 1), (["configs"], 0),
])
def test_command_lines(argv, code):
    outcome = run(*argv)
    assert outcome[0] == code
    check_outcome(*outcome, usage=code == 2)


def test_the_reported_cases(folder):
    """The cases from the tracker: a vocabulary of 10**400 and a model_type given as a list."""
    for cfg, field in (({**BASES["llama"], "vocab_size": 10**400}, "vocab_size"),
                       ({**BASES["llama"], "model_type": ["llama"]}, "model_type")):
        path = folder / "config.json"
        path.write_text(json.dumps(cfg))
        code, out, err = run("report", str(path), "--json")
        assert code == 1 and field in err


def _flag(name: str, good: list[str], bad: list[str]):
    return st.sampled_from(good + bad).map(lambda v: [name, v])


NUMBERS = ["1", "16", "4096", "100000", "1e3", "0", "-1", "x", "", "1,2", "5,5,9", "1" + "0" * 13, "nan"]
FRACTIONS = ["1", "0.5", "0.01", "0", "-0.2", "1.5", "nan", "inf", "x"]
REPORT_FLAGS = st.lists(st.one_of(
    _flag("--chip", ["h100", "l4", "mi300x", "tpu-v5e", "apple-m4-max"], ["h900", ""]),
    _flag("--accelerator", ["example", "1e14,1e12,24"], ["1,2", "x"]),
    _flag("--weights", ["bf16", "fp16", "fp8", "int8", "int4", "nf4"], ["int3", ""]),
    _flag("--kv-dtype", ["bf16", "fp16", "fp8", "int8", "int4"], ["nf4"]),
    _flag("--context", NUMBERS[:4], NUMBERS[4:]), _flag("--batch", NUMBERS[:4], NUMBERS[4:]),
    _flag("--prompt", NUMBERS[:4], NUMBERS[4:]), _flag("--answer", NUMBERS[:4], NUMBERS[4:]),
    _flag("--flops-efficiency", FRACTIONS[:3], FRACTIONS[3:]),
    _flag("--hbm-memory-efficiency", FRACTIONS[:3], FRACTIONS[3:]),
    _flag("--gpu-memory-utilization", FRACTIONS[:3], FRACTIONS[3:]),
    _flag("--block-size", ["1", "16", "256"], ["0", "x"])), max_size=5).map(lambda xs: sum(xs, []))
TRAIN_FLAGS = st.lists(st.one_of(
    _flag("--chip", ["h100", "rtx-4090"], ["zz"]), _flag("--weights", ["bf16", "nf4", "int4"], ["q"]),
    _flag("--batch", ["1", "4"], ["0", "x"]), _flag("--seq-len", ["128", "4096"], ["0", "1.5"]),
    _flag("--optimizer", ["adamw", "adam8bit", "sgd"], ["lion"]),
    _flag("--recompute", ["none", "selective", "full"], ["half"]),
    _flag("--zero-stage", ["0", "1", "2", "3"], ["4", "-1"]), _flag("--devices", ["1", "8", "1024"], ["0"]),
    _flag("--lora-rank", ["1", "16"], ["0"]), _flag("--lora-targets", ["all-linear", "q_proj,v_proj"], ["wq"]),
    _flag("--tokens", ["1e9", "15000000000000"], ["1e40", "-5"]),
    _flag("--flops-efficiency", FRACTIONS[:3], FRACTIONS[3:]),
    st.just(["--fp32-gradients"])), max_size=5).map(lambda xs: sum(xs, []))
CONFIGS = st.sampled_from(["gated-gqa-1b", "mixtral-8x7b", "jamba-v0.1", "plain-small", "mistral-7b-v0.1"])


def _usage_or_refusal(code: int, out: str, err: str) -> None:
    """A bad flag exits 2; a flag the model cannot take, 2 as well; a config refused, 1."""
    assert "Traceback" not in out + err
    if code == 0:
        assert err == "" and json.loads(out, parse_constant=_no_constant) is not None
        assert all(math.isfinite(x) for x in _numbers(json.loads(out)))
    else:
        assert code in (1, 2) and out == "" and err.startswith("error: ") and err.count("\n") == 1, err


@QUICK
@given(config=CONFIGS, flags=REPORT_FLAGS)
def test_report_flags(config, flags):
    _usage_or_refusal(*run("report", config, *flags, "--json"))


@QUICK
@given(config=CONFIGS, flags=TRAIN_FLAGS)
def test_train_flags(config, flags):
    _usage_or_refusal(*run("train", config, *flags, "--json"))


@QUICK
@given(base=st.sampled_from(["llama", "mixtral", "deepseek"]), qc=QUANTIZATION, as_json=st.booleans())
def test_quantization_configs(folder, base, qc, as_json):
    cfg = {**BASES[base], "hidden_size": 64, "intermediate_size": 96, "quantization_config": qc}
    path = folder / "config.json"
    path.write_text(json.dumps(cfg))
    check_outcome(*run("report", str(path), *(["--json"] if as_json else [])))


@pytest.mark.parametrize(("argv", "code"), [
    (["train", "gated-gqa-1b", "--devices", "0"], 2), (["train", "gated-gqa-1b", "--zero-stage", "3",
                                                        "--devices", "8", "--json"], 0),
    (["report", "gated-gqa-1b", "--kv-dtype", "int4", "--json"], 0), (["chips", "--json"], 0),
    (["report", "gated-gqa-1b", "--prompt", "5"], 2), (["train", "jamba-v0.1"], 1),
])
def test_new_command_lines(argv, code):
    outcome = run(*argv)
    assert outcome[0] == code
    _usage_or_refusal(*outcome)
