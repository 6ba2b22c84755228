"""The check's results summed up by regime, and laid out as text.

For each estimated quantity and regime: the runs, the median absolute error of the
estimate, the median of measured over estimated, the share of runs inside their
interval, and the runs faster than their floor; and the runs that could not be
expressed, counted by reason.
"""

from __future__ import annotations

import re
import statistics

__all__ = ["QUANTITIES", "summary", "format_check", "reason_kind"]

QUANTITIES = ("tpot_ms", "ttft_ms", "tokens_per_s_per_chip")
"""The quantities the check estimates, in the summary's order."""


def reason_kind(reason: str) -> str:
    """A refusal's reason with its numbers taken out, so that alike reasons count
    together."""
    return re.sub(r"(?<![\w.-])\d[\d,.]*", "N", reason)


def _rows(results: list[dict], quantity: str, models=None):
    for r in results:
        f = r.get(quantity)
        if isinstance(f, dict) and "measured" in f and "estimate" in f:
            if models is None or r.get("model") in models:
                yield r, f


def summary(results: list[dict], models=None) -> dict:
    """The summary of ``results`` (the runs of ``models`` only, when given)."""
    chosen = [r for r in results if models is None or r.get("model") in models]
    refused: dict[str, int] = {}
    for r in chosen:
        if "refused" in r:
            key = reason_kind(r["refused"])
            refused[key] = refused.get(key, 0) + 1
    regimes = []
    for q in QUANTITIES:
        groups: dict[str, list[dict]] = {}
        for r, f in _rows(chosen, q):
            groups.setdefault(f["regime"], []).append(f)
            every = f["regime"].split(",")[0] + ", every engine"
            groups.setdefault(every, []).append(f)
        for regime, fs in sorted(groups.items()):
            errors = [abs(f["estimate"] - f["measured"]) / f["measured"] for f in fs]
            inside = sum(f["low"] <= f["measured"] <= f["high"] for f in fs)
            regimes.append({
                "quantity": q, "regime": regime, "runs": len(fs),
                "median_abs_error": statistics.median(errors),
                "median_measured_over_estimate": statistics.median(
                    f["measured"] / f["estimate"] for f in fs),
                "inside_interval": inside / len(fs),
                "below_floor": sum(bool(f.get("below_floor")) for f in fs),
            })
    return {"runs": len(chosen), "expressible": sum("refused" not in r for r in chosen),
            "refused": dict(sorted(refused.items(), key=lambda kv: -kv[1])),
            "regimes": regimes}


def _figure(x: float) -> str:
    """``x`` to four significant figures, thousands separated."""
    v = float(f"{x:.4g}")
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _cell(f: dict) -> str:
    unit, n = f["unit"], _figure
    return (f"floor {n(f['floor'])}; expected {n(f['estimate'])} "
            f"({n(f['low'])}-{n(f['high'])} for {f['share']:.0%} of "
            f"{f['runs']:,} measured runs like it) {unit}; measured "
            f"{n(f['measured'])}, {f['measured_over_estimate']:.2f} x expected"
            + (" BELOW THE FLOOR: " + f["why"] if f.get("below_floor") else ""))


def format_check(results: list[dict], s: dict) -> str:
    """The check as text: a line or two a run, then the summary."""
    lines = []
    for r in results:
        if "refused" in r:
            lines.append(f"row {r['row']} {r['id']}: not expressed: {r['refused']}")
            continue
        for q in QUANTITIES:
            f = r.get(q)
            if isinstance(f, dict) and "measured" in f:
                lines.append(f"row {r['row']} {r['id']} {q}: {_cell(f)}")
        if "memory_gib" in r:
            m = r["memory_gib"]
            lines.append(f"row {r['row']} {r['id']} memory_gib: counted "
                         f"{m['counted']:.1f} GiB, measured {m['measured']:.1f} GiB")
    lines += ["", f"Summary: {s['runs']:,} runs, {s['expressible']:,} expressed"]
    for reason, n in s["refused"].items():
        lines.append(f"  not expressed ({n:,}): {reason}")
    lines.append("  quantity, regime: runs, median error, measured/expected, inside "
                 "the interval, below the floor")
    for g in s["regimes"]:
        lines.append(f"  {g['regime']}: {g['runs']:,}, {g['median_abs_error']:.1%}, "
                     f"{g['median_measured_over_estimate']:.2f}, "
                     f"{g['inside_interval']:.0%}, {g['below_floor']}")
    return "\n".join(lines)
