"""Every training plan that fits a goal on so many chips, ranked by tokens a second a
chip (the same order as dollars a million tokens at one price a chip-hour).

A goal fixes the global batch (sequences a step over every copy of the model) and the
sequence length, so every candidate's step carries the same tokens a chip: a faster
step is a faster plan. The search walks the structures (``space.groups``: tp within a
machine, cp, pp, dp, and ep for a mixture of experts), the interleaved schedule (v = 2
where the micro-batches are a multiple of the stages), the micro-batches, the ZeRO
stages 3, 2 and 0 (``ZERO_STAGES``) and the weight formats allowed; for each it takes
the least recomputation that fits, since recomputing more only adds time
(``test_plan`` holds this against an enumeration of every choice). A structure
whose lightest choice (most micro-batches, full recomputation, ZeRO 2 and 3) does not
fit is dropped whole: those choices only take memory away. Every figure is
``splits.training_split``'s, a roofline floor; beside each plan that fits stands the
estimate ``train`` prints for the same step (``estimate.report.training_estimate``:
tokens a second a chip expected on a real run, with its interval), which does not
change the ranking.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..counting.activations import RECOMPUTE
from ..counting.training import Training, bytes_per_parameter
from ..counting.costs import parameters
from ..estimate.report import training_estimate
from .space import MOST_CP, Space, divisors, expert_sizes, groups
from ..splits import training_split

__all__ = ["TrainingGoal", "training_plans", "micro_batch_choices", "candidate",
           "ZERO_STAGES"]

ZERO_STAGES = (3, 2, 0)
"""The ZeRO stages searched, most sharded first. Stage 1 is left out: it hands on the
same collectives as stage 2 (a reduce-scatter of the gradients, an all-gather of the
weights) and holds more, so it is never the faster of the two (``test_plan`` holds
this against an enumeration that includes it)."""


@dataclass(frozen=True)
class TrainingGoal:
    """A training run: ``tokens`` in all, sequences of ``seq_len`` tokens,
    ``global_batch`` sequences a step over every copy of the model, and its
    ``optimizer``."""

    tokens: int
    seq_len: int
    global_batch: int
    optimizer: str = "adamw"


def micro_batch_choices(batch: int, pp: int) -> list[int]:
    """Micro-batch counts tried for ``batch`` sequences a copy over ``pp`` stages: the
    divisors of the batch from the stages up (all of them when the batch is smaller),
    at most three: the fewest, the middle one and the most."""
    ok = [d for d in divisors(batch) if d >= min(pp, batch)]
    return sorted({ok[0], ok[len(ok) // 2], ok[-1]})


def _training(goal: TrainingGoal, dp: int, zero: int, recompute: str,
              mb: int) -> Training:
    return Training(batch=goal.global_batch // dp, seq_len=goal.seq_len,
                    optimizer=goal.optimizer, recompute=recompute, zero_stage=zero,
                    devices=dp, micro_batches=mb)


def candidate(model, chip, split, t: Training, goal: TrainingGoal,
              fmt: str) -> dict | None:
    """One plan's figures (None: the splits package refuses it)."""
    key = (id(model), split, t)
    if key not in _SEEN:
        _SEEN[key] = _candidate(model, chip, split, t, goal, fmt)
    return _SEEN[key]


_SEEN: dict = {}
"""The candidates of the search under way (``training_plans`` empties it)."""

_MADE: dict = {}
"""For each candidate of the search under way (by ``id``), what made it: the model,
the split, the training step and the split's figures (for its estimate)."""


def _candidate(model, chip, split, t, goal, fmt) -> dict | None:
    try:
        f = training_split(model, chip, split, t, goal.tokens)
    except ValueError:
        return None
    exposed = sum(f["exposed_communication_seconds"].values())
    c = {
        "weights": fmt, "tp": split.tp, "cp": split.cp, "pp": split.pp,
        "dp": split.dp, "ep": split.ep, "virtual_stages": split.virtual_stages,
        "micro_batches": split.micro_batches, "batch_per_copy": t.batch,
        "zero_stage": t.zero_stage, "recompute": t.recompute,
        "fits": f["fits"], "memory_bytes": f["memory_bytes"],
        "step_seconds_floor": f["step_seconds"],
        "time_by_cause_seconds": {
            "arithmetic": f["arithmetic_seconds"],
            "pipeline bubble": f["bubble_seconds"],
            "exposed communication": exposed,
            "optimizer step": f["optimizer_seconds"]},
        "tokens_per_s_floor": f["tokens_per_s"],
        "tokens_per_s_per_chip": f["tokens_per_s"] / split.devices,
        "model_flops_utilisation_at_floor": f["model_flops_utilisation"],
        "training_seconds_floor": f["training_seconds"],
        "chip_hours_floor": f["chip_hours"], "notes": f["notes"],
    }
    _MADE[id(c)] = (model, chip, split, t, f)
    return c


