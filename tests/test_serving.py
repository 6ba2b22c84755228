"""The calculator's next questions without PyTorch: what fits as a serving engine sees it, a
request's times, formats' bytes, and the command line's new flags.

References here are brute force (every step summed one by one, every length tried), the
schemes' layouts written out tensor by tensor from their sources (see each test), and the
teaching formulas. The quantizers' real packed bytes and transformers' quantized models are
checked in test_quantizers.py and test_formats_meta.py.
"""
import contextlib
import dataclasses
import io
import json
import math

import pytest

import published

import transformer_arithmetic as ta
from transformer_arithmetic.data_parallel import zero_part_bytes
from transformer_arithmetic.memory import packed_bits_per_weight
from transformer_calculator.counting import costs, stored
from transformer_calculator.service import serving
from transformer_calculator.counting.chips import chip, derated
from transformer_calculator.command_line.cli import main
from transformer_calculator.reading.config import (example_config_path,
                                                   model_from_config, read_config)
from transformer_calculator.anatomy.formats import CACHE_FORMATS, WEIGHT_FORMATS, Packed
from transformer_calculator.anatomy.matrices import Matrix, matrices
from transformer_calculator.service.serving import Request
from transformer_calculator.command_line.report import report

ENGINE = serving.VLLM_DEFAULTS
H100 = chip("h100-sxm")


def model(name):
    return read_config(example_config_path(name))[0]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# --- a request's times: the closed form against every step summed ---------------------------

@pytest.mark.parametrize("name", ["llama-3-8b", "mistral-7b-v0.1", "mixtral-8x7b", "jamba-v0.1"])
@pytest.mark.parametrize(("prompt", "answer", "batch"), [(1, 1, 1), (100, 2, 3), (3800, 600, 8),
                                                          (4090, 20, 1)])
def test_request_times_sum_every_step(name, prompt, answer, batch):
    """Brute force: the whole answer is the prompt's pass plus each decode step, one by one
    (mistral's window fills at 4,095 tokens inside the last two answers, so the closed form's
    stretches are split there)."""
    m = model(name)
    t = serving.request_times(m, H100, prompt, answer, batch)
    steps = [costs.decode_step_time(m, H100, prompt + j, batch) for j in range(1, answer)]
    first = costs.prefill_time(m, H100, prompt, batch)
    assert t.first_token == first
    assert t.whole == pytest.approx(first + sum(steps), rel=1e-12)
    if steps:
        assert (t.first_step, t.last_step) == (steps[0], steps[-1])
        assert t.mean_step == pytest.approx(sum(steps) / len(steps), rel=1e-12)


def test_a_batch_prompt_pass_reads_the_weights_once():
    m = model("llama-3-8b")
    one, eight = costs.prefill_limits(m, H100, 512, 1), costs.prefill_limits(m, H100, 512, 8)
    assert eight[0] == pytest.approx(8 * one[0], rel=1e-12)  # arithmetic for every prompt
    w, c = costs.weight_bytes(m), costs.cache_bytes(m, 512)
    row = m.layout.width * m.bytes_per_number  # a row of the untied input table
    unread = [(m.layout.vocab - tokens) * row for tokens in (512, 8 * 512)]
    assert (one[1], eight[1]) == ((w - unread[0] + c) / H100.bytes_per_s,
                                  (w - unread[1] + 8 * c) / H100.bytes_per_s)


# --- what fits, as vLLM sees it --------------------------------------------------------------

@pytest.mark.parametrize(("name", "key"), [("llama-3-8b", "h100"), ("mistral-7b-v0.1", "l4"),
                                           ("jamba-v0.1", "mi300x")])
