"""The ``check`` command: ``python -m transformer_calculator check RUNS.csv
[--json]``."""

from __future__ import annotations

import json
from pathlib import Path


__all__ = ["add_check_parser", "run_check", "MAX_RUNS_BYTES"]

MAX_RUNS_BYTES = 64 * 2**20
"""Largest table of runs read (the shipped ones are under 2 MiB)."""


def add_check_parser(commands) -> None:
    """The ``check`` subcommand and its options."""
    p = commands.add_parser(
        "check",
        help="hold the calculator against measured runs (a CSV of runs written as "
        "the calculator's options)",
        description="Read a CSV of measured runs, one a row, its columns named after "
        "report's and train's flags (without dashes) plus measured_ttft_ms, "
        "measured_tpot_ms, measured_tokens_per_s_per_chip, measured_mfu and "
        "measured_memory_gib, and print each run's floor, estimate with its interval, "
        "measurement and ratio, then a summary by regime.")
    p.add_argument("runs", help="path to the CSV of runs")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")


def run_check(args) -> str:
    """Run the check: its text or its JSON."""
    path = Path(args.runs)
    if not path.is_file():
        raise ValueError(f"no file {str(path)!r}")
    with path.open("rb") as f:
        data = f.read(MAX_RUNS_BYTES + 1)
    if len(data) > MAX_RUNS_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_RUNS_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not UTF-8 text") from None
    from .check import check_runs  # the calculator's command line loads it lazily
    from .runs import read_runs
    from .summary import format_check, summary

    results = check_runs(read_runs(text))
    s = summary(results)
    if args.json:
        return json.dumps({"runs": results, "summary": s}, indent=1, allow_nan=False)
    return format_check(results, s)
