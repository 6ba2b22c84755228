"""Putting computed numbers into the prose: every number on a page is glued from code."""
from __future__ import annotations

import numbers

__all__ = ["plain", "glue_numbers", "size_text"]


def plain(value):
    """``value`` as a plain Python int, float or str (glue stores numpy scalars badly)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def glue_numbers(**values) -> None:
    """Glue each keyword's value under its name, for ``{glue:text}`name:format``` in the prose."""
    from myst_nb import glue

    for key, value in values.items():
        glue(key, plain(value), display=False)


def size_text(nbytes: float, spec: str = ",.4g", byte_unit: str = "bytes") -> str:
    """A byte count in the largest binary unit that keeps it at 1 or more: '48 MiB', '1.5 KiB', '12 GiB'.

    ``spec`` formats the number (the report's tables use ',.2f'); counts under 1 KiB use ``byte_unit``."""
    if nbytes < 0:
        raise ValueError(f"nbytes must not be negative, got {nbytes!r}")
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:{spec}} {unit}"
    return f"{nbytes:{spec}} {byte_unit}"
