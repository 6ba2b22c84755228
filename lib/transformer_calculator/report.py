"""One model on one accelerator: every headline number of the book, in one dictionary.

``report(model, acc)`` gathers the numbers from ``costs`` (nothing is computed here that
``costs`` does not already compute), and ``format_report`` lays the same dictionary out
as a readable table. Both the command line (``python -m transformer_calculator report
CONFIG.json``) and the appendix notebook use them. Times are the book's roofline: the
slower of the arithmetic and the reading, so a real chip is slower, never faster.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from transformer_arithmetic import Accelerator
from transformer_arithmetic.units import KIB, rates_text, size_text

from . import costs
from .feedforward import Experts
from .measured import MeasuredExperts
from .model import Model
from .mixers import MixerKind

__all__ = ["LENGTHS", "BATCHES", "BATCH_CONTEXT", "report", "format_report", "rules"]

LENGTHS = (1_024, 8_192, 32_768, 131_072)
"""Conversation lengths, in tokens, at which the report gives the cache, the fit and the
times."""

BATCHES = (1, 8, 32, 64, 128, 256)
"""Conversations served at once for the throughput table."""

BATCH_CONTEXT = 2_048
"""Tokens already in each conversation for the throughput table."""


def report(
    model: Model,
    acc: Accelerator,
    *,
    lengths: Sequence[int] = LENGTHS,
    batches: Sequence[int] = BATCHES,
    batch_context: int = BATCH_CONTEXT,
    notes: Sequence[str] = (),
) -> dict:
    """Every headline number for ``model`` on ``acc``, as plain ints, floats, strings,
    lists and None (bytes in bytes, times in seconds), ready for ``json.dumps``; every
    float is finite.

    ``longest_conversation`` is None when the cache stops growing (every layer windowed
    or a running summary) and fits however long the conversation gets;
    ``pairs_pass_weights_at`` is None when the pair work never passes the weight
    work."""
    m = model
    weights = costs.weight_bytes(m)
    fits = weights <= acc.memory_bytes
    longest = costs.longest_conversation(m, acc) if fits else 0
    fit_rows = [
        {
            "tokens": n,
            "cache_bytes": costs.cache_bytes(m, n),
            "conversations_that_fit": costs.conversations_that_fit(m, acc, n)
            if fits
            else 0,
        }
        for n in lengths
    ]
    time_rows = []
    for n in lengths:
        step = costs.decode_step_time(m, acc, n)
        time_rows.append(
            {
                "context": n,
                "seconds_per_token": step,
                "tokens_per_s": 1 / step,
                "arithmetic_seconds": costs.arithmetic_time(m, acc, n),
                "reading_seconds": costs.reading_time(m, acc, n),
                "limited_by": costs.limited_by(m, acc, n),
                "prefill_seconds": costs.prefill_time(m, acc, n),
            }
        )
    batch_fit = costs.conversations_that_fit(m, acc, batch_context) if fits else 0
    batch_rows = [
        {
            "batch": b,
            "tokens_per_s": costs.throughput(m, acc, batch_context, b),
            "wait_seconds": costs.decode_step_time(m, acc, batch_context, b),
            "limited_by": costs.limited_by(m, acc, batch_context, b),
            "memory_bytes": costs.serving_bytes(m, batch_context, b),
            "fits": b <= batch_fit,
        }
        for b in batches
    ]
    window = m.layout.longest_window
    limit = m.context.tokens if m.context else None
    for row in fit_rows + time_rows:
        tokens = row.get("tokens", row.get("context"))
        row["beyond_context_limit"] = _beyond(tokens, limit)
    for row in batch_rows:
        row["beyond_context_limit"] = _beyond(batch_context, limit)
    result = {
        "model": _model(m),
        "route": m.route,
        "context_limit": (
            {"tokens": limit, "source": m.context.source} if m.context else None
        ),
        "accelerator": {
            "name": acc.name,
            "flops_per_s": float(acc.flops_per_s),
            "bytes_per_s": float(acc.bytes_per_s),
            "memory_bytes": int(acc.memory_bytes),
        },
        "parameters": costs.parameters(m),
        "active_parameters": costs.active_parameters(m),
        "weight_bytes": weights,
        "weights_fit": fits,
        "kv_bytes_per_token": costs.cache_bytes_per_token(m),
        "kv_bytes_per_token_past_windows": costs.cache_bytes_per_token_past_windows(m),
        "windows_full_at": window if window else None,
        "running_summary_bytes": costs.state_bytes(m),
        "longest_conversation": longest,
        "longest_conversation_beyond_context_limit": _beyond(longest, limit),
        "lengths": fit_rows,
        "decode": time_rows,
        "batch_context": batch_context,
        "conversations_that_fit_at_batch_context": batch_fit,
        "throughput": batch_rows,
        "pairs_pass_weights_at": costs.pairs_pass_weights_at(m),
        "notes": list(notes),
    }
    _check_finite(result)
    return result


def _beyond(tokens: int | None, limit: int | None) -> bool:
    """True when ``tokens`` is past the context the model was built for."""
    return limit is not None and tokens is not None and tokens > limit


_ROUTES = {
    "layout": "the calculator's own layout of this family (pure Python)",
    "transformers": "the model transformers builds on the meta device",
}


def _star(text: str, row: dict) -> str:
    return text + (" *" if row["beyond_context_limit"] else "")


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


def _bytes(n: float) -> str:
    return size_text(n, ",.2f", "B") if n >= KIB else f"{n:,.0f} B"


def _seconds(s: float) -> str:
    if s >= 1:
        return f"{s:,.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.2f} ms"
    return f"{s * 1e6:,.1f} us"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    out = ["  " + line, "  " + "  ".join("-" * w for w in widths)]
    out += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return out


def format_report(r: dict) -> str:
    """The dictionary from ``report`` as a readable plain-text table."""
    m, a = r["model"], r["accelerator"]
    lines = [
        f"Model {m['name']}: {m['family']}, {m['layers']} layers, width "
        f"{m['width']:,}, "
        f"vocabulary {m['vocab']:,},",
        f"  {'tied' if m['tied_embeddings'] else 'separate'} embeddings, "
        f"{m['norm']}, "
        f"{m['bytes_per_number']} bytes a number",
    ]
    lines += [f"  {kind}" for kind in m["layer_kinds"]]
    limit = r["context_limit"]
    lines.append(f"  counted by {_ROUTES[r['route']]}")
    lines.append(
        f"  context limit {limit['tokens']:,} tokens ({limit['source']}); lengths "
        "past it are marked *"
        if limit
        else "  context limit: the file states none"
    )
    lines += [
        f"Accelerator {a['name']}: {rates_text(a['flops_per_s'], a['bytes_per_s'])}, "
        f"{_bytes(a['memory_bytes'])}",
        "",
    ]
    if r["active_parameters"] != r["parameters"]:
        lines += [
            f"Parameters, total           {r['parameters']:,} (every expert: what "
            "memory holds)",
            f"Parameters, active a token  {r['active_parameters']:,} (the experts one "
            "token is routed to and "
            "everything else: what one token's step multiplies, and reads at batch 1)",
        ]
    else:
        lines.append(f"Parameters                  {r['parameters']:,}")
    lines += [
        f"Weights                     {_bytes(r['weight_bytes'])} "
        f"({r['weight_bytes']:,} bytes)",
        f"Cache per token             {_bytes(r['kv_bytes_per_token'])} "
        f"({r['kv_bytes_per_token']:,} bytes)",
    ]
    if r["windows_full_at"] is not None:
        lines.append(
            "Cache per token past windows "
            f"{_bytes(r['kv_bytes_per_token_past_windows'])} "
            f"(after {r['windows_full_at']:,} tokens only the layers without "
            "a window still grow)"
        )
    if r["running_summary_bytes"]:
        lines.append(
            "Running-summary state       "
            f"{_bytes(r['running_summary_bytes'])} "
            f"({r['running_summary_bytes']:,} bytes a conversation, the same "
            "at any length)"
        )
    if not r["weights_fit"]:
        lines.append(
            "Longest conversation        none: the weights alone do not fit in memory"
        )
    elif r["longest_conversation"] is None:
        lines.append(
            "Longest conversation        no limit from memory: the cache "
            "stops growing "
            f"({_bytes(r['lengths'][-1]['cache_bytes'])} a conversation) and "
            "fits"
        )
    else:
        beyond = (
            f"; beyond the {limit['tokens']:,} the model was built for"
            if r["longest_conversation_beyond_context_limit"]
            else ""
        )
        lines.append(
            f"Longest conversation        {r['longest_conversation']:,} "
            "tokens "
            f"(cache in the memory left after the weights{beyond})"
        )
    if r["pairs_pass_weights_at"] is None:
        why = (
            "the windows cap the pair work"
            if m["attention_layers"]
            else "no attention layers"
        )
        lines.append(f"Pair work passes weights    never: {why}")
    else:
        lines.append(
            f"Pair work passes weights at {r['pairs_pass_weights_at']:,} "
            "tokens "
            "(over all layers, for a whole sequence)"
        )
    lines += ["", "Cache and memory by conversation length"]
    lines += _table(
        ["tokens", "cache", "conversations that fit"],
        [
            [
                _star(f"{row['tokens']:,}", row),
                _bytes(row["cache_bytes"]),
                f"{row['conversations_that_fit']:,}",
            ]
            for row in r["lengths"]
        ],
    )
    lines += [
        "",
        "One conversation: time per generated token and prompt reading (prefill)",
    ]
    lines += _table(
        ["context", "time per token", "tokens/s", "limited by", "prefill of context"],
        [
            [
                _star(f"{row['context']:,}", row),
                _seconds(row["seconds_per_token"]),
                f"{row['tokens_per_s']:,.1f}",
                row["limited_by"],
                _seconds(row["prefill_seconds"]),
            ]
            for row in r["decode"]
        ],
    )
    lines += [
        "",
        f"Many conversations at once, each with {r['batch_context']:,} tokens of "
        "context "
        f"({r['conversations_that_fit_at_batch_context']:,} fit in memory)",
    ]
    lines += _table(
        [
            "batch",
            "tokens/s (machine)",
            "each one's wait",
            "limited by",
            "memory",
            "fits",
        ],
        [
            [
                f"{row['batch']:,}",
                f"{row['tokens_per_s']:,.0f}",
                _seconds(row["wait_seconds"]),
                row["limited_by"],
                _bytes(row["memory_bytes"]),
                "yes" if row["fits"] else "no",
            ]
            for row in r["throughput"]
        ],
    )
    if limit and any(row["beyond_context_limit"] for row in r["lengths"]):
        lines += [
            "",
            f"  * beyond the {limit['tokens']:,} tokens the model was built for: the "
            "arithmetic still holds there, but the model was not trained for it",
        ]
    lines += ["", "Assumptions"]
    lines += [f"  - {note}" for note in r["notes"]]
    lines += [
        "  - times: the slower of the arithmetic and the reading (a roofline); "
        "real chips are slower",
        "  - each conversation's wait is the whole decode step, which grows with "
        "the batch",
    ]
    lines += [f"  - {rule}" for rule in rules(r)]
    return "\n".join(lines)


def rules(r: dict) -> list[str]:
    """The counting rules behind a report's numbers that depend on the model's kind of
    layers."""
    m, out = r["model"], []
    if r["active_parameters"] != r["parameters"]:
        out.append(
            "mixture of experts: one conversation's step multiplies and reads "
            "only the "
            f"{m['experts_per_token']} experts (of {m['experts']}) its token is "
            "routed to in each "
            "expert layer; a step for a batch of B conversations reads the "
            "experts its tokens are "
            "expected to touch if each token picks at random, E x (1 - (1 - "
            "k/E)^B) of E, so a large "
            "batch reads them all; memory always holds every expert"
        )
    if m["windowed_layers"]:
        out.append(
            "windowed layers: a layer that looks at the last W positions "
            "(itself included) keeps "
            "W - 1 tokens in its cache, so its cache stops growing at W - 1 "
            "tokens; the longest "
            "conversation and what fits follow"
        )
    if m["running_summary_layers"]:
        out.append(
            "running-summary layers: each holds a fixed state, the causal "
            "filter's last inputs and the "
            "summary (in float32, as transformers keeps it), which the report "
            "adds to every "
            "conversation's cache and reads at every step"
        )
    return out
