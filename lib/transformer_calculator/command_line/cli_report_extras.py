"""The report's money, energy and speculative decoding: ``--price`` (dollars a
chip-hour) and ``--pue`` give each batch row's dollars and kilowatt-hours a million
tokens written (``running_costs``); ``--draft CONFIG --draft-tokens k --acceptance a``
prices each batch row with a draft (``speculative``) and says when it pays."""

from __future__ import annotations

from ..reading.inputs import UsageError
from .cli_values import fraction, price, pue, typed, whole
from ..counting.text import table
from ..counting.running_costs import per_million_tokens
from ..service.serving import served
from ..service.speculative import speculative_row

__all__ = ["add_report_extras", "with_extras", "extras_text"]


def add_report_extras(p) -> None:
    """The report's ``--price``, ``--pue``, ``--draft``, ``--draft-tokens`` and
    ``--acceptance``."""
    p.add_argument("--price", type=typed(price), default=None, metavar="USD",
                   help="dollars one chip-hour costs: dollars a million tokens at each "
                   "batch row (at least: the times are floors)")
    p.add_argument("--pue", type=typed(pue), default=None, metavar="X",
                   help="the data centre's power usage effectiveness: kilowatt-hours a "
                   "million tokens at the boards' full power, times X (default 1)")
    p.add_argument("--draft", default=None, metavar="CONFIG",
                   help="a draft model (path or shipped name) for speculative decoding")
    p.add_argument("--draft-tokens", type=typed(lambda t: whole(t, 1, 64)),
                   default=None, metavar="K", help="tokens the draft proposes a round "
                   "(with --draft; default 4)")
    p.add_argument("--acceptance", type=typed(fraction), default=None, metavar="A",
                   help="chance each drafted token is accepted (with --draft; default "
                   "0.7)")


def _costs(result: dict, chip, args) -> dict:
    devices = result["split"]["split"]["devices"] if "split" in result else 1
    power = chip.facts.board_power_w if getattr(chip, "facts", None) else None
    factor = args.pue or 1.0
    rows = [{"context": r["context"], "batch": r["batch"], "fits": r["fits"],
             "tokens_per_s_per_chip": r["tokens_per_s"] / devices,
             **per_million_tokens(r["tokens_per_s"] / devices, args.price, power,
                                  factor).as_dict()}
            for r in result["throughput"]]
    return {"price_per_chip_hour": args.price, "pue": factor, "board_power_w": power,
            "devices": devices, "rows": rows}


_SPLIT_REFUSAL = (
    "argument --draft: speculative decoding is priced on one chip only: under a split "
    "the round's cost turns on where the draft runs (whole on one device or cut as the "
    "target is; vLLM takes either) and on the check's k + 1 positions through the "
    "split's collectives, neither of which is counted yet; drop the split flags")
"""Why a draft is refused under a split, in one line."""


def _speculative(result: dict, args, model, chip, engine, load_model) -> dict:
    if "split" in result:
        raise UsageError(_SPLIT_REFUSAL)
    draft, _ = load_model(args.draft, "layout")
    draft, _ = served(draft)
    k = args.draft_tokens or 4
    a = args.acceptance or 0.7
    rows = [speculative_row(model, draft, chip, engine, r["context"], r["batch"], k, a)
            for r in result["throughput"]]
    return {"draft": draft.name, "draft_tokens": k, "acceptance": a, "rows": rows}


def with_extras(result: dict, args, model, chip, engine, load_model) -> dict:
    """``result`` with ``running_costs`` (when a price or a PUE is given) and
    ``speculative`` (when a draft is given)."""
    if args.draft is None and (args.draft_tokens or args.acceptance):
        raise UsageError("arguments --draft-tokens and --acceptance need --draft")
    if args.price is not None or args.pue is not None:
        result["running_costs"] = _costs(result, chip, args)
    if args.draft is not None:
        result["speculative"] = _speculative(result, args, model, chip, engine,
                                             load_model)
    return result


def _cost_lines(c: dict) -> list[str]:
    pue = f", times a PUE of {c['pue']:g}" if c["pue"] != 1 else ""
    rows = [[f"{r['context']:,}", f"{r['batch']:,}", "yes" if r["fits"] else "no",
             "-" if r["dollars_at_least"] is None else f"{r['dollars_at_least']:,.3f}",
             "-" if r["kwh_at_board_power"] is None
             else f"{r['kwh_at_board_power']:,.3g}"] for r in c["rows"]]
    power = ("no published board power" if c["board_power_w"] is None else
             f"the boards' full {c['board_power_w']:,.0f} W{pue}, as model cards "
             "count it (not a bound: a board draws less, a real step takes longer)")
    return ["", f"Money and energy a million tokens written, over {c['devices']} "
            f"chip(s): dollars at least (the chip-hours at ${c['price_per_chip_hour']}"
            f" an hour, at the floor's times); kWh at {power}"
            if c["price_per_chip_hour"] is not None else
            f"Energy a million tokens written, over {c['devices']} chip(s): kWh at "
            f"{power}",
            *table(["context", "batch", "fits", "$ a million tokens",
                    "kWh a million tokens"], rows)]


def _speculative_lines(s: dict) -> list[str]:
    rows = [[f"{r['context']:,}", f"{r['batch']:,}",
             f"{r['tokens_per_s_plain']:,.0f}", f"{r['tokens_per_s_speculative']:,.0f}",
             f"{r['speedup']:.2f}", "yes" if r["pays"] else "no",
             "yes" if r["fits_with_draft"] else "no"] for r in s["rows"]]
    per = s["rows"][0]["tokens_per_round"] if s["rows"] else 0
    return ["", f"Speculative decoding with {s['draft']}: {s['draft_tokens']} drafted "
            f"tokens a round, each accepted with chance {s['acceptance']:g}, "
            f"{per:.2f} tokens a round; tokens a second at most (floors of the "
            "draft's steps and the check)",
            *table(["context", "batch", "plain tok/s", "speculative tok/s", "x",
                    "pays", "fits with draft"], rows)]


def extras_text(text: str, result: dict) -> str:
    """The report's text with the money, energy and speculative blocks before its
    assumptions."""
    lines = []
    if "running_costs" in result:
        lines += _cost_lines(result["running_costs"])
    if "speculative" in result:
        lines += _speculative_lines(result["speculative"])
    if not lines:
        return text
    head, _, tail = text.partition("\nAssumptions\n")
    return "\n".join([head.rstrip("\n"), *lines, "", "Assumptions", tail])
