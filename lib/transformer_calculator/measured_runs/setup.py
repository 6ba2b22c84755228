"""A run's options turned into what the calculator counts: its model as each device
holds it, the chip, the split, the batch and the lengths (serving) or the training
step (train); every option that cannot be taken is one line naming it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

from ..counting.chips import Chip, chip
from ..reading.inputs import WEIGHT_CHOICES, UsageError, apply_formats, load_model
from ..anatomy.formats import CACHE_FORMATS
from ..anatomy.model import Model
from ..service.serving import served
from ..splits import (Split, check_split, chip_link, chip_machine, chip_network,
                      stage_models, training_split)
from ..splits.checks import cost_balanced_stage_layers
from ..counting.training import GRADIENTS, LOSSES, OPTIMIZERS, Training
from .runs import Run

__all__ = ["ServingSetup", "TrainingSetup", "serving_setup", "training_setup",
           "ENGINES", "WORKER_COUNTS", "KEPT_WHERE_HELD"]

KEPT_WHERE_HELD = "where-held"
"""``gathered_inputs`` of a run that keeps the matrices' gathered inputs whole where its
device then holds its step, and gathers them again where it would not: a run that
finished could not have held more than its chip (conversion's rule for the playbook's
runs of one stage, ``PLAYBOOK_ONE_STAGE_GATHERED_INPUTS``)."""

ENGINES = ("vllm", "sglang", "trtllm")
"""Serving engines a run may name."""

WORKER_COUNTS = ("batch", "prefill_workers", "decode_workers")
"""What a disaggregated run's estimate needs beside its splits: each decode worker's
batch and how many prompt and decode workers there are (its floors need none)."""


@dataclass(frozen=True)
class ServingSetup:
    """A serving run as counted: the ``model`` (its formats applied), its ``stages``
    as a device of the split holds them, the prompt's devices (``prefill_stages``:
    another split for a disaggregated run), the chip, the split, the concurrency of
    one engine (``batch``), the prompt and answer tokens, the engine and its version,
    the notes, and a disaggregated run's copies of the attention on its decode and
    its prompt workers (``decode_copies``, ``prefill_copies``: workers times attention
    data parallel), and the options of ``WORKER_COUNTS`` a disaggregated run leaves
    out (``unknown``: its floors hold whatever they are, its estimate is refused)."""

    model: Model
    stages: tuple[Model, ...]
    prefill_stages: tuple[Model, ...]
    chip: Chip
    split: Split
    prefill_split: Split
    batch: int | None
    prompt: int
    answer: int
    engine: str | None
    engine_version: str | None
    disaggregated: bool
    notes: tuple[str, ...]
    decode_copies: int = 1
    prefill_copies: int = 1
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrainingSetup:
    """A training run as counted: the model, the chip, the step and the split."""

    model: Model
    chip: Chip
    training: Training
    split: Split
    notes: tuple[str, ...]


def _whole(run: Run, name: str, default: int | None = None, low: int = 1) -> int | None:
    text = run.options.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {text!r}") from None
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {text!r}")
    return value


def _choice(run: Run, name: str, table) -> str | None:
    text = run.options.get(name)
    if text is None:
        return None
    if text.lower() not in table:
        raise ValueError(f"{name} must be one of {', '.join(table)}, got {text!r}")
    return text.lower()


@lru_cache(maxsize=64)
def _loaded(name: str) -> tuple[Model, tuple[str, ...]]:
    model, notes = load_model(name)
    return model, tuple(notes)


@lru_cache(maxsize=256)
def _formatted(name: str, weights, experts, cache,
               serving: bool) -> tuple[Model, tuple]:
    model, notes = _loaded(name)
    notes = list(notes)
    if serving:
        model, note = served(model)
        notes += [note] if note else []
    try:
        model = apply_formats(model, notes, weights, cache, experts)
    except UsageError as err:
        raise ValueError(str(err).removeprefix("argument --").replace("-", "_", 1))
    return model, tuple(notes)


@lru_cache(maxsize=1024)
def _stages(model: Model, split: Split) -> tuple[Model, ...]:
    return tuple(stage_models(model, split))


def _chip(run: Run) -> Chip:
    name = run.options.get("chip")
    if name is None:
        raise ValueError("chip is empty: a measured run names its chip")
    return chip(name)


def _split(run: Run, model: Model, c: Chip, tp: str, ep: str, dp: int) -> Split:
    network = chip_network(c)
    s = Split(tp=_whole(run, tp, 1), pp=_whole(run, "pp", 1), ep=_whole(run, ep, 1),
              dp=dp, link=chip_link(c), network=network,
              machine=chip_machine(c) if network is not None else None)
    try:
        check_split(model, s)
    except ValueError as err:
        raise ValueError(str(err).removeprefix("argument ")) from None
    return s


def serving_setup(run: Run) -> ServingSetup:
    """The serving run ``run`` as counted, or a ValueError naming the option that
    cannot be taken."""
    weights = _choice(run, "weights", WEIGHT_CHOICES)
    experts = _choice(run, "expert_weights", WEIGHT_CHOICES)
    cache = _choice(run, "kv_dtype", CACHE_FORMATS)
    model, notes = _formatted(run.options["model"], weights, experts, cache, True)
    c = _chip(run)
    # attention data parallel: the split's dp beside its ep, each rank carrying the
    # run's batch (the table's concurrency is a rank's)
    split = _split(run, model, c, "tp", "ep", _whole(run, "attention_dp", 1)
                   * _whole(run, "dp", 1))
    disaggregated = "prefill_tp" in run.options
    prefill = _split(run, model, c, "prefill_tp", "prefill_ep",
                     _whole(run, "prefill_attention_dp", 1)) if disaggregated \
        else split
    engine = _choice(run, "engine", ENGINES)
    prompt, answer = _whole(run, "prompt"), _whole(run, "answer")
    if prompt is None or answer is None:
        raise ValueError("prompt and answer are needed for a serving run's times")
    return ServingSetup(
        model=model, stages=_stages(model, split),
        prefill_stages=_stages(model, prefill),
        chip=c, split=split, prefill_split=prefill, batch=_whole(run, "batch"),
        prompt=prompt, answer=answer, engine=engine,
        engine_version=run.options.get("engine_version") or None,
        disaggregated=disaggregated, notes=notes,
        decode_copies=_whole(run, "decode_workers", 1)
        * _whole(run, "attention_dp", 1) if disaggregated else 1,
        prefill_copies=_whole(run, "prefill_workers", 1)
        * _whole(run, "prefill_attention_dp", 1) if disaggregated else 1,
        unknown=tuple(n for n in WORKER_COUNTS if n not in run.options)
        if disaggregated else ())


def _flag(run: Run, name: str) -> bool:
    text = run.options.get(name, "false").lower()
    if text not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError(f"{name} must be true or false, got {text!r}")
    return text in ("true", "1", "yes")


def _stage_layers(run: Run, model: Model, pp: int) -> tuple[int, ...] | None:
    """The option ``pp_layers``: nothing (the calculator's own cut), ``nanotron`` or
    the layers of each stage, comma-separated."""
    text = run.options.get("pp_layers")
    if not text or pp == 1:
        return None
    if text == "nanotron":
        return cost_balanced_stage_layers(model, pp)
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"pp_layers must be nanotron or whole numbers, got "
                         f"{text!r}") from None


def training_setup(run: Run) -> TrainingSetup:
    """The training run ``run`` as counted, or a ValueError naming the option that
    cannot be taken."""
    weights = _choice(run, "weights", WEIGHT_CHOICES)
    model, notes = _formatted(run.options["model"], weights, None, None, False)
    c = _chip(run)
    devices = _whole(run, "devices", _whole(run, "dp", 1))
    t = Training(
        batch=_whole(run, "batch", 1), seq_len=_whole(run, "seq_len", 2048),
        optimizer=_choice(run, "optimizer", OPTIMIZERS) or "adamw",
        recompute=run.options.get("recompute", "selective"),
        zero_stage=_whole(run, "zero_stage", 0, low=0), devices=devices,
        gradients=(_choice(run, "gradients", GRADIENTS)
                   or ("both" if _flag(run, "fp32_gradients") else "model")),
        loss=_choice(run, "loss", LOSSES) or "torch",
        gathered_inputs=_gathered(run) != "false",
        kv_twice=_flag(run, "kv_twice"),
        gather_buffers=_flag(run, "gather_buffers"),
        ddp_buckets=_flag(run, "ddp_buckets"))
    split = _split(run, model, c, "tp", "ep", devices)
    split = dataclasses.replace(split, micro_batches=_whole(run, "micro_batches", 1),
                                stage_layers=_stage_layers(run, model, split.pp))
    try:
        check_split(model, split)
    except ValueError as err:
        raise ValueError(str(err).removeprefix("argument ")) from None
    if (_gathered(run) == KEPT_WHERE_HELD
            and not training_split(model, c, split, t, 1)["fits"]):
        t = dataclasses.replace(t, gathered_inputs=False)
    return TrainingSetup(model=model, chip=c, training=t, split=split, notes=notes)


def _gathered(run: Run) -> str:
    """The option ``gathered_inputs``: "true", "false" or ``KEPT_WHERE_HELD``."""
    if run.options.get("gathered_inputs", "").lower() == KEPT_WHERE_HELD:
        return KEPT_WHERE_HELD
    return "true" if _flag(run, "gathered_inputs") else "false"
