"""The two published tables of measured runs (``published/measured/``) written as the
calculator's own options (``runs.py``), one run a row, in the tables' order.

Serving (aiconfigurator's ``silicon_sample.csv``): each run's model (the shipped config
of its checkpoint: NVIDIA's repackaged ones read as their base model in the format the
run names), chip, engine and version, formats, split, concurrency and lengths. Where the
table leaves something out, this states what is assumed:

- the formats are the run's ``gemm_quant_mode`` (the attention and dense matrices) and
  ``moe_quant_mode`` (the routed experts), except where the published checkpoint says
  otherwise: gpt-oss's experts are mxfp4 beside 16-bit attention (the table writes
  nvfp4 for both, even on chips without 4-bit arithmetic), Kimi-K2.5's routed experts
  alone are int4 (the table writes int4 for both);
- the cache is fp8 in every fp8 or fp4 run and in the model's format otherwise, as
  aiconfigurator predicts them (the table does not say);
- ``batch_size`` is the concurrency of one copy of the attention (the requests in
  flight, a closed loop), the prompt ``isl`` and the answer ``osl`` tokens;
- a disaggregated run is written as its decode workers (split and batch), with its
  prompt workers' split beside it (``prefill_tp``, ``prefill_ep``) and the number of
  each (``prefill_workers``, ``decode_workers``). 1,328 of the table's 1,602 leave
  the ``*_batch_size`` and ``*_num_workers`` columns empty: their concurrency (in
  ``silicon_data_source``) is the decode workers' batch times their number times their
  attention copies, and none of the three is given, so neither each decode worker's
  batch nor the prompt workers' rate is known (aiconfigurator's own predictor refuses
  these rows: "prefill_batch_size is required for disagg mode",
  ``tools/accuracy_regression_testing/predict_silicon_sample.py``). Their floors need
  none of them (a prompt's pass on one prompt worker, a decode step of one
  conversation on one decode worker), so such a run is written with its two splits
  alone, batch and counts empty, and ``check`` refuses its estimate only.

Training (the Ultra-Scale Playbook): 8 H100s a node, sequences of 4,096, the shapes of
nanotron's benchmark script (``playbook-*`` configs), ``MBS`` x ``GradAcc`` sequences a
device a step in ``GradAcc`` micro-batches, ``DP`` data-parallel devices, and what was
measured: tokens a second a GPU, MFU and the peak memory. The memory is nanotron's
``torch.cuda.max_memory_allocated() / 1024**3`` (GiB, allocated, not reserved) on world
rank 0, which is tensor, data and pipeline rank 0: the first pipeline stage
(``helpers.create_table_log``, "Mem Alloc (GB)"). nanotron as the playbook's branch
(``nouamanetazi/ultrascale-playbook``) runs it, each choice an option of the run:

- float32 gradients beside the 16-bit ones (``accumulate_grad_in_fp32``): a float32
  buffer for every parameter, whole under ZeRO-1, which splits the float32 master copy
  and AdamW's moments (``FP32GradientAccumulator``; ``gradients=both``);
- the layers placed on the pipeline stages by cost, the output head's vocab x width
  counted (``build_model``; ``pp_layers=nanotron``), under 1F1B, whose first stage holds
  min(pp, GradAcc) micro-batches' activations at its peak (``engine.py``);
- flash-attention (no grid kept), no recomputation (``recompute_layer`` False), the
  vocabulary-parallel loss (``_ShardedCrossEntropy``; ``loss=vocab-parallel``), and
  multi-head attention's packed query-key-value copy kept beside the rotated key-value
  copy (``kv_twice``);
- sequence parallelism (``tp_mode`` REDUCE_SCATTER) with the matrices' inputs gathered
  again in the backward pass (``tp_recompute_allgather``, True by default:
  ``gathered_inputs=false``), the two whole-sequence buffers its gathers keep
  (``MemoryBuffer``; ``gather_buffers``); the runs of one pipeline stage come from an
  earlier sweep and keep those inputs whole (``PLAYBOOK_ONE_STAGE_GATHERED_INPUTS``);
- PyTorch's ``DistributedDataParallel`` around the model where the run has data
  parallel without ZeRO-1 (``trainer.py``: ``make_ddp``, since the float32
  accumulation under ZeRO-1 syncs its own gradients), without
  ``gradient_as_bucket_view``: its buckets a second 16-bit copy of the gradients
  (``PLAYBOOK_DDP_BUCKETS``; ``ddp_buckets``).
"""

