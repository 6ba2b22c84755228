"""The check's results summed up by regime, and laid out as text.

For each estimated quantity and regime: the runs, the median absolute error of the
estimate, the median of measured over estimated, the share of runs inside their
interval, and the runs faster than their floor. The runs expressed by their floor
alone (their estimate refused) are counted apart, never among the estimated ones: for
each quantity and regime, the runs, the median of measured over the floor and the runs
faster than it. And the runs that could not be expressed, counted by reason.
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


def _floor_only(chosen: list[dict]) -> list[dict]:
    """The floor-only runs' rows by quantity and regime."""
    out = []
    for q in QUANTITIES:
        groups: dict[str, list[dict]] = {}
        for r in chosen:
            f = r.get(q)
            if (isinstance(f, dict) and "estimate_refused" in f and "measured" in f
                    and "floor" in f):
                groups.setdefault(f["regime"], []).append(f)
                every = f["regime"].split(",")[0] + ", every engine"
                groups.setdefault(every, []).append(f)
        for regime, fs in sorted(groups.items()):
            out.append({
                "quantity": q, "regime": regime, "runs": len(fs),
                "median_measured_over_floor": statistics.median(
                    f["measured"] / f["floor"] for f in fs),
                "below_floor": sum(bool(f.get("below_floor")) for f in fs),
            })
    return out


def _counted(chosen: list[dict], key: str) -> dict[str, int]:
    """The runs carrying ``key`` counted by its reason, the commonest first."""
    out: dict[str, int] = {}
    for r in chosen:
        if key in r:
            kind = reason_kind(r[key])
            out[kind] = out.get(kind, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def summary(results: list[dict], models=None) -> dict:
    """The summary of ``results`` (the runs of ``models`` only, when given):
    ``expressible`` runs (not refused) are the ``estimated`` ones (floor and
    estimate) and the ``floor_only`` ones, each summed up by regime apart."""
    chosen = [r for r in results if models is None or r.get("model") in models]
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
    expressible = sum("refused" not in r for r in chosen)
    floor_only = sum("estimate_refused" in r for r in chosen)
    return {"runs": len(chosen), "expressible": expressible,
            "estimated": expressible - floor_only, "floor_only": floor_only,
            "refused": _counted(chosen, "refused"),
            "estimate_refused": _counted(chosen, "estimate_refused"),
            "regimes": regimes, "floor_only_regimes": _floor_only(chosen)}


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


def _floor_cell(f: dict) -> str:
    if "floor" not in f:
        return f"floor only: no floor ({f['floor_refused']}); measured " \
               f"{_figure(f['measured'])} {f['unit']}"
    return (f"floor only: floor {_figure(f['floor'])} {f['unit']}; measured "
            f"{_figure(f['measured'])}, {f['measured_over_floor']:.2f} x the floor"
            + (" BELOW THE FLOOR: " + f["why"] if f.get("below_floor") else ""))


def format_check(results: list[dict], s: dict) -> str:
    """The check as text: a line or two a run, then the summary."""
    lines = []
    for r in results:
        if "refused" in r:
            lines.append(f"row {r['row']} {r['id']}: not expressed: {r['refused']}")
            continue
        if "estimate_refused" in r:
            lines.append(f"row {r['row']} {r['id']}: floor only, no estimate: "
                         f"{r['estimate_refused']}")
        for q in QUANTITIES:
            f = r.get(q)
            if isinstance(f, dict) and "measured" in f:
                cell = _floor_cell(f) if "estimate_refused" in f else _cell(f)
                lines.append(f"row {r['row']} {r['id']} {q}: {cell}")
        if "memory_gib" in r:
            m = r["memory_gib"]
            lines.append(f"row {r['row']} {r['id']} memory_gib: counted "
                         f"{m['counted']:.1f} GiB, measured {m['measured']:.1f} GiB")
    lines += ["", f"Summary: {s['runs']:,} runs, {s['expressible']:,} expressed: "
              f"{s['estimated']:,} with floor and estimate, {s['floor_only']:,} "
              "floor only"]
    for reason, n in s["estimate_refused"].items():
        lines.append(f"  floor only ({n:,}): {reason}")
    for reason, n in s["refused"].items():
        lines.append(f"  not expressed ({n:,}): {reason}")
    lines.append("  quantity, regime: runs, median error, measured/expected, inside "
                 "the interval, below the floor")
    for g in s["regimes"]:
        lines.append(f"  {g['regime']}: {g['runs']:,}, {g['median_abs_error']:.1%}, "
                     f"{g['median_measured_over_estimate']:.2f}, "
                     f"{g['inside_interval']:.0%}, {g['below_floor']}")
    if s["floor_only_regimes"]:
        lines.append("  floor only, quantity, regime: runs, measured/floor, below the "
                     "floor")
    for g in s["floor_only_regimes"]:
        lines.append(f"  {g['regime']}: {g['runs']:,}, "
                     f"{g['median_measured_over_floor']:.2f}, {g['below_floor']}")
    return "\n".join(lines)
