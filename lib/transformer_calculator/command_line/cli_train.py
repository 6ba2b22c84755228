"""The ``train`` command: one training step's memory by part and its time, for full
training or LoRA / QLoRA fine-tuning, under ZeRO over several devices
(``training.py``)."""

from __future__ import annotations

import argparse
import json
import math

from ..counting.activations import RECOMPUTE
from .cli_splits import split_assumptions, split_given, split_of
from ..anatomy.matrices import matrices
from ..estimate.report import at_peak, estimate_text, training_estimate
from ..reading.inputs import UsageError, apply_formats, load_model
from .cli_options import add_chip_options, add_format_options, chip_of
from .cli_values import price, pue, typed
from ..counting.text import bytes_text, seconds_text, table
from ..counting.running_costs import cost_lines, running_costs
from ..splits import Split, chip_link, training_split
from ..splits.text import training_split_lines
from ..counting.training import (ALL_LINEAR, GRADIENTS, LORA_TARGETS, LOSSES,
                                 OPTIMIZERS, Lora, Training)
from ..counting.training_time import train_figures

__all__ = [
    "add_train_parser",
    "run_train",
    "train_report",
    "format_train",
]

MAX_TRAINING_TOKENS = 10**16
"""Most training tokens ``--tokens`` takes (published runs use about 10^13)."""


_SPLIT_KEYS = ("memory", "memory_bytes", "fits", "step_seconds", "tokens_per_s",
               "model_flops_utilisation", "training_seconds", "chip_hours",
               "bytes_per_parameter", "utilisation_against")
"""What a split replaces in the train command's figures: the busiest device's."""

_SPLIT_TIME = (
    "time: each stage's micro-batches on the roofline (forward 2 operations a "
    "weight a token, backward 4, attention's pairs, recomputation's forward again, "
    "and the bytes they read), the slowest stage's plus the pipeline's bubble, the "
    "communication and the optimizer's step once"
)


_RECOMPUTE_WORDS = {"none": "no recomputation", "selective": "selective recomputation",
                    "full": "full recomputation"}
"""What each ``--recompute`` choice is called in the text."""


def _whole(low: int, high: int):
    def parse(text: str) -> int:
        clean = text.strip().replace("_", "")
        try:
            value = int(clean)
        except ValueError:
            try:
                number = float(clean)
            except ValueError:
                number = math.nan
            if not math.isfinite(number) or number != int(number):
                raise argparse.ArgumentTypeError(
                    f"must be a whole number, got {text!r}"
                ) from None
            value = int(number)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must lie between {low:,} and {high:,}, got {text!r}"
            )
        return value

    parse.__name__ = "whole number"
    return parse


def _targets(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",")))
    if names == ("all-linear",):
        return ALL_LINEAR
    unknown = [n for n in names if n not in LORA_TARGETS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"must be all-linear or among {', '.join(LORA_TARGETS)}, got {text!r}"
        )
    return names


