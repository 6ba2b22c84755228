"""A split's figures (``serving_split``, ``training_split``) as the plain-text lines the
``report`` and ``train`` commands print."""

from __future__ import annotations

from ..counting.text import bytes_text, seconds_text, table

__all__ = ["split_head", "serving_split_head", "serving_split_times",
           "training_split_lines"]


def _link(name: str | None, rate: float | None, latency: float | None) -> str:
    if not name:
        return "no link"
    return f"{name} ({rate / 1e9:,.4g} GB/s each way, {latency * 1e6:.2g} us a step)"


def split_head(s: dict, training: bool = True) -> list[str]:
    """The groups, the schedule and the links, in a few lines."""
    cp = f" x cp {s['cp']} ({s['cp_kind']})" if s["cp"] > 1 else ""
    ep = f", ep {s['ep']}" if s["ep"] > 1 else ""
    copies = (f" with {s['redundant_experts']} redundant experts"
              if s["redundant_experts"] else "")
    lines = [f"Split over {s['devices']:,} devices: tp {s['tp']}{cp} x pp {s['pp']} x "
             f"dp {s['dp']}{ep}{copies}"]
    inside = _link(s["interconnect"], s["link_bytes_per_s_each_way"],
                   s["link_step_latency_s"])
    if s["network"] and s["machine_devices"]:
        lines.append(f"  links: {inside} inside a machine of "
                     f"{s['machine_devices']}; between machines "
                     + _link(s["network"], s["network_bytes_per_s_each_way"],
                             s["network_step_latency_s"]) + " a device")
    else:
        lines.append(f"  link: {inside} for every group")
    how = [("sequence parallel" if s["sequence_parallel"] else "no sequence "
            "parallelism") if s["tp"] > 1 and training else None,
           (f"interleaved 1F1B over {s['virtual_stages']} virtual stages"
            if s["virtual_stages"] > 1 else "1F1B") if s["pp"] > 1 else None,
           f"{s['micro_batches']} micro-batches" if s["micro_batches"] > 1 else None,
           "communication hidden under the arithmetic where a schedule can hide it"
           if s["overlap"] else "communication added to the arithmetic"]
    lines.append("  " + "; ".join(h for h in how if h))
    return lines


def _stage_name(row: dict, stages: int) -> str:
    if stages == 1:
        return "every device"
    ends = {0: " (input table)", stages - 1: " (output head)"}
    return f"stage {row['stage'] + 1}{ends.get(row['stage'], '')}"


def serving_split_head(r: dict) -> list[str]:
    """The serving split: its groups and links, its notes, each stage's device."""
    rows = r["devices"]
    n = len(rows)
    lines = split_head(r["split"], training=False)
    lines += [f"  - {note}" for note in r["notes"]]
    lines += table(
        ["device", "layers", "weights", "one conversation", "conversations that fit"],
        [[_stage_name(x, n), f"{x['layers']}", bytes_text(x["weight_bytes"]),
          bytes_text(x["cache_bytes_per_conversation"]),
          f"{x['conversations_that_fit']:,}"] for x in rows],
    )
    usable = bytes_text(r["usable_bytes_per_device"])
    fullest = "" if n == 1 else (
        f" (the fullest: {_stage_name(rows[r['busiest_stage']], n)})")
    lines.append(f"  every figure below is the split's: the memory of a device"
                 f"{fullest}, {usable} usable on each, and the times of the whole "
                 "split")
    return lines + [""]


def serving_split_times(r: dict) -> list[str]:
    """The split's decode steps and prompt passes by cause."""
    if not r["weights_fit"]:
        return []
    added = "communication " + ("partly hidden" if r["split"]["overlap"] else "added")
    head = ["context", "batch", "arithmetic or reading", "all-reduces",
            "all-to-alls", "stage sends", "step", "tokens/s"]
    seen, body = set(), []
    for x in r["decode"] + r["throughput"]:
        if (x["context"], x["batch"]) in seen:
            continue
        seen.add((x["context"], x["batch"]))
        body.append([f"{x['context']:,}", f"{x['batch']:,}",
                     seconds_text(x["arithmetic_or_reading_seconds"]),
                     seconds_text(x["tensor_parallel_all_reduces_seconds"]),
                     seconds_text(x["expert_all_to_alls_seconds"]),
                     seconds_text(x["pipeline_sends_seconds"]),
                     seconds_text(x["seconds_per_token"]),
                     f"{x['tokens_per_s']:,.0f}"])
    lines = ["", f"Split: one decode step by cause ({added})"] + table(head, body)
    pre = [[f"{x['context']:,}", seconds_text(x["arithmetic_or_reading_seconds"]),
            seconds_text(x["tensor_parallel_all_reduces_seconds"]),
            seconds_text(x["expert_all_to_alls_seconds"]),
            seconds_text(x["pipeline_sends_seconds"]), seconds_text(x["seconds"])]
           for x in r["prefill"]]
    lines += ["", f"Split: one prompt's pass (prefill) by cause ({added})"]
    return lines + table(["prompt", "arithmetic or reading", "all-reduces",
                          "all-to-alls", "stage sends", "pass"], pre)


def training_split_lines(r: dict) -> list[str]:
    """The training split: its groups and links, each stage's device memory and the
    step by cause."""
    rows = r["devices"]
    n = len(rows)
    lines = [""] + split_head(r["split"]) + [f"  - {note}" for note in r["notes"]]
    lines += table(
        ["device", "layers", "micro-batches held", "memory"],
        [[_stage_name(x, n), f"{x['layers']}", f"{x['micro_batches_held']:g}",
          bytes_text(x["memory_bytes"])] for x in rows],
    )
    lines.append(f"  largest device: {_stage_name(rows[r['busiest_stage']], n)} "
                 "(its parts are the memory table above)")
    causes = [["arithmetic and reading", seconds_text(r["arithmetic_seconds"]), ""],
              ["pipeline bubble", seconds_text(r["bubble_seconds"]), ""]]
    exposed = r["exposed_communication_seconds"]
    for k, v in r["communication_seconds"].items():
        if v:
            causes.append([k, seconds_text(exposed.get(k, v)),
                           seconds_text(v) if exposed.get(k, v) != v else ""])
    causes.append(["optimizer step", seconds_text(r["optimizer_seconds"]), ""])
    causes.append(["step", seconds_text(r["step_seconds"]), ""])
    how = ("collectives hidden where they can be" if r["split"]["overlap"]
           else "communication added")
    slowest = r["slowest_stage"] + 1
    title = f"Split: one step on the slowest stage, stage {slowest} ({how})"
    lines += ["", title] + table(["cause", "seconds", "before hiding"], causes)
    lines.append(f"  floor (every collective hidden where a schedule can hide it): "
                 f"{seconds_text(r['floor_seconds'])}")
    return lines
