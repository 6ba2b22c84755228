"""The config reader, the report and the command line. Layouts of unknown families are checked
against the book's plain torch decoder; every known family against ``transformers`` in
test_families*.py and test_family_caches.py; malformed input in test_cli_fuzz.py."""
import contextlib
import io
import itertools
import json
import subprocess
import sys

import pytest

import decoder_reference as R
from decoder_reference import CHIP_24GIB, PLAIN_335M
import transformer_arithmetic as ta
from transformer_calculator.counting import costs
from transformer_calculator.command_line.cli import main
from transformer_calculator.reading.config import (example_config_path, example_configs,
                                                   read_config, model_from_config)
from transformer_calculator.counting.chips import parse_accelerator
from transformer_calculator.reading.plain import model_of
from transformer_calculator.service.serving import Request
from transformer_calculator.command_line.report import format_report, report
from transformer_calculator.service.serving import served

pytestmark = pytest.mark.torch_kernels

LLAMA_LIKE = {
    "model_type": "llama", "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 2,
    "hidden_size": 256, "intermediate_size": 688, "vocab_size": 1000, "hidden_act": "silu",
    "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}
GPT_LIKE = {
    "model_type": "gpt_neox", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 128,
    "intermediate_size": 512, "vocab_size": 500, "hidden_act": "gelu", "layer_norm_eps": 1e-5,
    "torch_dtype": "float32",
}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The command line run in this process (test_cli_text_report also runs it as a real command)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


# --- reading configs -------------------------------------------------------------------------

def test_the_example_configs_are_shipped():
    names = [p.stem for p in example_configs()]
    assert {"gated-gqa-1b", "gated-gqa-7b", "plain-small"} <= set(names)
    for path in example_configs():  # every shipped file reads without a refusal
        read_config(path)


def sizes(model) -> dict:
    """A model's summary sizes, by name."""
    return model.summary()


def plain_shape(model) -> ta.ModelShape:
    """The book's plain decoder with a calculator model's sizes (for a reference torch decoder)."""
    s = model.summary()
    return ta.ModelShape(layers=s["layers"], heads=s["heads"], kv_heads=s["kv_heads"],
                         head_dim=s["head_dim"], width=s["width"], ffn_width=s["ffn_width"],
                         vocab=s["vocab"], bytes_per_number=s["bytes_per_number"],
                         gated_ffn=s["gated_ffn"], tied_embeddings=s["tied_embeddings"],
                         norm_bias=model.layout.norm_numbers == 2)


def test_example_configs_have_the_intended_layouts():
    small, _ = read_config(example_config_path("plain-small"))
    one, _ = read_config(example_config_path("gated-gqa-1b"))
    seven, _ = read_config(example_config_path("gated-gqa-7b.json"))
    s, o, v = sizes(small), sizes(one), sizes(seven)
    assert (s["gated_ffn"], s["norm"], s["tied_embeddings"], s["bytes_per_number"]) == (
        False, "LayerNorm", True, 4)
    assert s["ffn_width"] == 4 * s["width"] and s["kv_heads"] == s["heads"]
    assert small.layout.positions == 1024  # GPT-2's learned position table (n_positions by default)
    assert (o["gated_ffn"], o["norm"], o["kv_heads"], o["bytes_per_number"]) == (True, "RMSNorm", 4, 2)
    assert (v["tied_embeddings"], v["head_dim"], v["kv_heads"]) == (False, 128, 8)
    assert seven.layout.longest_window == 0  # "sliding_window": null, so no Mistral window
    assert 0.9e9 < costs.parameters(one) < 1.2e9
    assert 6.5e9 < costs.parameters(seven) < 7.5e9


UNKNOWN = {**LLAMA_LIKE, "model_type": "something_new"}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"num_key_value_heads": None},
        {"num_key_value_heads": 1},
        {"tie_word_embeddings": True},
        {"head_dim": 48},  # heads * head_dim differs from hidden_size (a Gemma-style layout)
        {"gated_ffn": False},
        {"hidden_act": "gelu", "rms_norm_eps": None, "layer_norm_eps": 1e-5},
        {"model_type": None, "n_layer": 3, "num_hidden_layers": None},
    ],
)
def test_unknown_family_counts_as_the_plain_layout(changes):
    """An unknown model_type is counted as the book's plain decoder, which torch builds here."""
    cfg = {k: v for k, v in {**UNKNOWN, **changes}.items() if v is not None}
    model, notes = model_from_config(cfg)
    assert costs.parameters(model) == R.parameters(plain_shape(model))
    assert "not a family this calculator knows" in notes[0]