def test_fit_by_blocks_brute_force(name, key):
    """Each layer's cache grows 16 tokens at a time; the largest batch and the longest context
    found by trying lengths one block apart."""
    m, engine, acc = model(name), serving.Serving(0.9, 16), chip(key)
    budget = math.floor(acc.memory_bytes * 0.9) - costs.weight_bytes(m)
    assert serving.cache_budget(m, acc, engine) == budget

    def blocked(n):  # a conversation in whole blocks, layer by layer, written out again
        total = m.layout.state_bytes(m.bytes_per_number)
        for b in m.layout.blocks:
            if b.mixer.cache_numbers:
                total += -(-b.mixer.kept_tokens(n) // 16) * 16 * b.mixer.cache_numbers * m.bytes_per_number
        return total

    for n in (1, 16, 17, 4095, 4096, 4097, 32768):
        assert serving.conversation_bytes(m, n, engine) == blocked(n)
        assert serving.largest_batch(m, acc, n, engine) == budget // blocked(n)
    for batch in (1, 7, 64):
        longest = serving.longest_context(m, acc, batch, engine)
        if longest is None:  # the window caps every layer's cache and the batch fits
            assert blocked(10**9) * batch <= budget
            continue
        assert batch * blocked(longest) <= budget < batch * blocked(longest + 1)


def test_a_model_that_does_not_fit_gets_no_speed_and_a_chip_count():
    deepseek_like = {"model_type": "llama", "num_hidden_layers": 80, "num_attention_heads": 64,
                     "num_key_value_heads": 8, "hidden_size": 8192, "intermediate_size": 28672,
                     "vocab_size": 128256, "torch_dtype": "bfloat16", "tie_word_embeddings": False}
    m, _ = model_from_config(deepseek_like)
    usable = math.floor(H100.memory_bytes * 0.9)
    needed = -(-costs.weight_bytes(m) // usable)
    r = report(m, H100)
    assert not r["weights_fit"] and r["chips_for_weights"] == needed == 2
    assert r["decode"] == r["throughput"] == []
    code, out, _ = run("report", "gated-gqa-7b", "--chip", "l4", "--weights", "bf16",
                       "--gpu-memory-utilization", "0.5")
    assert code == 0 and "Speed: none printed" in out and "time per token" not in out
    r4 = report(dataclasses.replace(m, weights=WEIGHT_FORMATS["int4"]), H100)
    assert r4["weights_fit"] and r4["decode"]  # the same model in 4 bits fits one chip


# --- formats -----------------------------------------------------------------------------------

def test_packed_bits_per_weight_teaching_formula():
    """bits + (scale + zero) / group: AWQ's 4-bit groups of 128 with a 16-bit scale and a 4-bit
    zero point are 4.15625 bits a weight; bitsandbytes' nf4 with a float32 scale per 64 is 4.5."""
    assert packed_bits_per_weight(4, 128, 16, 4) == 4 + 20 / 128 == WEIGHT_FORMATS["int4"].bits_per_weight
    assert packed_bits_per_weight(4, 64, 32) == 4.5 == WEIGHT_FORMATS["nf4"].bits_per_weight
    with pytest.raises(ValueError, match="group_size"):
        packed_bits_per_weight(4, 0, 16)


@pytest.mark.parametrize(("fmt", "rows", "cols", "expected"), [
    # AWQ gemm (AutoAWQ awq/modules/linear/gemm.py, WQLinear_GEMM): qweight int32 (in, out/8),
    # qzeros int32 (in/group, out/8), scales fp16 (in/group, out)
    ("int4", 4096, 14336, 4 * 4096 * 14336 // 8 + 4 * (4096 // 128) * 14336 // 8
     + 2 * (4096 // 128) * 14336),
    # bitsandbytes nf4 (quantize_4bit, blocksize 64): packed uint8 n/2, absmax fp32 n/64, a
    # 16-entry fp32 code
    ("nf4", 4096, 1024, 4096 * 1024 // 2 + 4 * 4096 * 1024 // 64 + 64),
    # bitsandbytes LLM.int8 (int8_vectorwise_quant): int8 weights, an fp32 row statistic (SCB)
    ("int8", 4096, 1024, 4096 * 1024 + 4 * 1024),
    # vLLM's fp8: e4m3 weights, one fp32 scale a matrix
    ("fp8", 4096, 1024, 4096 * 1024 + 4),
])
def test_packed_matrix_bytes_by_the_schemes_layout(fmt, rows, cols, expected):
    assert WEIGHT_FORMATS[fmt].matrix_bytes(Matrix(rows, cols, 1, "attention")) == expected


def test_packed_formats_keep_the_embeddings_head_norms_and_router():
    m = model("mixtral-8x7b")
    q = dataclasses.replace(m, weights=WEIGHT_FORMATS["int4"])
    kept = [x for x in matrices(m.layout) if x.role in ("embeddings", "head", "router")]
    assert {x.role for x in kept} == {"embeddings", "head", "router"}
    packed = [x for x in matrices(m.layout) if x.role not in ("embeddings", "head", "router")]
    other = m.layout.parameters - sum(x.numbers for x in packed)
    assert stored.weight_bytes(q) == sum(WEIGHT_FORMATS["int4"].matrix_bytes(x) for x in packed) + 2 * other
    assert sum(x.numbers for x in matrices(m.layout)) <= m.layout.parameters


def test_cache_formats():
    m = model("llama-3-8b")  # 32 layers, 8 key-value heads of 128
    per_token = {k: stored.cache_bytes_per_token(dataclasses.replace(m, cache=f))
                 for k, f in CACHE_FORMATS.items()}
    vectors = 32 * 2 * 8  # a key and a value per key-value head per layer
    assert per_token == {"bf16": vectors * 256, "fp16": vectors * 256, "fp8": vectors * 128,
                         "int8": vectors * (128 + 4), "int4": vectors * (64 + 4)}
    fp8 = dataclasses.replace(m, cache=CACHE_FORMATS["fp8"])
    assert costs.cache_bytes(fp8, 10) == 10 * vectors * 128 + 32 * 8  # two fp32 scales a layer


def test_int4_cache_with_an_odd_head_width_is_refused(tmp_path):
    cfg = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 33,
           "hidden_size": 128, "intermediate_size": 256, "vocab_size": 100, "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, out, err = run("report", str(path), "--kv-dtype", "int4")
    assert code == 2 and out == "" and "--kv-dtype" in err and "33 numbers" in err
    assert err.count("\n") == 1
    assert run("report", str(path), "--kv-dtype", "int8")[0] == 0


def test_dequantisation_counts_in_the_arithmetic():
    """A packed weight costs its dequantisation each step: 2 operations for int4 (scale and zero
    point), in a step that multiplies each weight twice per token."""
    m = model("llama-3-8b")
    q = dataclasses.replace(m, weights=WEIGHT_FORMATS["int4"])
    packed = stored.packed_numbers(q)
    base = costs.arithmetic_time(m, H100, 1000, 4) * H100.flops_per_s
    assert costs.arithmetic_time(q, H100, 1000, 4) * H100.flops_per_s == pytest.approx(base + 2 * packed)
    fp8 = dataclasses.replace(m, weights=WEIGHT_FORMATS["fp8"])  # fp8 matrices at the fp8 rate
    matrix = 4 * 2 * stored.packed_numbers(fp8)  # the head stays 16-bit, at the 16-bit rate
    expect = (matrix / H100.fp8_flops_per_s + (base - matrix + stored.packed_numbers(fp8)) / H100.flops_per_s)
    assert costs.arithmetic_time(fp8, H100, 1000, 4) == pytest.approx(expect, rel=1e-12)


# --- efficiencies and the ZeRO teaching formula -------------------------------------------------

def test_efficiency_turns_the_floor_into_an_estimate():
    m, slow = model("llama-3-8b"), derated(H100, 0.5, 0.8)
    assert (slow.flops_per_s, slow.bytes_per_s, slow.fp8_flops_per_s) == (
        H100.flops_per_s * 0.5, H100.bytes_per_s * 0.8, H100.fp8_flops_per_s * 0.5)
    assert costs.reading_time(m, slow, 100) == costs.reading_time(m, H100, 100) / 0.8
    code, out, _ = run("report", "llama-3-8b", "--chip", "h100", "--flops-efficiency", "0.5",
                       "--hbm-memory-efficiency", "0.8", "--json")
    data = json.loads(out)
    assert (data["accelerator"]["flops_efficiency"], data["accelerator"]["memory_efficiency"]) == (0.5, 0.8)
    assert any("50% of the chip's peak arithmetic and 80% of its peak bandwidth" in a
               for a in data["assumptions"])


def test_zero_teaching_formula_follows_the_paper():
    """Rajbhandari et al. (2020), Figure 1: 7.5B parameters on 64 devices with K = 12 take
    120 GB, 31.4 GB, 16.6 GB and 1.9 GB a device at stages 0 to 3."""
    p, d = 7_500_000_000, 64
    k = {"weights": 2, "gradients": 2, "optimiser": 8, "master copy": 4}  # K = 8 + 4
    got = [sum(zero_part_bytes(p, k, s, d).values()) / 1e9 for s in range(4)]
    assert [round(g, 1) for g in got] == [120.0, 31.4, 16.6, 1.9]
    with pytest.raises(ValueError, match="devices"):
        zero_part_bytes(p, k, 1, 0)


# --- the command line ----------------------------------------------------------------------------

def test_context_and_batch_lists_give_exactly_those_rows():
    code, out, err = run("report", "mistral-7b-v0.1", "--chip", "a100-80gb", "--context", "512,4096",
                         "--batch", "1,3", "--prompt", "700", "--answer", "50", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert [x["tokens"] for x in r["lengths"]] == [512, 4096] == [x["context"] for x in r["decode"]]
    assert [(x["context"], x["batch"]) for x in r["throughput"]] == [(512, 1), (512, 3), (4096, 1), (4096, 3)]
    assert [(x["batch"], x["prompt"], x["answer"]) for x in r["requests"]] == [(1, 700, 50), (3, 700, 50)]
    assert [x["batch"] for x in r["fit_by_batch"]] == [1, 3]
    text = run("report", "mistral-7b-v0.1", "--chip", "a100-80gb", "--context", "512,4096",
               "--batch", "1,3", "--prompt", "700", "--answer", "50")[1]
    assert "A request of 700 prompt tokens and 50 answer tokens" in text
    assert all(note in text for note in r["assumptions"])


@pytest.mark.parametrize(("argv", "flag"), [
    (["--context", "0"], "--context"), (["--context", "1,x"], "--context"),
    (["--batch", "-3"], "--batch"), (["--batch", ",".join(["1"] * 40)], "--batch"),
    (["--weights", "int3"], "--weights"), (["--kv-dtype", "nf4"], "--kv-dtype"),
    (["--chip", "h900"], "--chip"), (["--chip", "h100", "--accelerator", "example"], "--accelerator"),
    (["--flops-efficiency", "0"], "--flops-efficiency"), (["--flops-efficiency", "1.5"], "--flops-efficiency"),
    (["--hbm-memory-efficiency", "nan"], "--hbm-memory-efficiency"),
    (["--gpu-memory-utilization", "2"], "--gpu-memory-utilization"), (["--block-size", "0"], "--block-size"),
    (["--prompt", "10"], "--answer"), (["--answer", "0", "--prompt", "3"], "--answer"),
])
def test_each_bad_flag_gets_one_line_naming_it(argv, flag):
    code, out, err = run("report", "gated-gqa-1b", *argv)
    assert (code, out) == (2, "") and flag in err and err.count("\n") == 1, err


def test_chips_command_lists_every_chip():
    code, out, _ = run("chips")
    assert code == 0 and all(c in out for c in ("h100-sxm", "mi300x", "tpu-v5e", "apple-m4-max"))
    rows = json.loads(run("chips", "--json")[1])
    assert [r["key"] for r in rows] == [c.key for c in published.chips()]
    assert all(r["source"].startswith("https://") for r in rows)


def test_quantized_config_now_fits(tmp_path):
    """A 4-bit AWQ Mixtral-8x7B (its router left out, as AWQ's Mixtral files say): its config's
    own quantization_config, read instead of refused, fits one L40S."""
    base = json.loads(example_config_path("mixtral-8x7b").read_text())
    cfg = {**base, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128,
                                           "version": "gemm", "zero_point": True,
                                           "modules_to_not_convert": ["gate"]}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, out, err = run("report", str(path), "--chip", "l40s", "--json")
    assert code == 0, err
    r = json.loads(out)
    unquantized = report(model("mixtral-8x7b"), chip("l40s"))
    assert not unquantized["weights_fit"] and r["weights_fit"] and r["decode"]
    assert r["weight_bytes"] == stored.weight_bytes(dataclasses.replace(model("mixtral-8x7b"),
                                                                          weights=WEIGHT_FORMATS["int4"]))
    assert isinstance(WEIGHT_FORMATS["int4"], Packed)
