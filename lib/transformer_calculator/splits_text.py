"""The split's figures (``split_costs.py``) as the plain-text lines the ``report`` and
``train`` commands print."""

from __future__ import annotations

from .report_text import bytes_text, seconds_text, table

__all__ = ["split_head", "serving_split_lines", "training_split_lines"]


def split_head(s: dict) -> str:
    """One line: the groups, the devices and the link."""
    link = (
        f"{s['interconnect']} ({s['link_bytes_per_s_each_way'] / 1e9:,.4g} GB/s each "
        f"way, {s['link_step_latency_s'] * 1e6:.2g} us a step)"
        if s["interconnect"]
        else "no link"
    )
    return (
        f"Split over {s['devices']:,} devices: tp {s['tp']} x pp {s['pp']} x dp "
        f"{s['dp']}, ep {s['ep']}; {link}"
    )


def _stage_name(row: dict, stages: int) -> str:
    if stages == 1:
        return "every device"
    ends = {0: " (input table)", stages - 1: " (output table)"}
    return f"stage {row['stage'] + 1}{ends.get(row['stage'], '')}"


def serving_split_lines(r: dict) -> list[str]:
    """The serving split: memory of each stage's device, then the times."""
    s, rows = r["split"], r["devices"]
    n = len(rows)
    lines = ["", split_head(s)]
    lines += [f"  - {note}" for note in r["notes"]]
    lines += table(
        ["device", "layers", "weights", f"cache of {r['conversation_tokens']:,} tokens",
         "such conversations that fit"],
        [
            [
                _stage_name(x, n),
                f"{x['layers']}",
                bytes_text(x["weight_bytes"]),
                bytes_text(x["cache_bytes_per_conversation"]),
                f"{x['conversations_that_fit']:,}",
            ]
            for x in rows
        ],
    )
    usable = bytes_text(r["usable_bytes_per_device"])
    if not r["weights_fit"]:
        return lines + [f"  the weights of a device do not fit in the {usable} the "
                        "engine may use on each: no speed printed"]
    busiest = _stage_name(rows[r["busiest_stage"]], n)
    lines.append(f"  largest device: {busiest}; {usable} usable on each")
    head = ["context", "batch", "arithmetic or reading", "all-reduces",
            "all-to-alls", "stage sends", "a token", "tokens/s", "fits"]
    body = [
        [
            f"{x['context']:,}",
            f"{x['batch']:,}",
            seconds_text(x["arithmetic_or_reading_seconds"]),
            seconds_text(x["tensor_parallel_all_reduces_seconds"]),
            seconds_text(x["expert_all_to_alls_seconds"]),
            seconds_text(x["pipeline_sends_seconds"]),
            seconds_text(x["seconds_per_token"]),
            f"{x['tokens_per_s']:,.0f}",
            "yes" if x["fits"] else "no",
        ]
        for x in _unique(r["decode"] + r["throughput"])
    ]
    return lines + ["", "Split: time of one decode step (communication added)"] + table(
        head, body
    )


def _unique(rows: list[dict]) -> list[dict]:
    seen, out = set(), []
    for x in rows:
        if (x["context"], x["batch"]) not in seen:
            seen.add((x["context"], x["batch"]))
            out.append(x)
    return out


def training_split_lines(r: dict) -> list[str]:
    """The training split: each stage's device memory and the step by cause."""
    s, rows = r["split"], r["devices"]
    n = len(rows)
    lines = ["", split_head(s)]
    lines += [f"  - {note}" for note in r["notes"]]
    lines += table(
        ["device", "layers", "micro-batches held", "memory"],
        [
            [_stage_name(x, n), f"{x['layers']}", f"{x['micro_batches_held']}",
             bytes_text(x["memory_bytes"])]
            for x in rows
        ],
    )
    lines.append(f"  largest device: {_stage_name(rows[r['busiest_stage']], n)} "
                 "(its parts are the memory table above)")
    causes = [["arithmetic and reading", seconds_text(r["arithmetic_seconds"])],
              ["pipeline bubble", seconds_text(r["bubble_seconds"])]]
    causes += [[k, seconds_text(v)] for k, v in r["communication_seconds"].items()]
    causes.append(["step", seconds_text(r["step_seconds"])])
    title = "Split: one step on the slowest stage (communication added)"
    return lines + ["", title] + table(["cause", "seconds"], causes)