from __future__ import annotations

import csv
import re
import sys
from importlib import resources

from .runs import write_runs

__all__ = [
    "SERVING_TABLE", "TRAINING_TABLE", "MODELS", "NO_LAYOUT", "CHIPS", "FORMATS",
    "PLAYBOOK_GATHERED_INPUTS", "PLAYBOOK_ONE_STAGE_GATHERED_INPUTS",
    "playbook_ddp_buckets", "serving_rows", "training_rows", "table_text", "main",
]

SERVING_TABLE = "aiconfigurator_silicon_sample.csv"
TRAINING_TABLE = "ultrascale_playbook_training_runs.csv"

MODELS = {
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3-fp8",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-r1",
    "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3.1-nvfp4",
    "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "nvidia/Qwen3-32B-NVFP4": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b-fp8",
    "moonshotai/Kimi-K2.5": "kimi-k2.5",
    "Qwen/Qwen3.5-397B-A17B": "qwen3.5-397b-a17b",
    "zhipuai/GLM-5": "glm-5",
}
"""The shipped config each checkpoint of the serving table is read by (an Instruct
model has its base model's sizes; NVIDIA's fp8 and nvfp4 copies, the sizes of the
model they pack)."""

NO_LAYOUT: dict[str, str] = {}
"""Checkpoints whose layers the calculator cannot lay out, and why."""

CHIPS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200",
         "b300_sxm": "b300", "gb200": "gb200", "gb300": "gb300"}

FORMATS = {"": "bf16", "bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8-block",
           "nvfp4": "nvfp4", "int4_wo": "int4-wo"}
"""The table's quant modes as ``--weights`` names them."""

_AS_PUBLISHED = {
    "gpt-oss-120b": ("bf16", "mxfp4"),
    "kimi-k2.5": ("bf16", "int4-wo"),
}
"""Checkpoints whose published formats the table writes otherwise: (the rest, the
experts)."""

DENSE = ("llama-3.1-70b", "llama-3.1-8b", "qwen3-32b")

"""Shipped models of the serving table without experts."""



def table_text(name: str) -> str:
    """The text of one shipped table of measured runs."""
    return (resources.files("published") / "measured" / name).read_text("utf-8")


