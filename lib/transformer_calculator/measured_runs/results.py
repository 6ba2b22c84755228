"""The check of both shipped tables, stored as data for the appendix page
(``data/results.json``): every estimated run's floor, estimate, interval and
measurement for each quantity (rounded to six significant figures), whether its model
was held out of the fit; apart from them, the runs expressed by their floor alone
(``floor_only``: floor and measurement, and why the estimate is refused); the runs
faster than their floor with their causes (both kinds); the refusals counted by
reason, and the summaries (every run, the held-out runs).

    python -m transformer_calculator.measured_runs.results

rewrites it; ``tests/test_measured_runs_slow.py`` checks that it is what the check
gives now.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

from .check import check_runs
from .conversion import serving_rows, training_rows
from .fit import HELD_OUT
from .failed import failed_runs
from .floors import training_figures
from .repeats import repeats
from .runs import read_runs, write_runs
from .setup import training_setup
from .summary import QUANTITIES, summary

__all__ = ["RESULTS_FILE", "results", "main"]

RESULTS_FILE = Path(__file__).parent / "data" / "results.json"
"""Where the stored check of the shipped tables lives."""

FIELDS = ("floor", "estimate", "low", "high", "measured")
FLOOR_FIELDS = ("floor", "measured")
"""The figures stored of a run expressed by its floor alone."""


def _six(x: float) -> float:
    return float(f"{x:.6g}")


MEMORY_COLUMNS = ("id", "model", "held_out", "counted", "measured")
"""The columns of each training run's peak memory (GiB, the first stage's device)."""

NEAR = 0.10
"""How close a counted peak memory must be to the measured one to count as near."""


def _memory(rows: list[dict], runs: list, held: set[str]) -> dict:
    """The training runs' peak memory, counted against measured, with the share of
    runs within ``NEAR`` of it (all and by model), and for the runs that finished and
    those that did not, whether the count says their busiest device holds the
    step."""
    table = [[r["id"], r["model"], r["model"] in held,
              _six(r["memory_gib"]["counted"]), _six(r["memory_gib"]["measured"])]
             for r in rows if "memory_gib" in r]
    def near(part: list) -> dict:
        ratios = [m / c for *_, c, m in part]
        median = statistics.median(ratios)
        return {"runs": len(part), "median_measured_over_counted": _six(median),
                "within": _six(sum(abs(q - 1) <= NEAR for q in ratios) / len(ratios))}
    by_model = {m: near([t for t in table if t[1] == m])
                for m in sorted({t[1] for t in table})}
    outcomes = {k: {"count says it does not fit": 0, "count says it fits": 0,
                    "not expressible": 0} for k in ("finished", "did not finish")}
    for run in runs:
        if run.refused and not run.refused.startswith("not measured"):
            continue
        outcome = outcomes["did not finish" if run.refused else "finished"]
        try:
            fits = training_figures(training_setup(dataclasses.replace(
                run, refused=None)))["fits"]
        except (ValueError, ArithmeticError):
            outcome["not expressible"] += 1
            continue
        outcome["count says it fits" if fits else "count says it does not fit"] += 1
    return {"columns": list(MEMORY_COLUMNS), "runs": table, "near": NEAR,
            "summary": near(table), "by_model": by_model, "outcomes": outcomes}


def _repeats(rows: list[dict], again: dict[str, str], held: set[str]) -> dict:
    """The serving rows left out as repeats of another row's measurement: how many,
    how many carry a held-out model's name while the row kept is a fitted model's,
    how many carry another split or batch, and each with the row kept."""
    by_id = {r["id"]: r for r in rows}
    shape = ("tp", "attention_dp", "ep", "batch", "prefill_tp", "prefill_ep",
             "prefill_attention_dp")
    return {
        "rows": len(again),
        "held_out_of_fitted": sum(by_id[a]["model"] in held
                                  and by_id[k]["model"] not in held
                                  for a, k in again.items()),
        "held_out_names": sorted({by_id[a]["model"] for a, k in again.items()
                                  if by_id[a]["model"] in held
                                  and by_id[k]["model"] not in held}),
        "kept_names": sorted({by_id[k]["model"] for a, k in again.items()
                              if by_id[a]["model"] in held
                              and by_id[k]["model"] not in held}),
        "other_model": sum(by_id[a]["model"] != by_id[k]["model"]
                           for a, k in again.items()),
        "other_split": sum(any(by_id[a].get(f) != by_id[k].get(f) for f in shape)
                           for a, k in again.items()),
        "columns": ["id", "model", "kept", "kept_model"],
        "runs": [[a, by_id[a]["model"], k, by_id[k]["model"]]
                 for a, k in sorted(again.items())],
    }


def results() -> dict:
    """The stored check's content."""
    training_runs = read_runs(write_runs(training_rows()))
    table_rows = serving_rows()
    held = set(HELD_OUT)
    again = repeats(table_rows, frozenset(held))
    distinct = [r for r in table_rows if r["id"] not in again]
    checked = {"serving": check_runs(read_runs(write_runs(distinct))),
               "training": check_runs(training_runs)}
    out: dict = {"held_out": sorted(held), "columns": ["id", "model", "chip", "engine",
                                                      "held_out", *FIELDS]}
    for table, rows in checked.items():
        per: dict[str, list] = {}
        floor_only: dict[str, list] = {}
        below = []
        for r in rows:
            for q in QUANTITIES:
                f = r.get(q)
                if not (isinstance(f, dict) and "measured" in f and "floor" in f):
                    continue
                head = [r["id"], r["model"], r.get("chip"), r.get("engine"),
                        r["model"] in held]
                alone = "estimate_refused" in f
                if alone:
                    floor_only.setdefault(q, []).append(
                        [*head, *(_six(f[k]) for k in FLOOR_FIELDS)])
                else:
                    per.setdefault(q, []).append([*head, *(_six(f[k]) for k in FIELDS)])
                if f.get("below_floor"):
                    below.append({"id": r["id"], "model": r["model"], "quantity": q,
                                  "floor": _six(f["floor"]),
                                  "measured": _six(f["measured"]), "why": f["why"],
                                  "floor_only": alone})
        out[table] = {"runs": per, "below_floor": below,
                      "floor_only": {"columns": ["id", "model", "chip", "engine",
                                                 "held_out", *FLOOR_FIELDS],
                                     "runs": floor_only},
                      "summary": _rounded(summary(rows)),
                      "held_out_summary": _rounded(summary(rows, held))}
    out["serving"]["repeats"] = _repeats(table_rows, again, held)
    out["training"]["memory"] = _memory(checked["training"], training_runs, held)
    out["training"]["failed_jobs"] = sorted(failed_runs(training_runs))
    return out


def _rounded(value):
    if isinstance(value, float):
        return _six(value)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def text(data: dict) -> str:
    """The file's text (one run a line, so that a change shows run by run)."""
    return json.dumps(data, indent=0, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Check both shipped tables and write ``data/results.json``."""
    RESULTS_FILE.parent.mkdir(exist_ok=True)
    RESULTS_FILE.write_text(text(results()), encoding="utf-8")
    print(f"wrote {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