def test_defaults_used_are_listed():
    cfg = {k: v for k, v in UNKNOWN.items() if k not in ("num_key_value_heads",)}
    shape, notes = model_from_config({**cfg, "hidden_act": "gelu"}, name="x")
    text = "\n".join(notes)
    for default in ("num_key_value_heads", "head_dim", "plain (two matrices)"):
        assert default in text


def test_gpt2_names_and_null_inner_width():
    cfg = {"model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 64, "n_inner": None, "vocab_size": 100,
           "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "torch_dtype": "float16"}
    model, notes = model_from_config(cfg)
    s = sizes(model)
    assert (s["layers"], s["heads"], s["width"], s["ffn_width"], s["bytes_per_number"]) == (2, 4, 64, 256, 2)
    assert any("n_inner" in n for n in notes)


def test_gated_rule():
    gemma = {**LLAMA_LIKE, "model_type": "gemma", "hidden_act": None, "hidden_activation": "gelu_pytorch_tanh"}
    assert sizes(model_from_config(gemma)[0])["gated_ffn"]  # gated although its activation is a GELU
    model, notes = model_from_config(UNKNOWN)
    assert sizes(model)["gated_ffn"] and any("judged from hidden_act" in n for n in notes)
    assert not sizes(model_from_config({**UNKNOWN, "gated_ffn": False})[0])["gated_ffn"]
    with pytest.raises(ValueError, match="gated_ffn"):  # a known family's layout is not overridden
        model_from_config({**LLAMA_LIKE, "gated_ffn": False})


def test_without_torch_dtype_the_model_counts_as_float32():
    model, notes = model_from_config({k: v for k, v in LLAMA_LIKE.items() if k != "torch_dtype"})
    assert model.bytes_per_number == 4 and any("torch_dtype not given: using float32" in n for n in notes)


@pytest.mark.parametrize("field", ["num_hidden_layers", "num_attention_heads", "hidden_size",
                                   "intermediate_size", "vocab_size"])
def test_missing_field_is_named(field):
    """A model type transformers does not know has no class defaults: a missing size is named."""
    cfg = {k: v for k, v in UNKNOWN.items() if k != field}
    with pytest.raises(ValueError, match=field):
        model_from_config(cfg)
    _, notes = model_from_config({k: v for k, v in LLAMA_LIKE.items() if k != field})
    assert any(n.startswith(f"{field} not given: using") for n in notes)  # Llama's class default


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"num_key_value_heads": 16}, "num_key_value_heads"),
        ({"hidden_size": 250}, "head_dim"),
        ({"torch_dtype": "int4"}, "torch_dtype"),
        ({"dtype": "float32"}, "torch_dtype and dtype"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"num_hidden_layers": 2.5}, "num_hidden_layers"),
        ({"vocab_size": True}, "vocab_size"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
        ({"gated_ffn": "yes"}, "gated_ffn"),
        ({"model_type": "new", "layer_norm_eps": 1e-5}, "rms_norm_eps and layer_norm_eps"),
        ({"model_type": "new", "rms_norm_eps": None}, "rms_norm_eps"),
        ({"model_type": "new", "hidden_act": "tanh"}, "hidden_act"),
        ({"model_type": "new", "hidden_act": None}, "hidden_act"),
        ({"model_type": "new", "tie_word_embeddings": None}, "tie_word_embeddings"),
        ({"n_layer": 4}, "num_hidden_layers"),
        ({"num_local_experts": 8}, "num_local_experts"),
        ({"sliding_window": 4096}, "sliding_window"),  # Llama's attention has no window
        ({"model_type": ["llama"]}, "model_type"),
        ({"vocab_size": 10**400}, "vocab_size"),
        ({"num_hidden_layers": 10**6}, "num_hidden_layers"),
        ({"quantization_config": {"quant_method": "hqq"}}, "quantization_config"),
        ({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 100}},
         "quantization_config"),  # groups of 100 do not divide a width of 256
        ({"quantization_config": {"quant_method": "awq", "modules_to_not_convert":
                                  ["model.layers.0.mlp"]}}, "modules_to_not_convert"),
        ({"per_layer_config": {"0": {"intermediate_size": 5}}}, "per_layer_config"),
        ({"is_encoder_decoder": True}, "is_encoder_decoder"),
    ],
)
def test_inconsistent_or_bad_field_is_named(changes, field):
    cfg = {k: v for k, v in {**LLAMA_LIKE, **changes}.items() if v is not None}
    with pytest.raises(ValueError, match=field):
        model_from_config(cfg)