def add_train_parser(commands) -> None:
    """The ``train`` subcommand and its options."""
    p = commands.add_parser(
        "train",
        help="print one training step's memory and time for one config.json",
        description="Memory by part (weights, gradients, optimizer states, master "
        "weights, activations, logits) and time of one training step, for full "
        "training or LoRA / QLoRA, under ZeRO stages 0 to 3.",
    )
    p.add_argument("config", help="path to a config.json or a shipped example's name")
    add_chip_options(p)
    add_format_options(p)
    p.add_argument(
        "--batch",
        type=_whole(1, 10**6),
        default=1,
        metavar="B",
        help="sequences on each device in one step (default 1)",
    )
    p.add_argument(
        "--seq-len",
        type=_whole(1, 10**8),
        default=2048,
        metavar="N",
        help="tokens a sequence (default 2048)",
    )
    p.add_argument(
        "--optimizer",
        choices=list(OPTIMIZERS),
        default="adamw",
        help="adamw (default), adam8bit or sgd (with momentum)",
    )
    p.add_argument(
        "--recompute",
        choices=list(RECOMPUTE),
        default="selective",
        help="activations recomputed in the backward pass: none, selective "
        "(attention's grid, the default) or full (all but each layer's "
        "input)",
    )
    p.add_argument(
        "--zero-stage",
        type=_whole(0, 3),
        default=0,
        metavar="0-3",
        help="ZeRO stage (default 0)",
    )
    p.add_argument(
        "--devices",
        "--data-parallel",
        "--dp",
        "--dp-size",
        dest="devices",
        type=_whole(1, 10**7),
        default=1,
        metavar="D",
        help="data-parallel devices (default 1)",
    )
    p.add_argument(
        "--gradients",
        choices=list(GRADIENTS),
        default=None,
        help="model: gradients in the model's format (the default; 16 bytes a "
        "parameter with AdamW); fp32: in float32 only (Megatron-LM's main "
        "gradients; 18); both: a float32 copy beside them (DeepSpeed, nanotron; 20)",
    )
    p.add_argument(
        "--fp32-gradients",
        action="store_true",
        help="the same as --gradients both",
    )
    p.add_argument(
        "--no-master-weights",
        dest="master_weights",
        action="store_false",
        help="no float32 master copy: the optimizer updates the model's own numbers "
        "(12 bytes a parameter with AdamW)",
    )
    p.add_argument(
        "--fused-glu",
        action="store_true",
        help="a gated feed-forward part's activation fused into one kernel that keeps "
        "its input and recomputes the rest (Megatron-LM's bias-SwiGLU): 3 inner "
        "vectors kept a token, not 4",
    )
    p.add_argument(
        "--loss",
        choices=list(LOSSES),
        default="torch",
        help="how the loss holds the logits: torch (cross_entropy(logits.float()), "
        "the logits kept: b + 12 bytes a logit, the default) or vocab-parallel "
        "(Megatron-LM's and nanotron's fused loss: b + 8)",
    )
    for flag, why in (
        ("--gathered-inputs", "under sequence parallelism the matrices keep their "
         "gathered inputs whole for the backward pass (nanotron's "
         "tp_recompute_allgather false)"),
        ("--kv-twice", "attention keeps its keys and values twice (nanotron's packed "
         "query-key-value copy beside its rotated key-value copy)"),
        ("--gather-buffers", "under sequence parallelism keep two whole-sequence "
         "buffers for the gathers (nanotron's MemoryBuffer: the gathered input and "
         "gradient)"),
        ("--ddp-buckets", "keep PyTorch DDP's buckets: a second copy of the gradients "
         "in the model's format (DistributedDataParallel without "
         "gradient_as_bucket_view)"),
    ):
        p.add_argument(flag, action="store_true", help=why)
    p.add_argument(
        "--dropout",
        action="store_true",
        help="keep dropout's masks for the backward pass (today's large models "
        "train without dropout, the default)",
    )
    p.add_argument(
        "--lora-rank",
        type=_whole(1, 1 << 16),
        metavar="R",
        help="train LoRA adapters of rank R instead of every weight",
    )
    p.add_argument(
        "--lora-targets",
        type=_targets,
        default=None,
        metavar="NAMES",
        help="modules LoRA adapts: all-linear (the default: every linear layer but "
        "the head, the routers and the experts) or a comma list of "
        f"{', '.join(LORA_TARGETS)}",
    )
    p.add_argument(
        "--tokens",
        type=_whole(1, MAX_TRAINING_TOKENS),
        default=10**9,
        metavar="N",
        help="training tokens for the time and chip-hours (default 1e9)",
    )
    p.add_argument("--price", type=typed(price), default=None, metavar="USD",
                   help="dollars one chip-hour costs: the training tokens' cost, at "
                   "least (at the step time above)")
    p.add_argument("--pue", type=typed(pue), default=1.0, metavar="X",
                   help="the data centre's power usage effectiveness, its total power "
                   "over its computers' (default 1: the chips' boards alone)")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")


