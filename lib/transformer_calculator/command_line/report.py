"""One model on one accelerator: every headline number of the book, in one dictionary.

``report(model, acc)`` gathers the numbers from ``costs`` and ``serving`` (nothing is
computed here that they do not already compute), and ``format_report`` (in
``report_text``) lays the same dictionary out as a readable table. Both the command line
(``python -m transformer_calculator report CONFIG.json``) and the appendix notebook use
them. Times are the book's roofline: the slower of the arithmetic and the reading, at
the
chip's peak rates times the efficiencies given (1 by default, so a real chip is slower,
never faster). Memory is shared as a serving engine shares it (``serving.py``): a
fraction of the chip's memory, the cache in whole blocks of tokens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from transformer_arithmetic import Accelerator
from transformer_arithmetic.checks import checked_whole

from ..counting import costs
from ..service import serving
from ..counting.chips import Chip, derated
from ..anatomy.feedforward import Experts
from ..anatomy.measured import MeasuredExperts
from ..anatomy.mixers import MixerKind
from ..anatomy.model import Model
from .report_text import format_report, rules, timing_assumptions
from ..service.serving import VLLM_DEFAULTS, Request, Serving
from ..splits import splits_that_fit

__all__ = [
    "LENGTHS",
    "BATCHES",
    "BATCH_CONTEXT",
    "Request",
    "report",
    "format_report",
    "rules",
]

LENGTHS = (1_024, 8_192, 32_768, 131_072)
"""Conversation lengths, in tokens, at which the report gives the cache, the fit and the
times unless it is given others."""

BATCHES = (1, 8, 32, 64, 128, 256)
"""Conversations served at once for the throughput table unless it is given others."""

BATCH_CONTEXT = 2_048
"""Tokens already in each conversation for the throughput table unless it is given
lengths."""


def _chip(acc: Accelerator) -> Chip:
    return acc if isinstance(acc, Chip) else derated(acc, 1.0, 1.0)


def report(
    model: Model,
    acc: Accelerator,
    *,
    lengths: Sequence[int] = LENGTHS,
    batches: Sequence[int] = BATCHES,
    batch_contexts: Sequence[int] = (BATCH_CONTEXT,),
    requests: Sequence[Request] = (),
    engine: Serving = VLLM_DEFAULTS,
    notes: Sequence[str] = (),
) -> dict:
    """Every headline number for ``model`` on ``acc``, as plain ints, floats, strings,
    lists and None (bytes in bytes, times in seconds), ready for ``json.dumps``; every
    float is finite.

    A model whose weights do not fit in the memory the engine may use gets no times at
    all (``decode``, ``throughput`` and ``requests`` are empty) and says how many chips
    of this kind its weights need. ``longest_conversation`` is None when the cache stops
    growing and fits however long the conversation gets; ``pairs_pass_weights_at`` is
    None when the pair work never passes the weight work."""
    m, chip = model, _chip(acc)
    lengths = [checked_whole("length", n, minimum=1) for n in lengths]
    batches = [checked_whole("batch", b, minimum=1) for b in batches]
    batch_contexts = [checked_whole("context", n, minimum=1) for n in batch_contexts]
    weights = costs.weight_bytes(m)
    fits = serving.weights_fit(m, chip, engine)
    budget = serving.cache_budget(m, chip, engine) if fits else 0
    fit_rows = [
        {
            "tokens": n,
            "cache_bytes": costs.cache_bytes(m, n),
            "cache_bytes_in_blocks": serving.conversation_bytes(m, n, engine),
            "conversations_that_fit": serving.largest_batch(m, chip, n, engine)
            if fits
            else 0,
        }
        for n in lengths
    ]
    longest = serving.longest_context(m, chip, 1, engine) if fits else 0
    window = m.layout.longest_window
    limit = m.context.tokens if m.context else None
    decode_rows = [_decode_row(m, chip, n) for n in lengths] if fits else []
    throughput_rows = (
        [_batch_row(m, chip, n, b, engine) for n in batch_contexts for b in batches]
        if fits
        else []
    )
    request_rows = (
        [_request_row(m, chip, q, b, engine) for q in requests for b in batches]
        if fits
        else []
    )
    for row in fit_rows:
        row["beyond_context_limit"] = _beyond(row["tokens"], limit)
    for row in decode_rows + throughput_rows:
        row["beyond_context_limit"] = _beyond(row["context"], limit)
    for row in request_rows:
        row["beyond_context_limit"] = _beyond(row["prompt"] + row["answer"], limit)
    result = {
        "model": _model(m),
        "route": m.route,
        "context_limit": (
            {"tokens": limit, "source": m.context.source} if m.context else None
        ),
        "formats": {"weights": m.weights.describe(), "cache": m.cache.describe()},
        "accelerator": _accelerator(chip),
        "serving": {
            "memory_utilization": engine.memory_utilization,
            "block_size": engine.block_size,
            "usable_bytes": serving.usable_bytes(chip, engine),
            "cache_budget_bytes": budget,
        },
        "parameters": costs.parameters(m),
        "active_parameters": costs.active_parameters(m),
        "weight_bytes": weights,
        "weights_fit": fits,
        "chips_for_weights": serving.chips_for_weights(m, chip, engine),
        "splits_that_fit": None
        if fits
        else _fitting(m, chip, engine, max(batch_contexts)),
        "splits_context": max(batch_contexts),
        "kv_bytes_per_token": costs.cache_bytes_per_token(m),
        "kv_bytes_per_token_past_windows": costs.cache_bytes_per_token_past_windows(m),
        "windows_full_at": window if window else None,
        "running_summary_bytes": costs.state_bytes(m),
        "longest_conversation": longest,
        "longest_conversation_beyond_context_limit": _beyond(longest, limit),
        "lengths": fit_rows,
        "decode": decode_rows,
        "batch_contexts": batch_contexts,
        "fit_by_batch": [
            {"batch": b, "longest_context": serving.longest_context(m, chip, b, engine)}
            for b in batches
        ]
        if fits
        else [],
        "throughput": throughput_rows,
        "requests": request_rows,
        "pairs_pass_weights_at": costs.pairs_pass_weights_at(m),
        "notes": list(notes),
    }
    result["assumptions"] = list(notes) + timing_assumptions(result) + rules(result)
    _check_finite(result)
    return result


def _fitting(m: Model, chip: Chip, engine: Serving, context: int) -> list[dict]:
    """The smallest splits that fit, or none when the model cannot be split (counted
    by the transformers route, or a kind of layer the split does not cut)."""
    if m.route == "transformers":
        return []
    return splits_that_fit(m, chip, engine, context)


def _beyond(tokens: int | None, limit: int | None) -> bool:
    """True when ``tokens`` is past the context the model was built for."""
    return limit is not None and tokens is not None and tokens > limit


def _accelerator(chip: Chip) -> dict:
    return {
        "name": chip.name,
        "key": chip.key or None,
        "flops_per_s": float(chip.flops_per_s),
        "fp8_flops_per_s": None
        if chip.fp8_flops_per_s is None
        else float(chip.fp8_flops_per_s),
        "bytes_per_s": float(chip.bytes_per_s),
        "memory_bytes": int(chip.memory_bytes),
        "flops_efficiency": chip.flops_efficiency,
        "memory_efficiency": chip.memory_efficiency,
        "interconnect": chip.interconnect or None,
        "interconnect_bytes_per_s": chip.interconnect_bytes_per_s,
        "source": chip.source or None,
        "source_note": chip.note or None,
    }


def _decode_row(m: Model, chip: Chip, n: int) -> dict:
    step = costs.decode_step_time(m, chip, n)
    return {
        "context": n,
        "seconds_per_token": step,
        "tokens_per_s": 1 / step,
        "arithmetic_seconds": costs.arithmetic_time(m, chip, n),
        "reading_seconds": costs.reading_time(m, chip, n),
        "limited_by": costs.limited_by(m, chip, n),
        "prefill_seconds": costs.prefill_time(m, chip, n),
    }


def _batch_row(m: Model, chip: Chip, n: int, b: int, engine: Serving) -> dict:
    return {
        "context": n,
        "batch": b,
        "tokens_per_s": costs.throughput(m, chip, n, b),
        "wait_seconds": costs.decode_step_time(m, chip, n, b),
        "limited_by": costs.limited_by(m, chip, n, b),
        "memory_bytes": costs.weight_bytes(m)
        + b * serving.conversation_bytes(m, n, engine),
        "fits": b <= serving.largest_batch(m, chip, n, engine),
    }


def _request_row(m: Model, chip: Chip, q: Request, b: int, engine: Serving) -> dict:
    t = serving.request_times(m, chip, q.prompt, q.answer, b)
    tokens = q.prompt + q.answer
    return {
        "batch": b,
        "prompt": q.prompt,
        "answer": q.answer,
        "first_token_seconds": t.first_token,
        "first_step_seconds": t.first_step,
        "last_step_seconds": t.last_step,
        "mean_step_seconds": t.mean_step,
        "whole_seconds": t.whole,
        "tokens_per_s": b * q.answer / t.whole,
        "fits": b <= serving.largest_batch(m, chip, tokens, engine),
    }


def _model(m: Model) -> dict:
    """The model's description: a few sizes, its family and the kinds of its layers."""
    layout = m.layout
    experts = [
        b.ffn for b in layout.blocks if isinstance(b.ffn, (Experts, MeasuredExperts))
    ]
    attention = layout.count(MixerKind.ATTENTION) + layout.count(
        MixerKind.LATENT_ATTENTION
    )
    return {
        **m.summary(),
        "family": layout.family,
        "layer_kinds": layout.describe(),
        "attention_layers": attention,
        "windowed_layers": sum(1 for b in layout.blocks if b.windowed),
        "running_summary_layers": layout.count(MixerKind.RUNNING_SUMMARY),
        "expert_layers": len(experts),
        "experts": experts[0].count if experts else None,
        "experts_per_token": experts[0].per_token if experts else None,
    }


def _check_finite(value: object, where: str = "report") -> None:
    """Raise ValueError if any float in ``value`` is not finite (JSON has no NaN or
    infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(
            f"{where} is not a finite number ({value!r}): the "
            "accelerator's numbers are too extreme"
        )
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, f"{where}[{i}]")
