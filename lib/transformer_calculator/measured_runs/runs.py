"""A table of measured runs written as the calculator's own options (``RUNS.csv``): one
row a run, a column a flag (its name without the dashes, ``-`` as ``_``), beside what
was measured.

- ``command``: ``report`` (serving) or ``train``;
- options of either command: ``model`` (a config's path or a shipped name), ``chip``,
  ``weights``, ``expert_weights``, ``kv_dtype``, ``tp``, ``pp``, ``ep``, ``dp``,
  ``batch``, ``prompt``, ``answer``, ``seq_len``, ``zero_stage``, ``micro_batches``,
  ``recompute``, ``gradients`` (or ``fp32_gradients``), ``engine``,
  ``engine_version``, ...;
- beside a serving run: ``attention_dp`` (attention split into copies beside expert
  parallel), ``prefill_tp``, ``prefill_ep`` and ``prefill_attention_dp`` (a
  disaggregated run's prompt workers), ``prefill_workers`` and ``decode_workers``
  (how many of each: the prompt workers serve every decode worker's requests; a
  disaggregated run without them or its ``batch`` gets its floors, not an estimate);
- what was measured, any of them empty: ``measured_ttft_ms``, ``measured_tpot_ms``,
  ``measured_tokens_per_s_per_chip``, ``measured_mfu`` (a fraction),
  ``measured_memory_gib`` (the peak of the first pipeline stage's device, GiB);
- optional: ``id`` (a name for the run, echoed), and ``refused`` (a reason the run
  could not be written as options: the row is listed as refused with it).

An empty ``batch`` beside a throughput means an offline run at the most conversations
that fit. Every bad row is one line naming the row and the cause, never a traceback.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

__all__ = ["MEASURED", "OPTIONS", "COMMANDS", "Run", "read_runs", "write_runs"]

MEASURED = {
    "measured_ttft_ms": "ttft_ms",
    "measured_tpot_ms": "tpot_ms",
    "measured_tokens_per_s_per_chip": "tokens_per_s_per_chip",
    "measured_mfu": "mfu",
    "measured_memory_gib": "memory_gib",
}
"""Columns of measurements and the name each has in the check's output."""

COMMANDS = ("report", "train")
"""The commands a run names."""

OPTIONS = (
    "model", "chip", "weights", "expert_weights", "kv_dtype", "tp", "pp", "ep", "dp",
    "batch", "prompt", "answer", "seq_len", "zero_stage", "micro_batches", "recompute",
    "optimizer", "gradients", "fp32_gradients", "devices", "engine", "engine_version",
    "attention_dp", "prefill_tp", "prefill_ep", "prefill_attention_dp",
    "prefill_workers", "decode_workers",
    "gpu_memory_utilization", "block_size", "interconnect", "pp_layers",
    "loss", "gathered_inputs", "kv_twice", "gather_buffers", "ddp_buckets",
)
"""The option columns a run may carry (``devices`` is ``train``'s name for ``dp``;
``pp_layers`` each stage's layers, comma-separated, or ``nanotron``: as nanotron
cuts them)."""

_OTHER = ("id", "command", "refused")


@dataclass(frozen=True)
class Run:
    """One row: its place in the file (``row``, the header is row 1), its ``id``, the
    ``command``, the options as written (``options``: column to text, empty ones
    left out), the measurements (``measured``: output name to a positive number), and
    ``refused``: the reason it could not be read or written as options (None: read)."""

    row: int
    id: str
    command: str
    options: dict[str, str] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)
    refused: str | None = None


def _number(text: str, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{column} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{column} must be a positive number, got {text!r}")
    return value


def _run(row: int, cells: dict[str, str]) -> Run:
    """The run of one row's cells (a refused Run when a cell is bad)."""
    ident = cells.get("id", "") or f"row {row}"
    command = cells.get("command", "")
    options = {k: v for k, v in cells.items() if k in OPTIONS and v != ""}
    if cells.get("refused"):
        return Run(row, ident, command, options, {}, cells["refused"])
    try:
        if command not in COMMANDS:
            raise ValueError(f"command must be report or train, got {command!r}")
        measured = {
            out: _number(cells[col], col)
            for col, out in MEASURED.items()
            if cells.get(col, "") != ""
        }
        if "model" not in options:
            raise ValueError("model is empty")
    except ValueError as err:
        return Run(row, ident, command, options, {}, str(err))
    return Run(row, ident, command, options, measured)


def read_runs(text: str) -> list[Run]:
    """The runs of a ``RUNS.csv`` text, in the file's order; a ValueError for a file
    whose header is not such a table (a bad row is a refused Run, not an error)."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ValueError(
            "the file is empty: a header row of columns is needed"
        ) from None
    except csv.Error as err:
        raise ValueError(f"the header is not CSV: {err}") from None
    known = set(OPTIONS) | set(MEASURED) | set(_OTHER)
    unknown = [h for h in header if h not in known]
    if unknown:
        raise ValueError(
            f"column {unknown[0]!r} is not an option of report or train nor a "
            "measurement (measured_ttft_ms, measured_tpot_ms, "
            "measured_tokens_per_s_per_chip, measured_mfu, measured_memory_gib)"
        )
    if "command" not in header or "model" not in header:
        raise ValueError("the header must name the columns command and model")
    if len(set(header)) != len(header):
        raise ValueError("a column is named twice in the header")
    runs: list[Run] = []
    row = 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            row += 1
            runs.append(Run(row, f"row {row}", "", {}, {}, f"not CSV: {err}"))
            continue
        row += 1
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            runs.append(Run(row, f"row {row}", "", {}, {},
                            f"{len(values)} cells where the header has {len(header)}"))
            continue
        runs.append(_run(row, dict(zip(header, (v.strip() for v in values)))))
    return runs


def write_runs(rows: list[dict[str, str]]) -> str:
    """A ``RUNS.csv`` text of ``rows`` (dictionaries of column to text), its columns
    in the order they first appear."""
    columns: list[str] = []
    for r in rows:
        columns += [c for c in r if c not in columns]
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
