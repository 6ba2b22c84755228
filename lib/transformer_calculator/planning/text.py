"""The ranked plans as the ``plan`` command prints them: the top few, each with its
memory a device, its time by cause (floors), and why it ranks where it does."""

from __future__ import annotations

from ..counting.text import bytes_text, seconds_text
from ..estimate.report import estimate_text

__all__ = ["why_training", "why_serving", "training_lines", "serving_lines"]


def _shape(c: dict) -> str:
    cp = f" x cp {c['cp']}" if c.get("cp", 1) > 1 else ""
    ep = f", ep {c['ep']}" if c["ep"] > 1 else ""
    return f"tp {c['tp']}{cp} x pp {c['pp']} x dp {c['dp']}{ep}"


def why_training(c: dict, best: dict) -> str:
    """Why ``c`` ranks below ``best`` (or that it is the best): the cause of its step
    that differs most."""
    step, top = c["step_seconds_floor"], best["step_seconds_floor"]
    causes = c["time_by_cause_seconds"]
    if c is best:
        main = max(causes, key=causes.get)
        return (f"the fastest step found; {causes[main] / step:.0%} of it is "
                f"{main}")
    diff = {k: v - best["time_by_cause_seconds"][k] for k, v in causes.items()}
    worst = max(diff, key=diff.get)
    if step <= top:
        return (f"as fast as #1, with {bytes_text(c['memory_bytes'])} a device against "
                f"{bytes_text(best['memory_bytes'])}")
    return (f"its step is {step / top - 1:.1%} longer than #1's, most of it "
            f"{worst} ({seconds_text(diff[worst])} more)")


_RECOMPUTE = {"none": "no recomputation", "selective": "selective recomputation",
              "full": "full recomputation"}


def _dollars(x: float) -> str:
    return f"${x:,.0f}" if x >= 100 else f"${x:.3g}"


def _money(c: dict, what: str) -> list[str]:
    m = c.get("per_million_tokens")
    if not m:
        return []
    out = []
    if m["dollars_at_least"] is not None:
        out.append(f"at least {_dollars(m['dollars_at_least'])} a million {what}")
    if m["kwh_at_board_power"] is not None:
        pue = f" x PUE {m['pue']:g}" if m["pue"] != 1 else ""
        out.append(f"{m['kwh_at_board_power']:,.3g} kWh a million {what} at the "
                   f"boards' full {m['board_power_w']:,.0f} W{pue}")
    return ["    " + "; ".join(out)]


def _expected(c: dict) -> list[str]:
    """The plan's estimate beside its floor, as ``train`` words it (none where the
    estimate cannot price the step)."""
    e = c.get("tokens_per_s_per_chip_estimate")
    if not e:
        return ["    tokens a second a chip on a real run: no estimate for this step's "
                "formats"]
    return ["    " + estimate_text(e, "tokens a second a chip, estimated: ")]


def training_lines(result: dict, top: int) -> list[str]:
    """The top ``top`` training plans, numbered."""
    plans = result["plans"]
    lines = []
    for i, c in enumerate(plans[:top], 1):
        t = c["time_by_cause_seconds"]
        causes = ", ".join(f"{k} {seconds_text(v)}" for k, v in t.items() if v)
        v = f", {c['virtual_stages']} virtual stages" if c["virtual_stages"] > 1 else ""
        lines += [
            f"#{i}  {_shape(c)}{v}, {c['micro_batches']:,} micro-batches, ZeRO "
            f"{c['zero_stage']}, {_RECOMPUTE[c['recompute']]}, {c['weights']} weights",
            f"    memory a device {bytes_text(c['memory_bytes'])}; step at least "
            f"{seconds_text(c['step_seconds_floor'])} (floor): {causes}",
            f"    at most {c['tokens_per_s_per_chip']:,.0f} tokens a second a chip, "
            f"model-flops utilisation at most "
            f"{c['model_flops_utilisation_at_floor']:.1%}; the run at least "
            f"{c['training_seconds_floor'] / 86400:,.1f} days, "
            f"{c['chip_hours_floor']:,.0f} chip-hours",
            *_expected(c),
            *_money(c, "tokens"),
            f"    why: {c['why']}",
        ]
    return lines


def why_serving(c: dict, best: dict) -> str:
    """Why a serving plan ranks where it does, against ``best``."""
    if c is best:
        return ("the most requests a second a chip within the targets"
                + ("" if c["meets_rate"] else "; yet the chips serve less than the "
                   "rate asked"))
    if c["meets_rate"] != best["meets_rate"]:
        return "its units on these chips serve less than the rate asked"
    ratio = c["requests_per_s_per_chip"] / best["requests_per_s_per_chip"]
    if ratio >= 1:
        return (f"as many requests a second a chip as #1, with "
                f"{bytes_text(c['memory_bytes_per_device'])} a device")
    return (f"{1 - ratio:.0%} fewer requests a second a chip than #1: "
            + _serving_cause(c, best))


def _serving_cause(c: dict, best: dict) -> str:
    if c["kind"] != best["kind"]:
        return (f"{c['kind']} (#1 is {best['kind']}: a prefill unit and a decode "
                "unit each take the batch that suits its phase)"
                if best["kind"] == "disaggregated" else f"{c['kind']}")
    if c["tpot_seconds_floor"] > best["tpot_seconds_floor"]:
        return "its steps between tokens are longer a request"
    return "its prompts' pass takes longer a request"


def _many(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("s" if n != 1 else "")


def _unit(c: dict) -> str:
    n = c["devices"]
    chips = _many(n, "chip")
    return f"{_shape(c)} ({chips}), batch {c['batch']:,} a copy"


def serving_lines(result: dict, top: int) -> list[str]:
    """The top ``top`` serving plans, numbered."""
    lines = []
    for i, c in enumerate(result["plans"][:top], 1):
        if c["kind"] == "aggregated":
            head = f"#{i}  aggregated: {_many(c['units'], 'unit')} of {_unit(c)}"
        else:
            u = c["units"]
            head = (f"#{i}  disaggregated: {_many(u['prefill'], 'prefill unit')} of "
                    f"{_unit(c['prefill'])} and {_many(u['decode'], 'decode unit')} of "
                    f"{_unit(c['decode'])} (the rates balance at "
                    f"{c['prefill_to_decode_chips']:.2f} prefill chips to 1 decode)")
        lines += [
            head + f", {c['weights']} weights",
            f"    memory a device {bytes_text(c['memory_bytes_per_device'])} (weights "
            f"and caches, the fullest device); time to first token at least "
            f"{seconds_text(c['ttft_seconds_floor'])}, " + (
                f"between tokens at least {seconds_text(c['tpot_seconds_floor'])}"
                if c["tpot_seconds_floor"] else "no step between tokens")
            + " (floors)",
            "    a decode step at the answer's end: " + ", ".join(
                f"{k} {seconds_text(v)}" for k, v in
                c["last_step_by_cause_seconds"].items() if v)
            + " (the step waits on the slower of the first two)",
            f"    at most {c['requests_per_s_per_chip']:,.3g} requests a second a chip "
            f"({c['answer_tokens_per_s_per_chip']:,.0f} answer tokens); these chips "
            f"serve at most {c['requests_per_s']:,.3g} a second"
            + ("" if c["meets_rate"] else ", less than the rate asked"),
            *_money(c, "answer tokens"),
            f"    why: {c['why']}",
        ]
    return lines