@pytest.mark.parametrize(
    ("cfg", "field"),
    [  # an unknown model_type with a part the plain layout does not have: named, never counted as dense
        ({**UNKNOWN, "num_local_experts": 8, "num_experts_per_tok": 2}, "num_experts_per_tok"),
        ({**UNKNOWN, "sliding_window": 4096}, "sliding_window"),
        ({**UNKNOWN, "attn_layer_indices": [1], "mamba_d_state": 128}, "attn_layer_indices"),
        ({**UNKNOWN, "attention_bias": True}, "attention_bias"),
        ({**UNKNOWN, "kv_lora_rank": 512}, "kv_lora_rank"),
        ({**UNKNOWN, "some_new_width": 512}, "some_new_width"),
    ],
)
def test_unknown_family_with_an_unknown_part_is_refused(cfg, field):
    with pytest.raises(ValueError, match=f"config field {field}"):
        model_from_config(cfg)


@pytest.mark.parametrize(
    ("cfg", "field"),
    [  # fields of a known family that describe something this calculator does not count
        ({**LLAMA_LIKE, "model_type": "gemma3"}, "no text_config"),
        ({**LLAMA_LIKE, "model_type": "gemma3_text", "use_bidirectional_attention": True},
         "use_bidirectional_attention"),
        ({**LLAMA_LIKE, "model_type": "gpt2", "add_cross_attention": True}, "add_cross_attention"),
        ({**LLAMA_LIKE, "model_type": "deepseek_v3", "moe_layer_freq": 2}, "moe_layer_freq"),
        ({**LLAMA_LIKE, "model_type": "gemma2", "layer_types": ["full_attention", "local", "full_attention"]},
         "layer_types"),
        ({**LLAMA_LIKE, "model_type": "falcon", "num_kv_heads": 2, "layer_norm_epsilon": 1e-5}, "num_kv_heads"),
        ({**LLAMA_LIKE, "model_type": "deepseek_v2", "num_experts_per_tok": None}, "num_experts_per_tok"),
    ],
)
def test_known_family_with_a_field_it_cannot_count_is_refused(cfg, field):
    with pytest.raises(ValueError, match=field):
        model_from_config(cfg)


def test_a_window_counts_only_where_the_family_has_one():
    mistral, notes = model_from_config({**LLAMA_LIKE, "model_type": "mistral", "sliding_window": 4096})
    assert costs.cache_bytes(mistral, 10_000) == costs.cache_bytes(mistral, 4095)
    assert costs.cache_bytes_per_token_past_windows(mistral) == 0
    default, notes = model_from_config({**LLAMA_LIKE, "model_type": "mistral"})
    assert default.layout.longest_window == 4095 and any("sliding_window not given" in n for n in notes)


def test_unknown_example_name_lists_the_shipped_ones():
    with pytest.raises(ValueError, match="plain-small"):
        example_config_path("nope")


# --- the report ------------------------------------------------------------------------------



