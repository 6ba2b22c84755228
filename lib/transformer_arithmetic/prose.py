"""Putting computed numbers into the prose: every number on a page is glued from code."""
from __future__ import annotations

import numbers

__all__ = ["plain", "glue_numbers"]


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
