"""A ``config.json`` read field by field, the way a family's ``transformers`` config
class reads it: every field read is remembered, every default fallen back on is
noted."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MAX_LAYERS", "MAX_SIZE", "Reader", "short", "whole_field"]

MAX_LAYERS = 10_000
"""Most layers the reader accepts (published decoders have a few hundred at most)."""

MAX_SIZE = 2**40
"""Largest size (width, vocabulary, heads, ...) the reader accepts, about 1.1 million
million."""


class Reader:
    """A config dictionary read field by field, for one family: every field it reads is
    remembered, and every default it falls back on is written down in ``notes``."""

    def __init__(
        self,
        cfg: Mapping[str, Any],
        title: str,
        defaults: Mapping[str, Any] = {},
        nested: Mapping[str, Mapping[str, Any]] = {},
        prefix: str = "",
    ) -> None:
        self.cfg = cfg
        self.title = title
        self.defaults = defaults
        self.nested = nested
        self.prefix = prefix
        self.notes: list[str] = []
        self.read: set[str] = set()

    def sub(self, name: str) -> Reader:
        """A reader of the nested config ``name`` (DBRX's ``attn_config``), with the
        defaults of its own class; it writes its notes beside this reader's."""
        self.read.add(name)
        value = self.cfg.get(name)
        if value is not None and not isinstance(value, Mapping):
            raise ValueError(
                f"config field {name} must be an object, got {short(value)}"
            )
        sub = Reader(value or {}, self.title, self.nested.get(name, {}),
                     prefix=f"{self.prefix}{name}.")
        sub.notes = self.notes
        return sub

    def raw(self, names: Sequence[str]) -> tuple[str, Any] | None:
        """(name, value) of the first of ``names`` present and not null, or None if none
        is. Two of them present with different values is an error naming both."""
        self.read.update(names)
        found = [(n, self.cfg[n]) for n in names if self.cfg.get(n) is not None]
        first = json.dumps(found[0][1], sort_keys=True, default=str) if found else ""
        for n, v in found[1:]:
            if json.dumps(v, sort_keys=True, default=str) != first:
                raise ValueError(
                    f"config fields {found[0][0]}={found[0][1]!r} and {n}={v!r} "
                    "disagree"
                )
        if found:
            return found[0]
        for n in names:  # left out of the file: the config class's default
            if n not in self.cfg and self.defaults.get(n) is not None:
                self.default(n, self.defaults[n])
                return n, self.defaults[n]
        return None

    def given(self, *names: str) -> bool:
        """True if one of ``names`` is present and not null."""
        return self.raw(names) is not None

    def default(self, name: str, value: Any, why: str = "") -> Any:
        """Note that ``name`` was not given and ``value`` is used, and return it."""
        if value is None:
            shown = "null"
        elif isinstance(value, bool):
            shown = str(value).lower()
        else:
            shown = f"{value:,}" if isinstance(value, int) else repr(value)
        reason = why or f"the {self.title} default in transformers"
        note = f"{self.prefix}{name} not given: using {shown} ({reason})"
        if note not in self.notes:
            self.notes.append(note)
        return value

    def whole(
        self,
        *names: str,
        default: int | None = None,
        minimum: int = 1,
        maximum: int = MAX_SIZE,
        why: str = "",
    ) -> int:
        """A whole-number field (the first of ``names``), or ``default`` (noted) when
        absent; without a default the field is required."""
        found = self.raw(names)
        if found is None:
            if default is None:
                null = any(n in self.defaults for n in names)
                raise ValueError(
                    f"config field {self.prefix}{names[0]} is missing"
                    + (f" (the {self.title} default in transformers is null: its "
                       "model needs it stated)" if null else "")
                )
            return self.default(names[0], default, why)
        return whole_field(*found, minimum=minimum, maximum=maximum)

    def flag(self, name: str, default: bool, why: str = "") -> bool:
        """A true/false field, or the family's ``default`` (noted) when absent."""
        found = self.raw((name,))
        if found is None:
            return self.default(name, default, why)
        if not isinstance(found[1], bool):
            raise ValueError(
                f"config field {name} must be true or false, got {short(found[1])}"
            )
        return found[1]

    def layer_list(
        self,
        name: str,
        layers: int,
        allowed: Sequence[str],
        aliases: Sequence[str] = (),
    ) -> list[str] | None:
        """A list of one layer kind per layer (e.g. ``layer_types``, or one of
        ``aliases``), or None when absent."""
        found = self.raw((name, *aliases))
        if found is None:
            return None
        name, value = found
        if (
            not isinstance(value, list)
            or len(value) != layers
            or not all(isinstance(v, str) for v in value)
        ):
            raise ValueError(
                f"config field {name} must list one name for each of the {layers} "
                f"layers, got {short(value)}"
            )
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ValueError(
                f"config field {name} holds {unknown[0]!r}, which this calculator "
                f"does not understand (it knows {', '.join(allowed)})"
            )
        return value


def short(value: Any) -> str:
    """A value as the error messages quote it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def whole_field(
    name: str, value: Any, minimum: int = 1, maximum: int = MAX_SIZE
) -> int:
    """``value`` of config field ``name`` if it is a whole number in [minimum,
    maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"config field {name} must be a whole number, got {short(value)}"
        )
    if value < minimum:
        raise ValueError(
            f"config field {name} must be at least {minimum}, got {short(value)}"
        )
    if value > maximum:
        raise ValueError(
            f"config field {name} must be at most {maximum:,}, got {short(value)}"
        )
    return value
