"""The plans of the book's third part through the calculator, without PyTorch: sequence and
context parallel, uneven and interleaved pipelines, redundant experts and attention data
parallel, a link per level, prefill and requests under a split, overlap as a choice, and one
report about the split throughout. Each figure is held against an independent count: the
teaching formulas where both count the same thing (``splits.device_memory``'s
sequence-parallel activations, ``pipeline``'s interleaved schedule, ``collectives``' two-level
rings), Korthikanti et al.'s 34 sbh / t, and the published plans' own figures (Llama 3's
Table 4 and stage layout, DeepSeek-V3's deployment units)."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json

import pytest

from transformer_arithmetic import ModelShape
from transformer_arithmetic import pipeline as tpp
from transformer_arithmetic import splits as teaching
from transformer_arithmetic.collectives import ring_time, two_level_all_reduce_time
from transformer_arithmetic.memory import layer_activation_bytes
from transformer_calculator.counting import costs
from transformer_calculator.counting.activations import Shares, activation_bytes
from transformer_calculator.counting.chips import chip
from transformer_calculator.command_line.cli import load_model, main
from transformer_calculator.reading.plain import model_of
from transformer_calculator.service.serving import VLLM_DEFAULTS
from transformer_calculator.splits import (Split, chip_link, chip_machine, chip_network,
                                           device_model, serving_split, stage_models,
                                           training_split)
from transformer_calculator.splits.links import collective_time, groups
from transformer_calculator.counting.training import Training

H100 = chip("h100-sxm")
LINKS = {"link": chip_link(H100), "network": chip_network(H100), "machine": chip_machine(H100)}
PLAIN = ModelShape(layers=4, heads=8, kv_heads=2, head_dim=16, ffn_width=256, vocab=512,
                   gated_ffn=True, tied_embeddings=False)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# --- sequence and context parallel ---------------------------------------------------------

@pytest.mark.parametrize("t", [2, 4, 8])
def test_sequence_parallel_cuts_every_activation_by_tp(t):
    """Korthikanti et al.: with sequence parallelism a layer keeps sbh (34 + 5as/h) / t, all of
    it cut by t; without it only the 24 sbh of the inner tensors are (the other 10 sbh, here 8
    sbh without dropout's masks, stay whole); the teaching split's activations
    (splits.device_memory, which assumes sequence parallelism) are the same count."""
    m = ModelShape(layers=2, heads=16, head_dim=64, ffn_width=4096, vocab=512)
    s, b = 128, 2
    whole = activation_bytes(model_of(m), b, s, "selective")
    device = device_model(model_of(m), Split(tp=t))
    with_sp = activation_bytes(device, b, s, "selective", shares=Shares(sequence=t))
    assert with_sp * t == whole
    layer = sum(layer_activation_bytes(m, 1, s, keep_scores=False).values())
    assert with_sp == (b * m.layers * layer + b * 2 * s * m.width * 2) // t
    held = teaching.device_memory(m, teaching.Split(1, t, 1), 1, s)["activations"]
    assert held == m.layers * layer // t


def test_dropout_adds_korthikantis_masks():
    """With dropout a layer keeps one-byte masks after attention and after the feed-forward
    part (2 sbh: Korthikanti's 34 sbh instead of 32) and, where the grid is kept, the
    grid's mask and dropout's output over it (3 a s^2 b at two bytes a number: his 5 a s
    / h with the grid itself)."""
    m = ModelShape(layers=1, heads=4, head_dim=16, ffn_width=256, vocab=64)
    model, s, b = model_of(m), 32, 2
    for recompute, grid in (("selective", 0), ("none", m.heads * s * 3)):
        plain = activation_bytes(model, b, s, recompute)
        masked = activation_bytes(model, b, s, recompute, dropout=True)
        assert masked - plain == b * s * (2 * m.width + grid)


def test_context_parallel_cuts_the_sequence_and_balances_the_pairs():
    """Each of N_cp devices keeps n / N_cp positions' activations, and, gathering every
    position's keys and values for attention (Llama 3's all-gather form), the whole
    sequence's keys and values; its share of the step's pair work is 1 / N_cp."""
    model, s = model_of(PLAIN), 256
    one = activation_bytes(model, 1, s, "selective")
    for cp in (2, 4):
        ring = activation_bytes(model, 1, s, "selective", shares=Shares(context=cp))
        assert ring * cp == one
        gathered = activation_bytes(model, 1, s, "selective",
                                    shares=Shares(context=cp, gathered_kv=True))
        kv = 2 * PLAIN.kv_heads * PLAIN.head_dim * PLAIN.layers * 2  # bytes a position
        assert gathered - ring == (s - s // cp) * kv


# --- pipelines ---------------------------------------------------------------------------

def test_llama_3_405b_stages_are_uneven_as_meta_ran_them():
    """126 layers over 16 stages: one fewer on the first and on the last (Dubey et al. 2024,
    section 3.3.2), the teaching rule pipeline.uneven_stage_layers; every layer on one stage,
    the tables on the ends; --pp-layers sets them by hand."""
    model, _ = load_model("llama-3.1-405b")
    stages = stage_models(model, Split(tp=8, pp=16))
    layers = [len(st.layout.blocks) for st in stages]
    assert layers == [7] + [8] * 14 + [7] == tpp.uneven_stage_layers(126, 16)
    whole = costs.parameters(device_model(model, Split(tp=8)))
    assert sum(costs.parameters(st) for st in stages) == whole
    by_hand = stage_models(model, Split(tp=8, pp=2, stage_layers=(60, 66)))
    assert [len(st.layout.blocks) for st in by_hand] == [60, 66]
    code, out, _ = cli("train", "llama-3.1-405b", "--chip", "h100", "--tp", "8", "--pp", "16",
                       "--seq-len", "2048")
    assert code == 0 and "uneven stages" in out and "7, 14 x 8, 7 layers" in out


def test_the_interleaved_schedule_is_the_teaching_schedule():
    """Narayanan et al. (2021): v virtual stages cut the bubble to (N_pp - 1) / v of a
    micro-batch's passes, send v times as often, and hold Megatron-LM's warm-up of
    2 (N_pp - s - 1) + (v - 1) N_pp + 1 chunks (pipeline.interleaved_micro_batches_held)."""
    model = model_of(dataclasses.replace(PLAIN, layers=16))
    t = Training(batch=16, seq_len=256, recompute="selective")
    plain, inter = (training_split(model, H100, Split(pp=4, micro_batches=16, virtual_stages=v,
                                                      **LINKS), t, 10**6) for v in (1, 2))
    per = [d["pass_seconds"] + sum(d["communication"].values()) for d in inter["devices"]]
    assert inter["bubble_seconds"] == pytest.approx((sum(per) - max(per)) / 2, rel=1e-12)
    assert inter["bubble_seconds"] < plain["bubble_seconds"]
    sends = [r["communication_seconds"]["pipeline sends"] for r in (plain, inter)]
    assert sends[1] == pytest.approx(2 * sends[0], rel=1e-12)
    for i, d in enumerate(inter["devices"]):
        assert d["micro_batches_held"] == tpp.interleaved_micro_batches_held(4, 16, 2, i)
    assert inter["devices"][0]["micro_batches_held"] == 4 + 3 / 2  # N_pp + (N_pp - 1) / v
    assert tpp.interleaved_bubble_share(4, 16, 1) == tpp.bubble_share(4, 16)


# --- experts ------------------------------------------------------------------------------

@pytest.mark.slow(seconds=3)
def test_deepseek_v3_units_with_redundant_experts():
    """DeepSeek-V3's prefill unit (32 GPUs: attention TP4 with DP8, MoE EP32 with 32 redundant
    experts, nine a GPU) and decode unit (320 GPUs: TP4 with DP80, EP320, one expert a GPU and
    64 GPUs of copies), both priced, every device's experts counted, copies included."""
    model, _ = load_model("deepseek-v3-fp8")
    prefill = device_model(model, Split(tp=4, dp=8, ep=32, redundant_experts=32))
    decode = device_model(model, Split(tp=4, dp=80, ep=320))
    for device, held, copies in ((prefill, 9, 80 // 10), (decode, 1, 80)):
        moe = [b.ffn for b in device.layout.blocks if hasattr(b.ffn, "count")]
        assert {f.count for f in moe} == {held}
        assert {f.tokens_from for f in moe} == {copies}  # the copies an EP group serves
        assert moe[0].router_parameters == model.layout.blocks[-1].ffn.router_parameters
    for argv in (["--tp", "4", "--dp", "8", "--ep", "32", "--redundant-experts", "32"],
                 ["--tp", "4", "--dp", "80", "--ep", "320"]):
        code, out, err = cli("report", "deepseek-v3-fp8", "--chip", "h100", "--context",
                             "4096", "--batch", "1,64", "--prompt", "4096", "--answer", "64",
                             "--json", *argv)
        assert code == 0, err
        r = json.loads(out)
        assert r["scope"] == "split" and r["weights_fit"] and r["requests"]
        assert all(x["expert_all_to_alls_seconds"] > 0 for x in r["split"]["throughput"])


def test_attention_data_parallel_sends_every_copys_tokens_to_the_experts():
    """With N_ep = N_tp x N_dp (vLLM's and SGLang's attention data parallel), each device's
    experts take the tokens of every copy its group spans: over the N_ep devices, a step's
    expert work is N_ep / N_tp copies x B tokens x k experts; with N_ep below N_tp, the N_tp
    devices of one copy share its B x k expert passes, each expert cut N_tp / N_ep ways."""
    model, _ = load_model("mixtral-8x7b")
    b, whole = 4, model.layout.blocks[0].ffn
    for s in (Split(tp=2, ep=8, dp=4), Split(tp=8, ep=8), Split(tp=4, ep=2)):
        f = device_model(model, s).layout.blocks[0].ffn
        one = b * f.per_token * f.tokens_from * f.expert_parameters  # a device's numbers
        devices, copies = (s.ep, s.ep // s.tp) if s.ep >= s.tp else (s.tp, 1)
        assert one * devices == copies * b * whole.per_token * whole.expert_parameters


# --- links ---------------------------------------------------------------------------------

@pytest.mark.slow(seconds=1)
def test_a_group_beyond_one_machine_lands_on_the_network():
    """Tensor parallel of 16 on machines of 8 H100s runs its all-reduces in two levels (the
    teaching two_level_all_reduce_time); data parallel with tensor parallel inside each machine
    has one member a machine and rings over the network card; the report says so."""
    s = Split(tp=16, dp=4, **LINKS)
    g = groups(s)
    assert (g["tp"].per_machine, g["tp"].machines) == (8, 2)
    assert (g["dp"].per_machine, g["dp"].machines) == (1, 4)
    x = 1 << 24
    assert collective_time(s, "tp", "all-reduce", x) == two_level_all_reduce_time(
        x, 8, 2, LINKS["link"], LINKS["network"])
    assert collective_time(s, "dp", "all-reduce", x) == ring_time(
        "all-reduce", x, 4, LINKS["network"])
    inside = Split(tp=8, **LINKS)
    assert collective_time(inside, "tp", "all-reduce", x) == ring_time(
        "all-reduce", x, 8, LINKS["link"])
    code, out, _ = cli("report", "llama-3.1-405b", "--chip", "h100", "--tp", "16",
                       "--context", "8192", "--batch", "1")
    assert code == 0 and "tensor parallel of 16 spans 2 machines of 8" in out


# --- serving under a split -----------------------------------------------------------------

def test_prefill_and_requests_are_priced_under_the_split():
    """A prompt's pass over the split is its stages' rooflines plus two all-reduces a layer
    of n x d numbers; a request's first token is that pass, its later tokens the split's
    decode steps."""
    model = model_of(PLAIN)
    s = Split(tp=2, **LINKS)
    from transformer_calculator.service.serving import Request
    r = serving_split(model, H100, s, VLLM_DEFAULTS, [512], [1], [512], [Request(512, 8)])
    row = r["prefill"][0]
    one = device_model(model, s)
    assert row["arithmetic_or_reading_seconds"] == costs.prefill_time(one, H100, 512)
    x = 512 * PLAIN.width * PLAIN.bytes_per_number
    assert row["tensor_parallel_all_reduces_seconds"] == pytest.approx(
        2 * PLAIN.layers * ring_time("all-reduce", x, 2, LINKS["link"]), rel=1e-12)
    q = r["requests"][0]
    assert q["first_token_seconds"] == pytest.approx(row["seconds"], rel=1e-12)
    assert q["first_step_seconds"] == next(x["seconds_per_token"] for x in
                                           serving_split(model, H100, s, VLLM_DEFAULTS,
                                                         [513], [1], [513])["decode"])


def test_overlap_hides_what_the_arithmetic_beside_it_covers():
    """The rule the part teaches: a collective hides when the arithmetic beside it takes at
    least as long. A decode step's all-reduces wait on one another and stay; the all-to-alls
    of two micro-batches (DeepSeek-V3) hide under the other's arithmetic; a training step's
    floor hides everything a schedule can, and its step is never above the added one."""
    model, _ = load_model("mixtral-8x7b")
    base = Split(tp=2, ep=4, dp=2, **LINKS)
    added, hidden = (serving_split(model, H100, dataclasses.replace(base, overlap=o),
                                   VLLM_DEFAULTS, [2048], [8], [2048])["throughput"][0]
                     for o in (False, True))
    assert hidden["tensor_parallel_all_reduces_seconds"] == \
        added["tensor_parallel_all_reduces_seconds"]
    assert hidden["expert_all_to_alls_seconds"] == max(
        0.0, added["expert_all_to_alls_seconds"] - added["arithmetic_or_reading_seconds"])
    t = Training(batch=8, seq_len=1024)
    plain = model_of(dataclasses.replace(PLAIN, layers=8))
    rows = [training_split(plain, H100, Split(tp=4, pp=2, dp=2, micro_batches=8,
                                              overlap=o, **LINKS), t, 10**6)
            for o in (False, True)]
    assert rows[1]["step_seconds"] == pytest.approx(rows[0]["floor_seconds"], rel=1e-12)
    assert rows[1]["step_seconds"] <= rows[0]["step_seconds"]
    for name, seconds in rows[1]["exposed_communication_seconds"].items():
        assert 0 <= seconds <= rows[0]["exposed_communication_seconds"][name]


# --- one report about the split ------------------------------------------------------------

@pytest.mark.slow(seconds=2)
def test_a_split_report_is_about_the_split_throughout():
    """Llama-3-70B over 8 H100s: every figure of the report (memory, what fits, the longest
    conversation, speeds, requests) is the split's, in the text and the JSON; the one chip's
    figures sit under one_chip, and nothing says the model cannot run."""
    argv = ["report", "llama-3-70b", "--chip", "h100-sxm", "--tp", "8", "--context", "8192",
            "--batch", "1,16,64", "--prompt", "2000", "--answer", "100"]
    for weights in ([], ["--weights", "fp8", "--kv-dtype", "fp8"]):
        code, text, _ = cli(*argv, *weights)
        r = json.loads(cli(*argv, *weights, "--json")[1])
        s = r["split"]
        assert code == 0 and r["scope"] == "split" and r["weights_fit"]
        assert "one such chip" not in text and "do not fit" not in text
        assert r["lengths"][0]["conversations_that_fit"] == \
            s["lengths"][0]["conversations_that_fit"]
        assert [x["seconds_per_token"] for x in r["decode"]] == \
            [x["seconds_per_token"] for x in s["decode"]]
        assert [x["wait_seconds"] for x in r["throughput"]] == \
            [x["seconds_per_token"] for x in s["throughput"]]
        assert all(x["fits"] for x in r["throughput"])
        assert r["serving"]["cache_budget_bytes"] == \
            s["usable_bytes_per_device"] - s["weight_bytes_per_device"]
        assert f"({r['lengths'][0]['conversations_that_fit']:,} fit in memory)" in text
        assert r["one_chip"]["weights_fit"] is (bool(weights))


@pytest.mark.parametrize(("argv", "words"), [
    (("report", "llama-3-8b", "--tp", "3"), "32 heads do not divide among 3"),
    (("report", "llama-3-8b", "--tp", "8"), "name a chip (--chip h100-sxm)"),
    (("report", "mixtral-8x7b", "--chip", "h100", "--ep", "8"), "also set --tp 8 or --dp 8"),
    (("report", "llama-3-8b", "--chip", "h100", "--tp", "3"),
     "sizes that divide this model: 2, 4, 8, 16 or 32"),
])
def test_errors_name_the_cause_first_and_the_fix(argv, words):
    code, out, err = cli(*argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert words in err, err


# --- published plans -----------------------------------------------------------------------

LLAMA_3_PLAN = ["train", "llama-3.1-405b", "--chip", "h100-sxm", "--tp", "8", "--pp", "16",
                "--devices", "128", "--seq-len", "8192", "--batch", "16", "--micro-batches",
                "16", "--virtual-stages", "8", "--zero-stage", "2", "--gradients", "fp32",
                "--fused-glu", "--json"]
"""Llama 3 405B on 16,384 H100s as Table 4 of Dubey et al. (2024) gives it: TP 8, CP 1, PP 16,
DP 128 (FSDP, its gradients and optimizer states sharded, reduce-scattered in float32), 8,192
tokens a sequence, 16 sequences a data-parallel group (16M tokens a step), no activation
checkpointing, an interleaved schedule (its v not stated: 8, one layer a chunk, the reading in
which the end stages' one fewer layer leaves room for the tables)."""

TABLE_4_MFU = 0.41
"""BF16 MFU that Table 4 reports for this plan (400 TFLOPs a GPU)."""


@pytest.mark.slow(seconds=2)
def test_llama_3_405b_plan_fits_and_its_step_is_near_the_papers():
    """The plan fits on every device, and at the paper's own utilisation as the matrices' share
    of the peak, the step comes within 20 % of the one its MFU implies (the model's work a step
    over 16,384 GPUs at 41 % of the H100's 989.4 TFLOP/s): the bubble and the communication the
    calculator adds (hidden where a schedule can hide them) are what the paper's MFU already
    includes."""
    code, out, err = cli(*LLAMA_3_PLAN, "--flops-efficiency", str(TABLE_4_MFU), "--overlap")
    assert code == 0, err
    r = json.loads(out)
    s = r["split"]
    assert s["split"]["devices"] == 16_384 and r["fits"]
    assert all(d["memory_bytes"] <= H100.memory_bytes for d in s["devices"])
    assert s["stage_layers"] == [7] + [8] * 14 + [7]
    tokens = 16 * 8192 * 128
    assert r["tokens_per_s"] * r["step_seconds"] == pytest.approx(tokens)
    work = r["model_flops_utilisation"] * r["step_seconds"] * 16_384 * H100.flops_per_s
    implied = work / (TABLE_4_MFU * 16_384 * H100.flops_per_s)
    assert 0.8 <= r["step_seconds"] / implied <= 1.2, (r["step_seconds"], implied)
    floor = json.loads(cli(*LLAMA_3_PLAN, "--overlap")[1])["split"]["floor_seconds"]
    assert floor < implied  # the floor at the chip's full rate is below what Meta measured