def test_report_numbers_against_a_real_decoder():
    """Every number of the report, from a real decoder's parameters, matrices and cache, with
    each limit worked out by hand (not from the library functions the report calls): memory as
    vLLM shares it (90% of the chip, the cache in whole blocks of 16 tokens)."""
    m, a = PLAIN_335M, CHIP_24GIB
    r = report(model_of(m), a, requests=[Request(prompt=300, answer=40)])
    weights, per_token = R.weight_bytes(m), R.cache_bytes_per_token(m)

    def step(context, batch=1):
        flops, nbytes = R.decode_work(m, context, batch)
        return flops / a.flops_per_s, nbytes / a.bytes_per_s

    def prefill(tokens, batch=1):
        flops, nbytes = R.prefill_work(m, tokens)
        nbytes += (batch - 1) * tokens * per_token  # every prompt writes its own cache
        return max(batch * flops / a.flops_per_s, nbytes / a.bytes_per_s)

    def blocks(n):  # a conversation's cache in whole blocks of 16 tokens
        return -(-n // 16) * 16 * per_token

    assert r["parameters"] == R.parameters(m) == 335_594_496
    assert (r["weight_bytes"], r["kv_bytes_per_token"]) == (weights, per_token)
    usable = int(a.memory_bytes * 9 // 10)
    free = usable - weights
    assert r["serving"] == {"memory_utilization": 0.9, "block_size": 16, "usable_bytes": usable,
                            "cache_budget_bytes": free}
    assert r["weights_fit"] and r["chips_for_weights"] == 1
    assert r["longest_conversation"] == free // (16 * per_token) * 16
    for row in r["lengths"]:
        n = row["tokens"]
        assert (row["cache_bytes"], row["cache_bytes_in_blocks"], row["conversations_that_fit"]) == (
            n * per_token, blocks(n), free // blocks(n))
    for row in r["fit_by_batch"]:
        assert row["longest_context"] == free // row["batch"] // (16 * per_token) * 16
    for row in r["decode"]:
        arithmetic, reading = step(row["context"])
        assert (row["arithmetic_seconds"], row["reading_seconds"]) == (arithmetic, reading)
        assert row["seconds_per_token"] == max(arithmetic, reading) == 1 / row["tokens_per_s"]
        assert row["limited_by"] == ("reading" if reading >= arithmetic else "arithmetic")
        assert row["prefill_seconds"] == prefill(row["context"])
    (ctx,) = r["batch_contexts"]
    fit = free // blocks(ctx)
    for row in r["throughput"]:
        b = row["batch"]
        assert row["wait_seconds"] == max(step(ctx, b)) and row["tokens_per_s"] == b / max(step(ctx, b))
        assert (row["memory_bytes"], row["fits"]) == (weights + b * blocks(ctx), b <= fit)
    assert round(next(t for t in r["throughput"] if t["batch"] == 64)["tokens_per_s"]) == 4721
    waits = [t["wait_seconds"] for t in r["throughput"]]
    assert waits == sorted(waits)  # each conversation waits longer as the batch grows
    for row in r["requests"]:  # the prompt's pass writes token 1; 39 steps write the rest, one by one
        b, steps = row["batch"], [max(step(300 + j, row["batch"])) for j in range(1, 40)]
        assert row["first_token_seconds"] == prefill(300, b)
        assert (row["first_step_seconds"], row["last_step_seconds"]) == (steps[0], steps[-1])
        assert row["whole_seconds"] == pytest.approx(prefill(300, b) + sum(steps), rel=1e-12)
        assert row["mean_step_seconds"] == pytest.approx(sum(steps) / 39, rel=1e-12)
        assert row["fits"] == (b <= free // blocks(340))
    # the first length at which one real layer's pair work passes its weight work, trying each
    layer, channels = R.layer_matrix_weights(m), R.query_channels(m) // m.layers
    crossing = next(t for t in itertools.count(1) if 4 * channels * (t * (t + 1) // 2) > 2 * t * layer)
    assert r["pairs_pass_weights_at"] == crossing == 12_288
    assert json.loads(json.dumps(r, allow_nan=False)) == r  # plain JSON types only
    assert r["active_parameters"] == r["parameters"] and r["running_summary_bytes"] == 0
    text = format_report(r)
    assert all(note in text for note in r["assumptions"])  # the JSON carries what the table says
    assert any("roofline" in note for note in r["assumptions"])


def test_report_when_the_weights_do_not_fit():
    """No speed for a machine the model cannot run on, and how many such chips its weights need."""
    shape, _ = read_config(example_config_path("gated-gqa-7b"))
    small_chip = parse_accelerator("100e12,1e12,8")
    r = report(shape, small_chip, requests=[Request(100, 10)])
    assert not r["weights_fit"] and r["longest_conversation"] == 0
    assert r["decode"] == r["throughput"] == r["requests"] == r["fit_by_batch"] == []
    usable = int(8 * ta.GIB * 9 // 10)
    assert r["chips_for_weights"] == -(-costs.weight_bytes(shape) // usable) == 2
    text = format_report(r)
    assert "do not fit" in text and "tokens/s" not in text and "need 2" in text


def test_parse_accelerator():
    assert parse_accelerator("example") is ta.EXAMPLE_ACCELERATOR
    acc = parse_accelerator("2e14, 3e12, 80")
    assert (acc.flops_per_s, acc.bytes_per_s, acc.memory_bytes) == (2e14, 3e12, 80 * ta.GIB)


@pytest.mark.parametrize(
    ("text", "message"),
    [("1e12,1e12", "three numbers"), ("1,2,3,4", "three numbers"), ("fast,1e12,24", "FLOPS"),
     ("1e14,-1,24", "BYTES_PER_S"), ("1e14,1e12,0", "MEMORY_GIB"), ("1e14,1e12,nan", "MEMORY_GIB"),
     ("1e14,inf,24", "BYTES_PER_S")],
)
def test_parse_accelerator_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_accelerator(text)


# --- the command line ------------------------------------------------------------------------

def test_cli_text_report():
    path = example_config_path("gated-gqa-1b")
    done = subprocess.run([sys.executable, "-m", "transformer_calculator", "report", str(path)],
                          capture_output=True, text=True, timeout=60)  # as a reader runs it
    assert done.returncode == 0, done.stderr
    shape, _ = read_config(path)
    out = done.stdout
    assert f"Parameters                  {costs.parameters(shape):,}" in out
    for heading in ("Cache per token", "Longest conversation", "time per token", "prefill",
                    "each one's wait", "Pair work passes weights", "Assumptions"):
        assert heading in out
    assert done.stderr == ""


def test_cli_json_report_with_an_accelerator(tmp_path):
    cfg = tmp_path / "my-model" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps(GPT_LIKE))
    done = run_cli("report", str(cfg), "--accelerator", "1e12,1e11,2", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    shape, notes = model_from_config(GPT_LIKE, name="my-model")  # a config.json is named after its folder
    shape, note = served(shape)  # float32 in the file: an engine serves it in 16 bits
    acc = parse_accelerator("1e12,1e11,2")
    assert "estimates" in data and data.pop("estimates")["decode_ms"]  # beside the floor
    assert data == report(shape, acc, notes=[*notes, note])
    assert data["accelerator"]["memory_bytes"] == 2 * ta.GIB


def test_cli_accepts_a_shipped_name_and_lists_them():
    assert run_cli("report", "plain-small", "--json").returncode == 0
    listing = run_cli("configs")
    assert listing.returncode == 0 and "gated-gqa-7b" in listing.stdout


@pytest.mark.parametrize("value", ["1e12,1e11", "x,1,1", "1,1,-4"])
def test_cli_rejects_a_bad_accelerator(value):
    done = run_cli("report", "plain-small", "--accelerator", value)
    assert done.returncode == 2
    assert "--accelerator" in done.stderr


def test_cli_names_the_missing_field(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({k: v for k, v in {**GPT_LIKE, "model_type": "something_new"}.items()
                               if k != "vocab_size"}))
    done = run_cli("report", str(cfg))
    assert done.returncode == 1
    assert "vocab_size" in done.stderr and done.stdout == ""


def test_cli_reports_a_missing_file(tmp_path):
    done = run_cli("report", str(tmp_path / "absent.json"))
    assert done.returncode == 1 and "absent" in done.stderr