def _whole(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def _refused(base: dict, why: str) -> dict:
    return {**base, "refused": why}


def _split(r: dict, prefix: str, model: str) -> tuple[dict, str | None]:
    """(tp, ep, attention_dp) of one engine of the run, or a reason it is not one."""
    tp = _whole(r[f"{prefix}tp_size"]) or 1
    adp = _whole(r[f"{prefix}attention_dp_size"]) or 1
    moe_tp = _whole(r[f"{prefix}moe_tp_size"])
    ep = _whole(r[f"{prefix}moe_ep_size"]) or 1
    out = {"tp": str(tp), "attention_dp": str(adp)}
    if model in DENSE:
        return out, None
    if moe_tp is None or moe_tp == 0:
        moe_tp = tp * adp // ep
    if moe_tp * ep != tp * adp:
        return out, (f"the experts' split (moe tp {moe_tp} x ep {ep}) does not cover "
                     f"the attention's tp {tp} x attention dp {adp}")
    if adp > 1 and moe_tp > tp:
        return out, (f"experts cut by tensor parallel across attention-data-parallel "
                     f"ranks (moe tp {moe_tp} over attention tp {tp} x dp {adp}) are "
                     "not expressible yet")
    out["ep"] = str(ep)
    return out, None


def _serving_row(r: dict) -> dict:
    base = {"id": r["id"], "command": "report"}
    path = r["model_path"]
    if path in NO_LAYOUT:
        return _refused({**base, "model": path}, NO_LAYOUT[path])
    model = MODELS[path]
    weights = FORMATS[r["gemm_quant_mode"]]
    experts = "" if model in DENSE else FORMATS[r["moe_quant_mode"]]
    if model in _AS_PUBLISHED and r["precision"] in ("fp4", "int4"):
        weights, experts = _AS_PUBLISHED[model]
    row = {**base, "model": model, "chip": CHIPS[r["system"]], "weights": weights,
           "expert_weights": experts,
           "kv_dtype": "fp8" if r["precision"] in ("fp8", "fp4") else "",
           "engine": r["backend"], "engine_version": r["backend_version"],
           "prompt": r["isl"], "answer": r["osl"]}
    if r["mode"] == "agg":
        split, why = _split(r, "", model)
        row.update(split, batch=r["batch_size"])
    else:  # the counts may be empty: floors alone, then
        split, why = _split(r, "decode_", model)
        prefill, why_prefill = _split(r, "prefill_", model)
        why = why or why_prefill
        row.update(split, batch=r["decode_batch_size"], prefill_tp=prefill["tp"],
                   prefill_ep=prefill.get("ep", ""),
                   prefill_attention_dp=prefill["attention_dp"],
                   prefill_workers=r["prefill_num_workers"],
                   decode_workers=r["decode_num_workers"])
    row.update(measured_ttft_ms=r["silicon_ttft_ms"],
               measured_tpot_ms=r["silicon_tpot_ms"])
    return _refused(row, why) if why else row


def serving_rows(text: str | None = None) -> list[dict]:
    """Every run of the serving table (``text``, or the shipped one) as a row of
    options, in its order (a run that cannot be written says why in ``refused``)."""
    rows = csv.DictReader((text or table_text(SERVING_TABLE)).splitlines())
    return [_serving_row(r) for r in rows]


_SIZES = re.compile(r"^(\d+)B$")

PLAYBOOK_GATHERED_INPUTS = "false"
"""Whether the playbook's pipelined runs are counted with the matrices' gathered inputs
kept (nanotron's ``tp_recompute_allgather`` False): false, nanotron's default."""

PLAYBOOK_ONE_STAGE_GATHERED_INPUTS = "where-held"
"""The same for the runs of one pipeline stage: kept where the device then holds the
step, gathered again where it would not (``setup.KEPT_WHERE_HELD``). The rule is read
from the table's own ``PP`` column and the sweep's script, not fitted run by run:
nanotron's ``scripts/scaling_benchmarks.py`` (branch ``nouamanetazi/ultrascale-
playbook``) keeps every run of one stage from an earlier results table ("if pp==1:
Skipping ... because it already exists in old_results_df") and runs again the pipelined
ones before job 14097150, so the two come from different sweeps. Those of one stage with
tensor parallel hold the matrices' gathered inputs whole: of the 434 such runs of the 1B
to 8B models, 151 are within 10 % of the count without them, 303 with them kept and 364
with them kept or with sequence parallelism off (``tp_mode`` ALL_REDUCE, which the
script also names: the 1B's runs fit it better); the 80B's 23 such runs fit less well
(11 within 10 % without, 7 with). 17 of them could not have held their step with their
inputs whole (the 1B at tensor parallel 32 and 128 sequences a micro-batch: 113 GiB
counted, 62.9 measured), so those were runs of the re-gathering sweep: with that
exception 57.6 % of all runs are within 10 %, every model above its share without the
rule, against 57.1 % (the 80B below) with the inputs kept in every run of one stage. The
one-stage runs are mixed too, mostly kept: the rule takes 48 of them from within 10 % to
outside (59 runs are now counted more than 10 % over what was measured, against 11
before, most at tensor parallel 16 and 32) and 204 the other way. The pipelined runs are
mixed (of 979, 430 within 10 % without, 424 with: no column tells them apart) and stay
at nanotron's default."""


def playbook_ddp_buckets(dp: int, zero_stage: int) -> bool:
    """Whether a playbook run keeps DDP's bucket copy of its gradients: nanotron wraps
    its model in ``DistributedDataParallel`` (``bucket_cap_mb`` from the config,
    ``gradient_as_bucket_view`` left False) when ``make_ddp = data_parallel_size > 1
    and not (accumulate_grad_in_fp32 and zero_stage > 0)``, and the playbook's sweep
    sets ``accumulate_grad_in_fp32`` (``ACCUMULATE_GRAD_IN_FP32 = True``): so with data
    parallel under ZeRO-0 only (``src/nanotron/trainer.py``, ``init_model``, and
    ``scripts/scaling_benchmarks.py``, branch ``nouamanetazi/ultrascale-playbook``,
    commit e24d2483). The 8B's runs without tensor parallel over 8 and 16 pipeline
    stages measure 3.3 to 3.4 and 2.2 to 2.4 GiB more with data parallel under ZeRO-0
    than on one data-parallel device, where no buckets are made: their first stage's
    16-bit weights are 3.3 and 2.4 GiB. Their ZeRO-1 pairs, without DDP, carry less."""
    return dp > 1 and zero_stage == 0


def training_rows(text: str | None = None) -> list[dict]:
    """Every run of the playbook's table (``text``, or the shipped one) as a row of
    ``train``'s options, in its order."""
    out = []
    table = csv.DictReader((text or table_text(TRAINING_TABLE)).splitlines())
    for i, r in enumerate(table):
        size = _SIZES.match(r["model"])
        mbs, acc = int(r["MBS"]), int(r["GradAcc"])
        done = r["MFU"] not in ("", "nan")
        row = {
            "id": f"playbook-{i + 1}-{r['model']}-n{r['Nodes']}", "command": "train",
            "model": f"playbook-{size.group(1).lower()}b" if size else r["model"],
            "chip": "h100-sxm", "seq_len": "4096", "batch": str(mbs * acc),
            "micro_batches": str(acc), "tp": r["TP"], "pp": r["PP"],
            "devices": r["DP"], "zero_stage": r["ZeRO"], "gradients": "both",
            "pp_layers": "nanotron" if r["PP"] != "1" else "",
            "loss": "vocab-parallel", "kv_twice": "true",
            "gathered_inputs": PLAYBOOK_GATHERED_INPUTS if r["PP"] != "1"
            else PLAYBOOK_ONE_STAGE_GATHERED_INPUTS, "gather_buffers": "true",
            "ddp_buckets": str(playbook_ddp_buckets(int(r["DP"]),
                                                    int(r["ZeRO"]))).lower(),
            "measured_tokens_per_s_per_chip": r["tok/s/gpu"] if done else "",
            "measured_mfu": f"{float(r['MFU']) / 100:.6g}" if done else "",
            "measured_memory_gib": r["GPU memory"] if done else "",
        }
        if not done:
            row["refused"] = ("not measured: the run did not finish (out of memory or "
                              "failed)")
        out.append(row)
    return out


def main(argv: list[str]) -> int:
    """Print one shipped table as a table of runs: ``serving`` or ``training``."""
    if argv not in (["serving"], ["training"]):
        print("usage: python -m transformer_calculator.measured_runs.conversion "
              "serving|training", file=sys.stderr)
        return 2
    rows = serving_rows() if argv == ["serving"] else training_rows()
    sys.stdout.write(write_runs(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
