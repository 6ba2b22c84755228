"""Money and energy of a training run, or of a million tokens served: its chip-hours
at a price a chip-hour, and its chips' boards at their published full power for the
run's chip-hours (times a data centre's power usage effectiveness, PUE, when one is
given).

Both rest on the chip-hours the command prints, which come from the roofline's floor
(or the floor derated by hand): a real run takes longer, so the money is at least what
such a run costs at that price. The energy is counted as model cards count it (Llama
3's: chip-hours at the board's full power): not a bound, since a board rarely draws all
of its power for a whole run while the run itself takes longer than the floor; the
rest of each machine (processors, network cards, switches) is left out, and a PUE folds
in the building's share only.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunningCosts", "running_costs", "chip_hours_per_million",
           "per_million_tokens", "cost_lines", "MAX_PRICE", "MAX_PUE"]

MAX_PRICE = 1e4
"""Most dollars a chip-hour ``--price`` takes."""
MAX_PUE = 3.0
"""Largest power usage effectiveness ``--pue`` takes (1: a building that adds none)."""


@dataclass(frozen=True)
class RunningCosts:
    """A run's ``dollars`` at least (None without a price), its chips' ``kwh`` at full
    board power (None without a published board power) and the ``pue`` folded in."""

    dollars: float | None
    kwh: float | None
    board_power_w: float | None
    pue: float

    def as_dict(self) -> dict:
        """The costs as the command's JSON gives them."""
        return {"dollars_at_least": self.dollars, "kwh_at_board_power": self.kwh,
                "board_power_w": self.board_power_w, "pue": self.pue}


def running_costs(chip_hours: float, price: float | None, board_power_w: float | None,
                  pue: float = 1.0) -> RunningCosts:
    """Dollars of ``chip_hours`` at ``price`` dollars a chip-hour, and kilowatt-hours
    of as many hours of one board at ``board_power_w`` watts, times ``pue``."""
    if chip_hours < 0:
        raise ValueError(f"chip_hours must not be negative, got {chip_hours}")
    if not 1.0 <= pue <= MAX_PUE:
        raise ValueError(f"pue must lie in [1, {MAX_PUE:g}], got {pue}")
    dollars = None if price is None else chip_hours * price
    kwh = None if board_power_w is None else chip_hours * board_power_w / 1e3 * pue
    return RunningCosts(dollars, kwh, board_power_w, pue)


def chip_hours_per_million(tokens_per_s_per_chip: float) -> float:
    """Chip-hours a million tokens take at ``tokens_per_s_per_chip`` tokens a second on
    each chip."""
    if not tokens_per_s_per_chip > 0:
        raise ValueError(f"tokens a second must be positive, got "
                         f"{tokens_per_s_per_chip}")
    return 1e6 / tokens_per_s_per_chip / 3600


def per_million_tokens(tokens_per_s_per_chip: float, price: float | None,
                       board_power_w: float | None, pue: float = 1.0) -> RunningCosts:
    """The ``running_costs`` of a million tokens made at ``tokens_per_s_per_chip``
    tokens a second a chip: dollars at least, kilowatt-hours at board power."""
    return running_costs(chip_hours_per_million(tokens_per_s_per_chip), price,
                         board_power_w, pue)


def cost_lines(c: dict) -> list[str]:
    """The money and energy lines, each saying what kind of number it is."""
    lines = []
    if c["dollars_at_least"] is not None:
        dollars = c["dollars_at_least"]
        lines.append(f"Cost                        at least ${dollars:,.0f} (the "
                     "chip-hours at the price given)")
    if c["kwh_at_board_power"] is not None:
        pue = f", times a PUE of {c['pue']:g}" if c["pue"] != 1 else ""
        kwh = c["kwh_at_board_power"]
        energy = f"{kwh / 1e3:,.1f} MWh" if kwh >= 1e3 else f"{kwh:,.1f} kWh"
        watts = c["board_power_w"]
        lines.append(f"Energy                      {energy}: the chip-hours at the "
                     f"boards' full {watts:,.0f} W{pue}, as model cards count it (not "
                     "a bound: a board draws less, a real run takes longer)")
    return lines
