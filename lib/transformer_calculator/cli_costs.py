"""The money and energy flags and lines shared by ``train``, ``report`` and ``plan``:
``--price`` (dollars a chip-hour) and ``--pue`` as they are parsed, and a run's cost
and energy lines (``running_costs``)."""

from __future__ import annotations

from .running_costs import MAX_PRICE, MAX_PUE

__all__ = ["price", "pue", "cost_lines"]


def price(text: str) -> float:
    """Dollars a chip-hour: a number in (0, MAX_PRICE]."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a number of dollars, got {text!r}") from None
    if not 0 < value <= MAX_PRICE:
        raise ValueError(f"must lie in (0, {MAX_PRICE:,.0f}], got {text!r}")
    return value


def pue(text: str) -> float:
    """A power usage effectiveness in [1, MAX_PUE]."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {text!r}") from None
    if not 1 <= value <= MAX_PUE:
        raise ValueError(f"must lie in [1, {MAX_PUE:g}], got {text!r}")
    return value


def cost_lines(c: dict) -> list[str]:
    """The money and energy lines, each saying what kind of number it is."""
    lines = []
    if c["dollars_at_least"] is not None:
        dollars = f"at least ${c['dollars_at_least']:,.0f}"
        lines.append(f"Cost                        {dollars} (the chip-hours at the "
                     "price given)")
    if c["kwh_at_board_power"] is not None:
        pue = f", times a PUE of {c['pue']:g}" if c["pue"] != 1 else ""
        kwh = c["kwh_at_board_power"]
        energy = f"{kwh / 1e3:,.1f} MWh" if kwh >= 1e3 else f"{kwh:,.1f} kWh"
        watts = f"{c['board_power_w']:,.0f} W"
        lines.append(f"Energy                      {energy}: the chip-hours at the "
                     f"boards' full {watts}{pue}, as model cards count it (not a "
                     "bound: a board draws less, a real run takes longer)")
    return lines
