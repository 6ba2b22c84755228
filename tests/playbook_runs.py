"""The Ultra-Scale Playbook's training runs (``published/measured/``, the one copy) written as the
calculator's own training plans.

Each row is a nanotron run on nodes of 8 H100 SXM: its DP, TP, PP, ZeRO stage, micro-batch
(MBS sequences of 4,096 tokens) and gradient accumulation (GradAcc micro-batches a step).
The shapes and the trainer's settings are nanotron's, read in its
``scripts/scaling_benchmarks.py`` (huggingface/nanotron @2411b022) and its code:

- ``model_configs``: 1B (16 layers, width 2,048, 32 heads, feed-forward 8,192), 3B (28, 3,072,
  32, 8,192), 8B (32, 4,096, 32, 14,336), the "80B" (80, 8,192, 64, 28,672);
  ``NUM_KEY_VALUE_HEADS = None`` (as many key-value heads as heads); ``VOCAB_SIZES =
  [131072]``; ``tie_word_embeddings = True if intermediate_size < 10_000`` (1B and 3B tied);
  a Llama block (RMSNorm, SwiGLU);
- ``tp_mode = "REDUCE_SCATTER"`` (sequence parallel), flash attention (no score grid kept),
  ``recompute_layer`` off, AdamW, bfloat16 with ``ACCUMULATE_GRAD_IN_FP32 = True``: nanotron's
  ``FP32GradientAccumulator`` keeps a float32 buffer of every gradient beside the bfloat16
  gradients backward writes (whole at ZeRO stage 1) and a float32 master copy of the
  optimizer's share; ``pp_engine`` 1F1B;
- nanotron puts each pipeline block on a stage by its cumulative cost
  (``models/base.py build_model``: a layer costs 4 h d + 3 f d, the head V d, the embedding
  nothing; a stage takes blocks until their running cost passes its share):
  ``nanotron_stages``.
"""
from __future__ import annotations

import csv
import itertools
from dataclasses import dataclass
from importlib import resources

from transformer_calculator.counting.chips import chip
from transformer_calculator.measured_runs.conversion import TRAINING_TABLE
from transformer_calculator.reading.config import model_from_config
from transformer_calculator.splits import Split, chip_link, chip_machine, chip_network
from transformer_calculator.counting.training import Training

RUNS = resources.files("published") / "measured" / TRAINING_TABLE  # the shipped copy
SEQ = 4096
VOCAB = 131_072
SHAPES = {"1B": (16, 2048, 32, 8192), "3B": (28, 3072, 32, 8192),
          "8B": (32, 4096, 32, 14336), "80B": (80, 8192, 64, 28672)}
H100 = chip("h100-sxm")


def config(name: str) -> dict:
    """The config.json of one of the playbook's models, as nanotron builds it."""
    layers, width, heads, ffn = SHAPES[name]
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
            "hidden_size": width, "intermediate_size": ffn, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": heads,
            "vocab_size": VOCAB, "tie_word_embeddings": ffn < 10_000,
            "hidden_act": "silu", "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16",
            "max_position_embeddings": SEQ}


def nanotron_stages(name: str, pp: int) -> tuple[int, ...]:
    """Layers on each of ``pp`` stages as nanotron's ``build_model`` places them."""
    layers, width, heads, ffn = SHAPES[name]
    blocks = [0] + [4 * width * width + 3 * ffn * width] * layers + [0, VOCAB * width]
    cumulative = list(itertools.accumulate(blocks))
    thresholds = [cumulative[-1] * (r + 1) / pp for r in range(pp)]
    rank, counts = 0, [0] * pp
    for i, cost in enumerate(cumulative):
        if 1 <= i <= layers:
            counts[rank] += 1
        if cost > thresholds[rank]:
            rank += 1
    return tuple(counts)


@dataclass(frozen=True)
class Run:
    """One measured run: the model, the plan and what was measured."""

    model: str
    nodes: int
    dp: int
    tp: int
    pp: int
    zero: int
    mbs: int
    grad_acc: int
    mfu: float | None
    tokens_per_s_per_gpu: float | None
    memory_gib: float | None

    def training(self) -> Training:
        """The run's step as the calculator's ``Training``."""
        return Training(batch=self.mbs * self.grad_acc, seq_len=SEQ,
                        micro_batches=self.grad_acc, zero_stage=self.zero,
                        devices=self.dp, gradients="both", recompute="selective")

    def split(self) -> Split:
        """The run's split, each stage's layers as nanotron places them."""
        stages = nanotron_stages(self.model, self.pp)
        return Split(tp=self.tp, pp=self.pp, dp=self.dp, micro_batches=self.grad_acc,
                     link=chip_link(H100), network=chip_network(H100),
                     machine=chip_machine(H100), stage_layers=stages)


def _number(text: str) -> float | None:
    return float(text.replace(",", "")) if text else None


def runs() -> list[Run]:
    """Every run of the table, in its order."""
    with RUNS.open(newline="", encoding="utf-8") as f:
        return [Run(r["model"], int(r["Nodes"]), int(r["DP"]), int(r["TP"]), int(r["PP"]),
                    int(r["ZeRO"]), int(r["MBS"]), int(r["GradAcc"]), _number(r["MFU"]),
                    _number(r["tok/s/gpu"]), _number(r["GPU memory"]))
                for r in csv.DictReader(f)]


_MODELS: dict = {}


def model(name: str):
    """The calculator's model of one of the playbook's shapes."""
    if name not in _MODELS:
        _MODELS[name] = model_from_config(config(name))[0]
    return _MODELS[name]
