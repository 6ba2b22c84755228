"""The calculator's splits (``--tp``, ``--pp``, ``--ep``, ``--dp``, ``--interconnect``), without
PyTorch: a plain decoder's device shares equal the teaching formulas of the many-chips part
(``tensor_parallel``, ``splits``, ``collectives``); the share tensor parallel divides equals
Korthikanti et al. (2022)'s 24 sbh / t; ZeRO's per-device model states equal the figures of
Rajbhandari et al. (2020), Figure 1; each bad split is refused in one line naming its flag
(exit 2); the JSON is valid; a model that does not fit names the splits that would."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json

import pytest

from transformer_arithmetic import ModelShape
from transformer_arithmetic import splits as teaching
from transformer_arithmetic import tensor_parallel as ttp
from transformer_arithmetic.collectives import ring_time
from transformer_arithmetic.examples.many_chips import NVLINK
from transformer_calculator.counting import costs
from transformer_calculator.counting.activations import activation_bytes
from transformer_calculator.counting.chips import chip
from transformer_calculator.command_line.cli import load_model, main
from transformer_calculator.reading.plain import model_of
from transformer_calculator.service.serving import VLLM_DEFAULTS
from transformer_calculator.splits import serving_split, splits_that_fit, training_split
from transformer_calculator.splits import Split, device_model, interconnect, stage_models
from transformer_calculator.counting.training import Training

SHAPES = [
    ModelShape(layers=4, heads=8, head_dim=16, ffn_width=256, vocab=512),
    ModelShape(layers=6, heads=8, kv_heads=2, head_dim=8, ffn_width=96, vocab=64, gated_ffn=True,
               tied_embeddings=False, norm_bias=True),
    ModelShape(layers=4, heads=4, kv_heads=1, head_dim=8, ffn_width=64, vocab=32, bytes_per_number=4),
]
H100 = chip("h100-sxm")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("m", SHAPES)
@pytest.mark.parametrize("n", [1, 2, 4])
def test_a_plain_devices_share_is_the_teaching_formulas(m, n):
    """Weights and cache a token of one tensor-parallel device (tensor_parallel.tp_weight_bytes,
    tp_cache_bytes_per_token), and the last pipeline stage's numbers (splits.stage_numbers)."""
    model = model_of(m)
    one = device_model(model, Split(tp=n))
    assert costs.weight_bytes(one) == ttp.tp_weight_bytes(m, n)
    assert costs.cache_bytes_per_token(one) == ttp.tp_cache_bytes_per_token(m, n)
    for pp in (2, m.layers):
        last = stage_models(model, Split(tp=n, pp=pp))[-1]
        assert costs.parameters(last) == teaching.stage_numbers(m, teaching.Split(1, n, pp))
    stages = stage_models(model, Split(tp=n, pp=2))
    tables = (m.vocab // n) * m.width  # a tied table is copied to the last stage
    extra = tables if m.tied_embeddings else 0
    assert sum(costs.parameters(s) for s in stages) == costs.parameters(one) + extra


@pytest.mark.parametrize("m", SHAPES)
def test_a_decode_steps_all_reduces_are_the_teaching_ones(m):
    """tensor_parallel.tp_decode_parts' 2L all-reduces of batch x d numbers, on the same link."""
    n, b, ctx = 4 if m.kv_heads != 1 else 2, 8, 256
    s = Split(tp=n, link=NVLINK)
    r = serving_split(model_of(m), H100, s, VLLM_DEFAULTS, [ctx], [b], [ctx])
    row = next(x for x in r["throughput"] if x["batch"] == b)
    want = ttp.tp_decode_parts(m, H100, NVLINK, n, ctx, b)["all-reduces"]
    assert row["tensor_parallel_all_reduces_seconds"] == pytest.approx(want, rel=1e-12)


def test_tensor_parallel_divides_korthikantis_24_sbh():
    """Korthikanti et al. (2022), section 4.1: with tensor parallelism of size t a layer keeps
    sbh (10 + 24 / t + 5 a s / (h t)) bytes; with the grid recomputed (selective) and no dropout
    the 24 sbh term alone is divided by t, the rest stays whole on every device."""
    m = ModelShape(layers=1, heads=16, head_dim=64, ffn_width=4096, vocab=512)
    s, b, h = 128, 2, m.width
    whole = activation_bytes(model_of(m), b, s, "selective")
    for t in (2, 4, 8):
        part = activation_bytes(device_model(model_of(m), Split(tp=t)), b, s, "selective")
        assert whole - part == 24 * s * b * h * (1 - 1 / t)


def test_zero_model_states_per_device_are_the_papers_figure_1():
    """Rajbhandari et al. (2020), Figure 1: a 7.5B-parameter model on 64 devices with mixed-
    precision Adam holds 120 GB of model states a device, 31.4 GB under P_os, 16.6 GB under
    P_os+g and 1.9 GB under P_os+g+p (their GB are 10^9 bytes)."""
    m = model_of(ModelShape(layers=37, heads=32, head_dim=128, ffn_width=16384, vocab=32000))
    assert costs.parameters(m) == pytest.approx(7.5e9, rel=0.03)
    scale = 7.5e9 / costs.parameters(m)
    states = ("weights", "gradients", "float32 master weights", "optimizer states")
    for stage, paper in ((0, 120), (1, 31.4), (2, 16.6), (3, 1.9)):
        t = Training(zero_stage=stage, devices=64, seq_len=16)
        r = training_split(m, H100, Split(dp=64, link=NVLINK), t, 10**6)
        got = sum(r["memory"][k] for k in states) * scale / 1e9
        assert got == pytest.approx(paper, abs=0.06), stage


def test_the_interconnect_flag_takes_a_table_name_or_gb_per_s():
    code, out, _ = cli("report", "llama-3-70b", "--chip", "h100", "--tp", "8", "--json",
                       "--context", "2048", "--batch", "1")
    assert code == 0
    r = json.loads(out)["split"]
    assert r["split"]["interconnect"] == "NVLink 4"
    assert r["split"]["link_bytes_per_s_each_way"] == 450e9  # half the table's 900 GB/s
    code, out, _ = cli("report", "llama-3-70b", "--chip", "h100", "--tp", "8", "--json",
                       "--interconnect", "64", "--context", "2048", "--batch", "1")
    slow = json.loads(out)["split"]
    assert slow["split"]["link_bytes_per_s_each_way"] == 32e9
    assert slow["decode"][0]["seconds_per_token"] > r["decode"][0]["seconds_per_token"]
    assert interconnect("PCIe Gen4 x16").step_latency_s > interconnect("NVLink 4").step_latency_s


@pytest.mark.parametrize("argv, flag", [
    (("report", "llama-3-8b", "--chip", "h100", "--tp", "3"), "--tp"),
    (("report", "llama-3-8b", "--chip", "h100", "--tp", "64"), "--tp"),
    (("report", "llama-3-8b", "--chip", "h100", "--pp", "40"), "--pp"),
    (("report", "llama-3-8b", "--chip", "h100", "--pp", "2", "--pp-layers", "16,15"),
     "--pp-layers"),
    (("report", "llama-3-8b", "--chip", "h100", "--cp", "2"), "--cp"),
    (("report", "llama-3-8b", "--chip", "h100", "--tp", "2", "--micro-batches", "2"),
     "--micro-batches"),
    (("train", "llama-3-8b", "--chip", "h100", "--virtual-stages", "2"), "--virtual-stages"),
    (("train", "llama-3-8b", "--chip", "h100", "--cp", "3", "--seq-len", "2048"), "--cp"),
    (("report", "llama-3-8b", "--tp", "2"), "--chip"),
    (("report", "llama-3-8b", "--chip", "h100", "--ep", "2"), "--ep"),
    (("report", "mixtral-8x7b", "--chip", "h100", "--ep", "3"), "--ep"),
    (("report", "mixtral-8x7b", "--chip", "h100", "--ep", "8"), "--ep"),
    (("report", "llama-3-8b", "--accelerator", "1e15,3e12,80", "--tp", "2"), "--chip"),
    (("report", "llama-3-8b", "--chip", "h100", "--interconnect", "warp"), "--interconnect"),
    (("report", "llama-3-8b", "--chip", "h100", "--tp", "0"), "--tp"),
    (("report", "jamba-v0.1", "--chip", "h100", "--tp", "2"), "--tp"),
    (("train", "llama-3-8b", "--chip", "h100", "--pp", "2", "--micro-batches", "3", "--batch", "4"),
     "--micro-batches"),
])
def test_each_bad_split_is_refused_in_one_line_naming_its_flag(argv, flag):
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and flag in err, err


def test_split_json_is_valid_and_its_devices_add_up():
    code, out, _ = cli("train", "llama-3-70b", "--chip", "h100", "--tp", "8", "--pp", "4",
                       "--devices", "2", "--batch", "8", "--micro-batches", "8", "--json")
    assert code == 0
    r = json.loads(out)
    s = r["split"]
    assert s["split"]["devices"] == 64 and len(s["devices"]) == 4
    first = s["devices"][0]
    assert first["micro_batches_held"] == 4 and s["busiest_stage"] == 0  # 1F1B: N_pp in flight
    assert r["memory_bytes"] == first["memory_bytes"] == max(d["memory_bytes"] for d in s["devices"])
    parts = s["communication_seconds"]
    assert parts == s["exposed_communication_seconds"]  # nothing hidden without --overlap
    assert r["step_seconds"] == pytest.approx(
        s["arithmetic_seconds"] + s["bubble_seconds"] + sum(parts.values())
        + s["optimizer_seconds"], rel=1e-12)
    # 1F1B's bubble: the other stages' way in and out of one micro-batch (their pass and
    # their collectives), (N_pp - 1) / N_mb of the work for even stages
    per = [d["pass_seconds"] + sum(d["communication"].values()) for d in s["devices"]]
    assert s["bubble_seconds"] == pytest.approx(sum(per) - max(per), rel=1e-12)
    assert s["floor_seconds"] <= r["step_seconds"]
    assert any("communication added" in a or "not overlapped" in a or "added to" in a
               for a in r["assumptions"])


def test_experts_spread_over_devices_hold_their_share():
    """DeepSeek-V3 with --ep 8: each device holds 32 of the 256 experts of every layer, the
    routers whole; with --ep 1 every expert is cut by tp instead: the same bytes of experts."""
    model, _ = load_model("deepseek-v3-fp8")
    ep = device_model(model, Split(tp=8, ep=8))
    tp = device_model(model, Split(tp=8))
    moe = [b.ffn for b in ep.layout.blocks if hasattr(b.ffn, "count")]
    assert {f.count for f in moe} == {32} and {f.per_token for f in moe} == {1}
    assert costs.parameters(ep) == costs.parameters(tp)
    whole = model.layout.blocks[-1].ffn
    assert moe[-1].router_parameters == whole.router_parameters


def test_a_model_that_does_not_fit_names_the_splits_that_would():
    model, _ = load_model("llama-3-70b")
    found = splits_that_fit(model, H100, VLLM_DEFAULTS, 8192)
    assert found[0] == {"tp": 2, "pp": 1, "ep": 1, "dp": 1, "chips": 2}
    for f in found:  # each one really fits, and one fewer tensor-parallel device does not
        s = Split(tp=f["tp"], pp=f["pp"], ep=f["ep"], dp=f["dp"])
        rows = serving_split(model, H100, dataclasses.replace(s, link=NVLINK), VLLM_DEFAULTS,
                             [8192], [1], [8192])["devices"]
        assert all(r["conversations_that_fit"] >= 1 for r in rows)
    code, out, _ = cli("report", "llama-3-70b", "--chip", "h100", "--context", "8192")
    assert "Splits that fit             tp 2 (2 chips)" in out
    model, _ = load_model("deepseek-v3-fp8")
    found = splits_that_fit(model, H100, VLLM_DEFAULTS, 8192)
    assert {"tp": 8, "pp": 1, "ep": 16, "dp": 2, "chips": 16} in found
    assert found[0] == {"tp": 2, "pp": 5, "ep": 1, "dp": 1, "chips": 10}  # uneven stages
    code, out, _ = cli("report", "deepseek-v3-fp8", "--chip", "h100", "--json")
    assert json.loads(out)["splits_that_fit"][0]["chips"] == 10


def test_a_split_that_fits_prints_times_and_one_that_does_not_prints_none():
    code, out, _ = cli("report", "deepseek-v3-fp8", "--chip", "h100", "--tp", "8", "--ep", "8")
    assert code == 0 and "Speed: none printed, since a device's weights" in out
    assert "Split: one decode step" not in out and "one such chip" not in out
    code, out, _ = cli("report", "deepseek-v3-fp8", "--chip", "h200", "--tp", "8", "--ep", "8",
                       "--json")
    r = json.loads(out)["split"]
    assert r["weights_fit"] and all(x["seconds_per_token"] > 0 for x in r["decode"])
    assert r["decode"][0]["expert_all_to_alls_seconds"] > 0
