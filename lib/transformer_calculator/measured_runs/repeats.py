"""Rows of the shipped serving table that repeat another row's measurement.

The serving table merges several dumps of one database (ids such as ``…_cfg375`` and
dated names such as ``2026_04_06_…``), so one measurement can appear in two or more
rows. Its two times are stored to a double's full precision, so two rows whose times
agree to the last bit are one measurement labelled twice, not two runs that happened to
agree. Some are labelled with another checkpoint of the same shape (DeepSeek-V3 beside
R1) and some with another split. Counted once, a measurement weighs once in the fit,
and a measurement fitted under one model's name is not judged again as another
model's held-out run.
"""

from __future__ import annotations

__all__ = ["TIMES", "repeats"]

TIMES = ("measured_ttft_ms", "measured_tpot_ms")
"""The measured columns whose text, together, names one measurement."""


def repeats(rows: list[dict], held_out: frozenset[str]) -> dict[str, str]:
    """Each row whose measured times are another row's, to the last digit, mapped to
    the id of the row kept (the first in the table's order among the rows of fitted
    models, then among the held-out models' rows); rows lacking either time are
    never repeats."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["model"] in held_out, i))
    kept: dict[tuple[str, ...], str] = {}
    out = {}
    for i in order:
        times = tuple(str(rows[i].get(k) or "") for k in TIMES)
        if not all(times):
            continue
        if times in kept:
            out[rows[i]["id"]] = kept[times]
        else:
            kept[times] = rows[i]["id"]
    return out