def _estimate(made: tuple) -> dict | None:
    """The plan's expected tokens a second a chip, as ``train`` gives it for the same
    step (None where the estimate cannot price the step's formats)."""
    try:
        return training_estimate(*made)
    except ValueError:
        return None


def _lightest_fits(model, chip, space, g, goal, fmt) -> tuple[bool, float]:
    """Whether the structure's lightest choices fit, and the least memory they need."""
    tp, cp, pp, dp, ep, v = g
    batch = goal.global_batch // dp
    mb = micro_batch_choices(batch, pp)[-1]
    least = float("inf")
    for zero in ({2, 3} if dp > 1 and ep <= tp else {0}):
        s = space.split(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, virtual_stages=v,
                        micro_batches=mb)
        c = candidate(model, chip, s, _training(goal, dp, zero, "full", mb), goal, fmt)
        if c is not None:
            least = min(least, c["memory_bytes"])
            if c["fits"]:
                return True, least
    return False, least


def structures(model, space: Space, goal: TrainingGoal):
    """(tp, cp, pp, dp, ep, v) the search walks for ``model``."""
    for tp, cp, pp, dp in groups(model, space, MOST_CP, goal.seq_len):
        if goal.global_batch % dp:
            continue
        for ep in expert_sizes(model, tp, dp):
            for v in (1, 2) if pp > 1 else (1,):
                yield tp, cp, pp, dp, ep, v


def _plans_of(model, chip, space, g, goal, fmt) -> list[dict]:
    """The fitting plans of one structure: each micro-batch count and ZeRO stage with
    the least recomputation that fits. Memory falls as the ZeRO stage or the
    recomputation rises, so the least recomputation that fits falls (or stays) as the
    stage rises: walked from ZeRO 3 down, each stage starts where the one above
    ended."""
    tp, cp, pp, dp, ep, v = g
    found = []
    stages = ZERO_STAGES if dp > 1 and ep <= tp else (0,)
    for mb in micro_batch_choices(goal.global_batch // dp, pp):
        if v > 1 and mb % pp:
            continue
        s = space.split(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, virtual_stages=v,
                        micro_batches=mb)
        start = 0
        for zero in stages:
            for r in range(start, len(RECOMPUTE)):
                c = candidate(model, chip, s, _training(goal, dp, zero, RECOMPUTE[r],
                                                        mb), goal, fmt)
                if c is None:
                    break
                if c["fits"]:
                    found.append(c)
                    start = r
                    break
            else:
                break  # nothing fits at this stage: less sharding fits less
    return found


def rank_key(c: dict) -> tuple:
    """The ranking: tokens a second a chip, most first; then less memory a device,
    fewer stages, less tensor parallel (a stable, stated order)."""
    return (-c["tokens_per_s_per_chip"], c["memory_bytes"], c["pp"], c["tp"], c["cp"],
            c["ep"], c["virtual_stages"], c["micro_batches"], c["zero_stage"],
            c["weights"])


def training_plans(chip, space: Space, goal: TrainingGoal) -> dict:
    """Every plan that fits ``goal`` in ``space``, ranked (``rank_key``), with what
    was searched and, when none fits, the least memory a device any structure needs."""
    plans, searched, least, states = [], 0, float("inf"), []
    _SEEN.clear()
    _MADE.clear()
    for fmt, model in space.formats.items():
        state = bytes_per_parameter(model, _training(goal, 1, 0, "full", 1))
        states.append(state * parameters(model))
        if states[-1] > space.chips * chip.memory_bytes:
            continue  # the weights and their states alone outgrow every chip
        for g in structures(model, space, goal):
            searched += 1
            ok, need = _lightest_fits(model, chip, space, g, goal, fmt)
            least = min(least, need)
            if ok:
                plans += _plans_of(model, chip, space, g, goal, fmt)
    plans.sort(key=rank_key)
    for c in plans:
        c["tokens_per_s_per_chip_estimate"] = _estimate(_MADE[id(c)])
    _SEEN.clear()
    _MADE.clear()
    return {"goal": "training", "structures_searched": searched, "plans": plans,
            "least_memory_bytes": None if least == float("inf") else least,
            "model_state_bytes": min(states),
            "chips_memory_bytes": space.chips * chip.memory_bytes}
