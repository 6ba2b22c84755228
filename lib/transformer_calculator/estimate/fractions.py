"""The fitted fractions of peak, as data: ``data/fractions.json``, written by the fit
(``python -m transformer_calculator.measured_runs.fit``), never typed in code.

Each value is named by a key: ``compute:{architecture}:{bf16|fp8|fp4}`` and
``read:{architecture}`` (the weight matrices' arithmetic and reading in a decode
step), ``prefill compute:...`` and ``prefill expert compute:...`` (a prompt's pass:
the dense matrices and the routed experts), ``expert read:...`` (the experts' reading
in a prompt's pass), ``attention compute:...`` and ``attention read:...`` (attention
over a cache), ``prefill attention compute:...`` and ``prefill attention read:...``
(attention over a prompt: many queries at once, and its cache's writing),
``prefill read:...`` (a prompt's pass's reading of its dense weights), each the
inverse of the fraction of peak reached (at least 1); ``layer:{engine}`` and
``step:{engine}`` (seconds a layer and a step that no roof holds),
``expert layer:{engine}`` (the seconds a decode step's layer of routed experts adds),
``prefill expert:{engine}`` (seconds an expert a layer a prompt reaches),
``latency:{link}`` and ``link:{link}`` (multiples of the published step latency and of
the link's bytes a second), the request's terms (``interference``: the share of prompt
passes a decode step waits for; ``first token`` and ``first token layer``: seconds a
request and a layer; ``queue`` and ``burst``: multiples of the closed loop's wait and
of the first round's, ``estimate/serving.py``; ``disaggregated`` and
``disaggregated queue``: multiples of the prompt workers' pass and of their queue's
wait), and training's
(``train compute``, ``train read``; ``train tp link``, ``train pp link``,
``train pp latency``, ``train dp link``, ``train dp gather``: multiples of what the
split counts on each link, or of the bandwidth measured by number of nodes;
``train tp step:{pipelined|alone}`` and ``...:network``, ``train layer``,
``train pp layer``, ``train pp slot``, ``train fixed``: seconds a ring step inside a
machine and between machines, a layer and micro-batch alone and pipelined, a
pipeline's micro-batch slot, a step). A key not fitted falls back to its
``any`` form (the geometric
mean over what was fitted: an engine or a chip generation with no measured runs).
The intervals (``intervals``) are the 10th and 90th percentiles of measured over
estimated for the held-out runs of each regime, with their count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["FRACTIONS_FILE", "Fractions", "Interval", "fractions"]

FRACTIONS_FILE = Path(__file__).parent / "data" / "fractions.json"
"""Where the fit writes the fractions."""


@dataclass(frozen=True)
class Interval:
    """Measured over estimated for ``share`` of the held-out runs of one regime: from
    ``low`` to ``high``, over ``runs`` runs."""

    low: float
    high: float
    share: float
    runs: int


@dataclass(frozen=True)
class Fractions:
    """The fitted values by key, the intervals by regime, and what they were fitted
    on (``basis``: the models fitted on and held out, the runs of each)."""

    values: dict[str, float]
    intervals: dict[str, Interval]
    basis: dict

    def value(self, key: str) -> float:
        """The value ``key`` names, or its ``any`` form where it was not fitted."""
        if key in self.values:
            return self.values[key]
        head, _, tail = key.partition(":")
        parts = tail.split(":")
        for i in range(len(parts)):
            guess = ":".join([head, *parts[:i], "any", *parts[i + 1:]])
            if guess in self.values:
                return self.values[guess]
        raise ValueError(f"no fitted fraction called {key!r}")

    def interval(self, regime: str) -> Interval:
        """The interval of ``regime``, or of its quantity's ``any`` regime."""
        if regime in self.intervals:
            return self.intervals[regime]
        head = regime.split(",")[0]
        return self.intervals[f"{head}, any"]


@lru_cache(maxsize=4)
def fractions(path: str | None = None) -> Fractions:
    """The fractions in ``path`` (by default the shipped file)."""
    data = json.loads(Path(path or FRACTIONS_FILE).read_text(encoding="utf-8"))
    return Fractions(
        values=dict(data["values"]),
        intervals={k: Interval(**v) for k, v in data["intervals"].items()},
        basis=data["basis"],
    )
