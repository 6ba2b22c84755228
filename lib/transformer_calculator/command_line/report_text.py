"""The report's dictionary laid out as a readable plain-text table, and the sentences
that state the rules and timing assumptions behind its numbers (the same sentences go
into the dictionary's ``assumptions``, so the JSON carries what the table prints)."""

from __future__ import annotations

from collections.abc import Sequence

from transformer_arithmetic.units import KIB, rates_text, size_text

from ..counting.text import bytes_text, seconds_text, table

__all__ = [
    "format_report",
    "rules",
    "timing_assumptions",
    "table",
    "seconds_text",
    "bytes_text",
    "fit_lines",
]


def _percent(x: float) -> str:
    return f"{x:.0%}" if abs(x * 100 - round(x * 100)) < 1e-9 else f"{x:.1%}"


def timing_assumptions(r: dict) -> list[str]:
    """The timing and memory assumptions behind a report's numbers."""
    a, s = r["accelerator"], r["serving"]
    out = [
        f"memory: {_percent(s['memory_utilization'])} of the chip's memory is the "
        "engine's (vLLM's gpu_memory_utilization); the weights come out of it, and the "
        f"rest holds the cache in blocks of {s['block_size']} tokens a layer, so each "
        "conversation's cache grows a whole block at a time; the engine's own working "
        "memory is not counted",
        "times: the slower of the arithmetic and the reading (a roofline), at "
        f"{_percent(a['flops_efficiency'])} of the chip's peak arithmetic and "
        f"{_percent(a['memory_efficiency'])} of its peak bandwidth"
        + (
            " (the floor: a real chip is slower)"
            if a["flops_efficiency"] == 1 and a["memory_efficiency"] == 1
            else ""
        ),
        "arithmetic: 2 operations a weight a token, 4 a channel for each pair a "
        "head attends to; packed numbers cost their dequantisation "
        "(1 or 2 operations each time one is read); packed matrices multiply at "
        "their format's rate where the chip has it (fp8 at its 8-bit rate, nvfp4 at "
        "its 4-bit rate), everything else at its 16-bit rate; a step gathers one row "
        "of an untied input table a token, with no arithmetic",
        "each conversation's wait is the whole decode step, which grows with the batch",
    ]
    if r["requests"]:
        out.append(
            "a request: the prompt's pass writes the first token (time to first "
            "token); each later token is one decode step of the whole batch, reading "
            "the prompt and the answer so far"
        )
    return out


def rules(r: dict) -> list[str]:
    """The counting rules behind a report's numbers that depend on the model's kind of
    layers."""
    m, out = r["model"], []
    if r["active_parameters"] != r["parameters"]:
        out.append(
            "mixture of experts: one conversation's step multiplies and reads only the "
            f"{m['experts_per_token']} experts (of {m['experts']}) its token is routed "
            "to in each expert layer; a step for a batch of B conversations reads the "
            "experts its tokens are expected to touch if each token picks at random, "
            "E x (1 - (1 - k/E)^B) of E, so a large batch reads them all; memory "
            "always holds every expert"
        )
    if m["windowed_layers"]:
        out.append(
            "windowed layers: a layer that looks at the last W positions (itself "
            "included) keeps W - 1 tokens in its cache, so its cache stops growing at "
            "W - 1 tokens; the longest conversation and what fits follow"
        )
    if m["running_summary_layers"]:
        out.append(
            "running-summary layers: each holds a fixed state, the causal filter's "
            "last "
            "inputs and the summary (in float32, as transformers keeps it), which the "
            "report adds to every conversation's cache and reads at every step"
        )
    return out


ROUTES_TEXT = {
    "layout": "the calculator's own layout of this family (pure Python)",
    "transformers": "the model transformers builds on the meta device",
}
"""How each route counts, as the report's head says it."""


def fit_lines(found: list[dict], context: int) -> list[str]:
    """Which splits would fit, as a short list."""
    if not found:
        return [f"Splits that fit               none within tp 8 x pp up to the "
                f"layers, with room for one conversation of {context:,} tokens"]
    listed = "; ".join(
        (f"tp {x['tp']}" if x["tp"] > 1 or x["pp"] == 1 else "")
        + (" x " if x["tp"] > 1 and x["pp"] > 1 else "")
        + (f"pp {x['pp']}" if x["pp"] > 1 else "")
        + (f" with ep {x['ep']} over dp {x['dp']}" if x["ep"] > 1 else "")
        + f" ({x['chips']:,} chips)"
        for x in found
    )
    return [f"Splits that fit             {listed} (each device with room for one "
            f"conversation of {context:,} tokens)"]


def _star(text: str, row: dict) -> str:
    """``text`` marked with `` *`` when its row is past the model's context limit."""
    return text + (" *" if row["beyond_context_limit"] else "")


