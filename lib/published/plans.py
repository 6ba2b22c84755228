"""How published runs cut their models over their chips, as their authors report
them: one ``PlanFacts`` a row of ``data/plans.json``, each with its source."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["PLAN_FILE", "PlanFacts", "plans", "plan"]

PLAN_FILE = Path(__file__).parent / "data" / "plans.json"
"""The table of published plans."""


@dataclass(frozen=True)
class PlanFacts:
    """One published plan: the model (a published config's name), the chip (a key of
    ``chips``; None where the table has no row for it), what it is, its figures as the
    source gives them (splits, lengths, batches, reported rates) and the source."""

    key: str
    model: str
    chip: str | None
    what: str
    figures: dict[str, float]
    source: str
    note: str

    def __getitem__(self, name: str) -> float:
        """The figure called ``name``; a KeyError names what the source gives."""
        if name not in self.figures:
            raise KeyError(f"{self.key} gives no {name!r}; it gives "
                           f"{', '.join(self.figures)}")
        return self.figures[name]


@lru_cache(maxsize=1)
def plans() -> tuple[PlanFacts, ...]:
    """Every published plan of the table, in its order."""
    rows = json.loads(PLAN_FILE.read_text(encoding="utf-8"))["plans"]
    return tuple(PlanFacts(**r) for r in rows)


def plan(key: str) -> PlanFacts:
    """The published plan called ``key``."""
    for p in plans():
        if p.key == key:
            return p
    known = ", ".join(p.key for p in plans())
    raise ValueError(f"no published plan called {key!r}; the shipped ones are: {known}")