def train_report(model, acc, t: Training, tokens: int, notes: list[str]) -> dict:
    """The train command's numbers as one JSON-ready dictionary."""
    figures = train_figures(model, acc, t, tokens)
    lora = {"rank": t.lora.rank, "targets": list(t.lora.targets)} if t.lora else None
    result = {
        "model": model.summary(),
        "weights_format": model.weights.describe(),
        "accelerator": {
            "name": acc.name,
            "flops_per_s": float(acc.flops_per_s),
            "bytes_per_s": float(acc.bytes_per_s),
            "memory_bytes": int(acc.memory_bytes),
            "flops_efficiency": acc.flops_efficiency,
            "memory_efficiency": acc.memory_efficiency,
        },
        "training": {
            "batch": t.batch,
            "seq_len": t.seq_len,
            "optimizer": t.optimizer,
            "recompute": t.recompute,
            "zero_stage": t.zero_stage,
            "devices": t.devices,
            "fp32_gradients": t.gradients == "both",
            "gradients": t.gradients,
            "master_weights": t.master_weights,
            "dropout": t.dropout,
            "fused_glu": t.fused_glu,
            "micro_batches": t.micro_batches,
            "lora": lora,
            "tokens": tokens,
        },
        **figures,
        "assumptions": notes + _assumptions(t),
    }
    for key, value in result["memory"].items():
        if not math.isfinite(value):
            raise ValueError(f"memory part {key} is not a finite number")
    return result


def _assumptions(t: Training) -> list[str]:
    out = [
        "memory per device; ZeRO splits the optimizer states and master copy (stage "
        "1), the gradients (stage 2) and the weights (stage 3) across the devices",
        "activations after Korthikanti et al. (2022), in the model's format, of one "
        "micro-batch (a step of several adds up their gradients before the optimizer's "
        "step), " + ("with dropout's one-byte masks" if t.dropout else "without "
                     "dropout") + " and without the small per-token statistics of "
        "normalisations",
        "time: each micro-batch's forward and backward pass on the roofline, the "
        "slower of its arithmetic (forward 2 operations a weight a token, backward 2 "
        "for the inputs' gradients and 2 for each trainable weight's, attention's "
        "pairs 3 times, recomputation's forward again) and its bytes, then the "
        "optimizer's step once (its bytes); communication between devices is not "
        "counted",
        "model-flops utilisation: the time the work without recomputation would take "
        "at the chip's peak rates (fp8 weight matrices at its fp8 peak), over the "
        "step's time",
    ]
    if t.lora:
        out.append(
            "LoRA: the base is frozen (no gradients, no optimizer states) in its own "
            "format; the adapters are trained in the model's format"
        )
    return out


def _lora(args, model) -> Lora | None:
    if not args.lora_rank:
        return None
    names = {m.name for m in matrices(model.layout)} | (
        {"experts"} if model.layout.has_experts else set()
    )
    targets = tuple(n for n in args.lora_targets or ALL_LINEAR if n in names)
    if not targets:
        raise UsageError("argument --lora-targets: this model has no such matrix")
    return Lora(args.lora_rank, targets)


def _training(args, model) -> Training:
    if args.gradients is not None and args.fp32_gradients:
        raise UsageError("arguments --gradients and --fp32-gradients: give one")
    gradients = args.gradients or ("both" if args.fp32_gradients else "model")
    if args.micro_batches is not None and args.batch % args.micro_batches:
        takes = [n for n in range(1, args.batch + 1) if args.batch % n == 0][:12]
        raise UsageError(f"argument --micro-batches: {args.micro_batches} do not "
                         f"divide the batch of {args.batch} (it takes one of "
                         f"{', '.join(map(str, takes))})")
    return Training(
        batch=args.batch,
        seq_len=args.seq_len,
        optimizer=args.optimizer,
        recompute=args.recompute,
        zero_stage=args.zero_stage,
        devices=args.devices,
        gradients=gradients,
        lora=_lora(args, model),
        micro_batches=args.micro_batches or 1,
        master_weights=args.master_weights,
        dropout=args.dropout,
        fused_glu=args.fused_glu,
        loss=args.loss,
        gathered_inputs=args.gathered_inputs,
        kv_twice=args.kv_twice,
        gather_buffers=args.gather_buffers,
        ddp_buckets=args.ddp_buckets,
    )