def _head(r: dict) -> list[str]:
    m, a = r["model"], r["accelerator"]
    lines = [
        f"Model {m['name']}: {m['family']}, {m['layers']} layers, width "
        f"{m['width']:,}, vocabulary {m['vocab']:,},",
        f"  {'tied' if m['tied_embeddings'] else 'separate'} embeddings, {m['norm']}, "
        f"{m['bytes_per_number']} bytes a number",
    ]
    lines += [f"  {kind}" for kind in m["layer_kinds"]]
    limit = r["context_limit"]
    lines.append(f"  counted by {ROUTES_TEXT[r['route']]}")
    lines.append(
        f"  context limit {limit['tokens']:,} tokens ({limit['source']}); lengths "
        "past it are marked *"
        if limit
        else "  context limit: the file states none"
    )
    lines += [f"  weights: {r['formats']['weights']}", f"  {r['formats']['cache']}"]
    fp8 = (
        f", fp8 {a['fp8_flops_per_s'] / 1e12:.4g} TFLOP/s"
        if a["fp8_flops_per_s"] is not None
        else ""
    )
    lines.append(
        f"Accelerator {a['name']}: {rates_text(a['flops_per_s'], a['bytes_per_s'])}"
        f"{fp8}, {bytes_text(a['memory_bytes'])}"
    )
    lines.append(
        f"  at {_percent(a['flops_efficiency'])} of peak arithmetic and "
        f"{_percent(a['memory_efficiency'])} of peak bandwidth"
    )
    if a["interconnect"]:
        lines.append(
            f"  {a['interconnect']}: {a['interconnect_bytes_per_s'] / 1e9:,.4g} GB/s"
        )
    if a["source"]:
        lines.append(f"  source: {a['source']}")
    return lines + [""]


def _sizes(r: dict) -> list[str]:
    lines = []
    if r["active_parameters"] != r["parameters"]:
        lines += [
            f"Parameters, total           {r['parameters']:,} (every expert: what "
            "memory holds)",
            f"Parameters, active a token  {r['active_parameters']:,} (the experts one "
            "token is routed to and everything else: what one token's step "
            "multiplies, and reads at batch 1)",
        ]
    else:
        lines.append(f"Parameters                  {r['parameters']:,}")
    split = r.get("scope") == "split"
    if not split:
        lines += [
            f"Weights                     {bytes_text(r['weight_bytes'])} "
            f"({r['weight_bytes']:,} bytes)",
            f"Cache per token             {bytes_text(r['kv_bytes_per_token'])} "
            f"({r['kv_bytes_per_token']:,} bytes)",
        ]
    if r["windows_full_at"] is not None:
        lines.append(
            "Cache per token past windows "
            f"{bytes_text(r['kv_bytes_per_token_past_windows'])} "
            f"(after {r['windows_full_at']:,} tokens only the layers without a window "
            "still grow)"
        )
    if r["running_summary_bytes"]:
        lines.append(
            f"Running-summary state       {bytes_text(r['running_summary_bytes'])} "
            f"({r['running_summary_bytes']:,} bytes a conversation, the same at any "
            "length)"
        )
    s = r["serving"]
    if split:
        lines += split_memory_lines(r)
    elif not r["weights_fit"]:
        lines += [
            f"Memory the engine may use   {bytes_text(s['usable_bytes'])}: the weights "
            "do not fit",
            f"Chips for the weights       {r['chips_for_weights']:,} of this kind "
            "(the weights alone, split evenly; each also needs room for its cache)",
            *fit_lines(r["splits_that_fit"], r["splits_context"]),
            "Longest conversation        none: the weights alone do not fit in memory",
        ]
    else:
        lines.append(
            f"Memory the engine may use   {bytes_text(s['usable_bytes'])}, of which "
            f"{bytes_text(s['cache_budget_bytes'])} is left for the cache"
        )
    if r["weights_fit"]:
        if r["longest_conversation"] is None:
            lines.append(
                "Longest conversation        no limit from memory: the cache stops "
                f"growing ({bytes_text(r['lengths'][-1]['cache_bytes'])} a "
                "conversation) and fits"
            )
        else:
            beyond = (
                f"; beyond the {r['context_limit']['tokens']:,} the model was built "
                "for"
                if r["longest_conversation_beyond_context_limit"]
                else ""
            )
            lines.append(
                f"Longest conversation        {r['longest_conversation']:,} tokens "
                f"(alone, in whole cache blocks{beyond})"
            )
    if r["pairs_pass_weights_at"] is None:
        why = (
            "the windows cap the pair work"
            if r["model"]["attention_layers"]
            else "no attention layers"
        )
        lines.append(f"Pair work passes weights    never: {why}")
    else:
        lines.append(
            f"Pair work passes weights at {r['pairs_pass_weights_at']:,} tokens "
            "(over all layers, for a whole sequence)"
        )
    return lines


