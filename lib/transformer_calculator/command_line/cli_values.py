"""What the command line's flags take: whole numbers, lists of them, fractions and names
from a table, each refused in one line naming what it must be (argparse prefixes the
flag)."""

from __future__ import annotations

import argparse
import difflib
import re

from ..counting.chips import chip, chip_note
from ..counting.running_costs import MAX_PRICE, MAX_PUE

__all__ = [
    "MAX_LIST", "MAX_TOKENS", "ChipName", "CommandParser", "choice", "fraction",
    "typed", "whole", "whole_list",
]

MAX_LIST = 32
"""Most values one list flag (``--context``, ``--batch``) takes."""

MAX_TOKENS = 10**12
"""Largest length, batch or token count a flag takes: far beyond any model, small
enough that every byte count and time stays a finite number."""


def typed(parse):
    """``parse`` as an argparse type: its ValueError becomes argparse's one-line
    error."""

    def wrapped(text: str):
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    wrapped.__name__ = parse.__name__
    return wrapped


def whole(text: str, low: int = 1, high: int = MAX_TOKENS) -> int:
    """A whole number from ``low`` to ``high``."""
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"must be a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise ValueError(f"must lie between {low:,} and {high:,}, got {text!r}")
    return value


def whole_list(text: str) -> tuple[int, ...]:
    """One whole number or a comma list of them (at most ``MAX_LIST``), in order, each
    once; an empty place between commas (``4096,``) holds nothing."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError(f"needs a whole number or a comma list of them, got {text!r}")
    if len(parts) > MAX_LIST:
        raise ValueError(f"takes at most {MAX_LIST} values, got {len(parts)}")
    return tuple(dict.fromkeys(whole(p) for p in parts))


def fraction(text: str) -> float:
    """A fraction in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {text!r}") from None
    if not 0 < value <= 1:
        raise ValueError(f"must lie in (0, 1], got {text!r}")
    return value


def choice(table: dict):
    """A parser of one key of ``table``, in any case."""

    def parse(text: str) -> str:
        key = text.strip().lower()
        if key not in table:
            raise ValueError(f"must be one of {', '.join(table)}, got {text!r}")
        return key

    return parse


class ChipName(argparse.Action):
    """``--chip NAME``: the shipped chip in ``chip``, and in ``chip_notes`` what to say
    when the name fits more than one (``chips.chip_note``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            found = chip(values)
        except ValueError as err:
            raise argparse.ArgumentError(self, str(err)) from None
        setattr(namespace, self.dest, found)
        note = chip_note(values, found)
        namespace.chip_notes = (note,) if note else ()


class CommandParser(argparse.ArgumentParser):
    """A parser whose errors name the nearest flag or command when one was mistyped
    (``--contxt``: did you mean ``--context``?)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.set_defaults(chip_notes=())

    def parse_args(self, args=None, namespace=None):
        self._asked = self  # the command an earlier call's error was asked of is gone
        known, extra = self.parse_known_args(args, namespace)
        if extra:
            command = getattr(known, "command", None)
            self._asked = self._commands().get(command, self)
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return known

    def _commands(self) -> dict:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action.choices
        return {}

    def suggested(self, message: str) -> str:
        """``message`` with the nearest flag or command added for a mistyped one."""
        asked = getattr(self, "_asked", self)
        unknown = re.match(r"unrecognized arguments: (\S+)", message)
        choice = re.search(r"invalid choice: '([^']*)'", message)
        if unknown and unknown[1].startswith("-"):
            flag = unknown[1].split("=", 1)[0]
            flags = [o for a in asked._actions for o in a.option_strings]
            near = difflib.get_close_matches(flag, flags, n=1, cutoff=0.6)
            name = asked.prog.split()[-1]
            owners = [n for n, p in self._commands().items() if p is not asked
                      and any(flag in a.option_strings for a in p._actions)]
            if asked is not self and owners and flag not in flags:
                return f"{flag} is an option of {' and '.join(owners)}, not of {name}"
            where = f" for {name}" if asked is not self else ""
            return (f"unrecognized argument {flag}{where}"
                    + (f": did you mean {near[0]}?" if near else
                       f"; see {asked.prog} --help"))
        if choice:
            near = difflib.get_close_matches(choice[1], self._commands(), n=1)
            if near and "argument command" in message:
                return f"{message}: did you mean {near[0]}?"
        return message


def _number(text: str, what: str) -> float:
    """``text`` read as a number, or a ValueError naming ``what`` it must be."""
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"must be {what}, got {text!r}") from None


def price(text: str) -> float:
    """Dollars a chip-hour: a number in (0, MAX_PRICE]."""
    value = _number(text, "a number of dollars")
    if not 0 < value <= MAX_PRICE:
        raise ValueError(f"must lie in (0, {MAX_PRICE:,.0f}], got {text!r}")
    return value


def pue(text: str) -> float:
    """A power usage effectiveness in [1, MAX_PUE]."""
    value = _number(text, "a number")
    if not 1 <= value <= MAX_PUE:
        raise ValueError(f"must lie in [1, {MAX_PUE:g}], got {text!r}")
    return value