def run_train(args) -> str:
    """Run the train command: its table or its JSON."""
    if args.lora_targets is not None and args.lora_rank is None:
        raise UsageError("argument --lora-targets needs --lora-rank")
    model, notes = load_model(args.config, args.route)
    model = apply_formats(model, notes, args.weights, None)
    notes += args.chip_notes
    t = _training(args, model)
    chip = chip_of(args)
    result = train_report(model, chip, t, args.tokens, notes)
    figures = result
    split = Split(dp=args.devices, link=chip_link(chip))
    many = args.devices > 1 and chip_link(chip) is not None
    if split_given(args) or many:
        try:
            split = split_of(args, chip, args.devices)
            figures = training_split(model, chip, split, t, args.tokens)
        except ValueError as err:
            raise UsageError(str(err)) from None
        result.update({k: figures[k] for k in _SPLIT_KEYS})
        result["split"] = figures
        result["assumptions"] = [
            a for a in result["assumptions"] if not a.startswith("time:")
        ] + [_SPLIT_TIME] + split_assumptions(split.overlap)
    facts = getattr(chip, "facts", None)
    power = facts.board_power_w if facts is not None else None
    result["running_costs"] = running_costs(result["chip_hours"], args.price, power,
                                            args.pue).as_dict()
    peak = at_peak(chip)  # the estimate stands beside the floor at the chip's peak
    if peak is not chip:
        figures = (training_split(model, peak, split, t, args.tokens)
                   if "split" in result else train_report(model, peak, t, args.tokens,
                                                          list(notes)))
    try:
        result["estimate"] = training_estimate(model, chip, split, t, figures)
    except ValueError:  # a format whose parts the estimate cannot price
        result["estimate"] = None
    return (
        json.dumps(result, indent=2, allow_nan=False)
        if args.json
        else format_train(result)
    )


def format_train(r: dict) -> str:
    """The train command's dictionary as a readable table."""
    t, a, m = r["training"], r["accelerator"], r["model"]
    what = (
        f"LoRA of rank {t['lora']['rank']} on {', '.join(t['lora']['targets'])}"
        if t["lora"]
        else "every weight"
    )
    micro = (f", cut into {t['micro_batches']:,} micro-batches"
             if t["micro_batches"] > 1 else "")
    lines = [
        f"Model {m['name']}: {m['layers']} layers, width {m['width']:,}; training "
        f"{what}",
        f"  weights: {r['weights_format']}",
        f"  trainable numbers: {r['trainable_parameters']:,}, "
        f"{r['bytes_per_parameter']:.4g} bytes each (weight, gradients, master copy, "
        "optimizer states)",
        f"Accelerator {a['name']}, at {a['flops_efficiency']:.0%} of peak arithmetic "
        f"and {a['memory_efficiency']:.0%} of peak bandwidth",
        f"Step: {t['batch']:,} sequence(s) of {t['seq_len']:,} tokens a copy of the "
        f"model{micro}, {t['optimizer']}, {_RECOMPUTE_WORDS[t['recompute']]}, ZeRO "
        f"stage {t['zero_stage']} over {t['devices']:,} device(s)",
        "",
        "Memory of one device by part",
    ]
    rows = [[k, bytes_text(v)] for k, v in r["memory"].items() if v]
    rows.append(["total", bytes_text(r["memory_bytes"])])
    lines += table(["part", "bytes"], rows)
    fit = "fits" if r["fits"] else "does not fit"
    lines += [
        f"  {fit} in the chip's {bytes_text(a['memory_bytes'])}",
        "",
        f"Step time                   {seconds_text(r['step_seconds'])}",
        f"Tokens a second (all)       {r['tokens_per_s']:,.0f}",
        f"Model-flops utilisation     {r['model_flops_utilisation']:.1%} (against "
        f"{r['utilisation_against']})",
        *([estimate_text(r["estimate"], "Tokens a second a chip      ")]
          if r.get("estimate") else []),
        f"{t['tokens']:,} training tokens: {r['training_seconds'] / 86400:,.2f} days, "
        f"{r['chip_hours']:,.0f} chip-hours",
        *cost_lines(r["running_costs"]),
        "",
        "Assumptions",
    ]
    lines += [f"  - {note}" for note in r["assumptions"]]
    if "split" in r:
        at = lines.index("Assumptions")
        lines[at - 1:at - 1] = training_split_lines(r["split"])
    return "\n".join(lines)