def _speeds(r: dict) -> list[str]:
    lines = [
        "",
        "One conversation: time per generated token and prompt reading (prefill)",
    ]
    lines += table(
        ["context", "time per token", "tokens/s", "limited by", "prefill of context"],
        [
            [
                _star(f"{row['context']:,}", row),
                seconds_text(row["seconds_per_token"]),
                f"{row['tokens_per_s']:,.1f}",
                row["limited_by"],
                seconds_text(row["prefill_seconds"]),
            ]
            for row in r["decode"]
        ],
    )
    lines += ["", "Longest conversation each of a batch can hold (whole cache blocks)"]
    lines += table(
        ["batch", "longest context"],
        [
            [
                f"{row['batch']:,}",
                "no limit"
                if row["longest_context"] is None
                else f"{row['longest_context']:,}",
            ]
            for row in r["fit_by_batch"]
        ],
    )
    for n in r["batch_contexts"]:
        rows = [row for row in r["throughput"] if row["context"] == n]
        fit = next(x for x in r["lengths"] + [None] if x is None or x["tokens"] == n)
        can = f" ({fit['conversations_that_fit']:,} fit in memory)" if fit else ""
        lines += [
            "",
            _star(
                f"Many conversations at once, each with {n:,} tokens of context{can}",
                {"beyond_context_limit": any(x["beyond_context_limit"] for x in rows)},
            ),
        ]
        lines += table(
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
                    seconds_text(row["wait_seconds"]),
                    row["limited_by"],
                    bytes_text(row["memory_bytes"]),
                    "yes" if row["fits"] else "no",
                ]
                for row in rows
            ],
        )
    if r["requests"]:
        q = r["requests"][0]
        lines += [
            "",
            _star(
                f"A request of {q['prompt']:,} prompt tokens and {q['answer']:,} "
                "answer tokens, alone and in a batch",
                q,
            ),
        ]
        lines += table(
            [
                "batch",
                "first token",
                "between tokens",
                "last step",
                "whole answer",
                "tokens/s",
                "fits",
            ],
            [
                [
                    f"{row['batch']:,}",
                    seconds_text(row["first_token_seconds"]),
                    seconds_text(row["mean_step_seconds"]),
                    seconds_text(row["last_step_seconds"]),
                    seconds_text(row["whole_seconds"]),
                    f"{row['tokens_per_s']:,.1f}",
                    "yes" if row["fits"] else "no",
                ]
                for row in r["requests"]
            ],
        )
    return lines


def format_report(r: dict) -> str:
    """The dictionary from ``report`` as a readable plain-text table."""
    lines = _head(r) + _sizes(r)
    split = r.get("scope") == "split"
    lines += ["", "Cache and memory by conversation length"]
    blocks = "a device, in blocks" if split else "in blocks"
    lines += table(
        ["tokens", "cache", blocks, "conversations that fit"],
        [
            [
                _star(f"{row['tokens']:,}", row),
                bytes_text(row["cache_bytes"]),
                bytes_text(row["cache_bytes_per_device"] if split
                           else row["cache_bytes_in_blocks"]),
                f"{row['conversations_that_fit']:,}",
            ]
            for row in r["lengths"]
        ],
    )
    if r["weights_fit"]:
        lines += _speeds(r)
    elif split:
        lines += [
            "",
            "Speed: none printed, since a device's weights "
            f"({bytes_text(r['weight_bytes_per_device'])}) do not fit in the "
            f"{bytes_text(r['serving']['usable_bytes'])} the engine may use on each",
        ]
    else:
        lines += [
            "",
            "Speed: none printed, since the model cannot run on one such chip "
            f"(its weights need {r['chips_for_weights']:,})",
        ]
    limit = r["context_limit"]
    marked = r["lengths"] + r["decode"] + r["throughput"] + r["requests"]
    if limit and any(row["beyond_context_limit"] for row in marked):
        lines += [
            "",
            f"  * beyond the {limit['tokens']:,} tokens the model was built for: the "
            "arithmetic still holds there, but the model was not trained for it",
        ]
    lines += ["", "Assumptions"]
    lines += [f"  - {note}" for note in r["assumptions"]]
    return "\n".join(lines)


def split_memory_lines(r: dict) -> list[str]:
    """The memory lines of a split's report (``splits.report``): the whole model
    beside a device's share."""
    s, one = r["serving"], r["split"]
    per = r["weight_bytes_per_device"]
    lines = [
        f"Weights                     {bytes_text(r['weight_bytes'])} in all "
        f"({r['weight_bytes']:,} bytes); {bytes_text(per)} on the fullest device",
        f"Cache per token             {bytes_text(r['kv_bytes_per_token'])} in all; "
        f"{bytes_text(one['cache_bytes_per_token_per_device'])} on the fullest device",
    ]
    if not r["weights_fit"]:
        return lines + [
            f"Memory the engine may use   {bytes_text(s['usable_bytes'])} a device: "
            "a device's weights do not fit",
            *fit_lines(r["splits_that_fit"] or [], r["splits_context"]),
            "Longest conversation        none: a device's weights alone do not fit",
        ]
    return lines + [
        f"Memory the engine may use   {bytes_text(s['usable_bytes'])} a device, of "
        f"which {bytes_text(s['cache_budget_bytes'])} is left for the cache on the "
        "fullest"
    ]
