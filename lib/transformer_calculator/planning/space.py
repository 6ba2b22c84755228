"""What the plan search varies: the chips, the formats allowed, the overlap chosen, and
the structures (tensor, context, pipeline, data and expert parallel) it walks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..anatomy.model import Model
from ..splits import Split, check_split
from ..splits.checks import experts_of

__all__ = ["Space", "divisors", "tp_sizes", "expert_sizes", "MOST_CP", "MOST_PLANS"]

MOST_CP = 8
"""Largest context-parallel group the search tries."""

MOST_PLANS = 5
"""Plans the text shows (the JSON gives them all)."""


@dataclass(frozen=True)
class Space:
    """The search's room: ``chips`` devices, ``machine`` of them joined by one
    machine's link (tensor parallel stays inside one), the weight ``formats`` allowed
    (name to the model stored so), the links and ``overlap`` every candidate shares."""

    chips: int
    machine: int
    formats: dict[str, Model] = field(hash=False)
    links: dict = field(default_factory=dict, hash=False)
    overlap: bool = False

    def split(self, **groups) -> Split:
        """A split of this space's links and overlap with the ``groups`` given."""
        return Split(**groups, overlap=self.overlap, **self.links)


def divisors(n: int) -> list[int]:
    """Every whole number that divides ``n``, smallest first."""
    return [d for d in range(1, n + 1) if n % d == 0]


def tp_sizes(model: Model, space: Space) -> list[int]:
    """Tensor-parallel sizes that divide both the chips and the model, within one
    machine (the splits package's checks decide what the model takes)."""
    out = []
    for tp in divisors(space.chips):
        if tp > space.machine:
            continue
        try:
            check_split(model, Split(tp=tp))
        except ValueError:
            continue
        out.append(tp)
    return out


def expert_sizes(model: Model, tp: int, dp: int) -> list[int]:
    """Expert-parallel sizes a stage of ``tp`` x ``dp`` devices takes: 1 for a dense
    model, else each divisor of tp x dp that tp divides or that divides tp."""
    if experts_of(model) is None:
        return [1]
    return [e for e in divisors(tp * dp) if e % tp == 0 or tp % e == 0]


def groups(model: Model, space: Space, most_cp: int, seq_len: int | None
           ) -> Iterator[tuple[int, int, int, int]]:
    """(tp, cp, pp, dp) with tp x cp x pp x dp = the chips, pp at most the layers and
    cp only where a sequence of ``seq_len`` cuts into 2 cp pieces (None: no cp)."""
    layers = len(model.layout.blocks)
    for tp in tp_sizes(model, space):
        for cp in divisors(space.chips // tp):
            if cp > 1 and (seq_len is None or cp > most_cp or seq_len % (2 * cp)):
                continue
            for pp in divisors(space.chips // (tp * cp)):
                if pp <= layers:
                    yield tp, cp, pp, space.chips // (tp * cp * pp)
