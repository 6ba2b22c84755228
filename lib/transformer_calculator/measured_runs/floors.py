"""The floors of a measured run: the least time (or the most tokens a second) the
calculator's roofline allows, never an estimate.

- time to the first token: the prompt's own pass, alone, on its devices (every other
  request in flight only adds to it, and a disaggregated run's prompt workers are
  counted one: a pass on one worker of its split, with no queue);
- time between tokens: the mean decode step over the answer, at the run's batch (the
  conversations whose caches fit at once, at most: an engine cannot run more), each
  pipeline stage in turn; the collectives between devices are left out, since an
  engine may hide them under the arithmetic; a disaggregated run that does not say its
  decode workers' batch is held at one conversation (``least_batch``), the fewest a
  worker could hold;
- training: the step ``train`` computes, its tokens a second a chip the most, and its
  model-flops utilisation the most.
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..service.serving import Serving, largest_batch, request_times
from ..counting.costs import prefill_time
from ..splits import training_split
from .setup import ServingSetup, TrainingSetup

__all__ = ["running_batch", "least_batch", "tpot_floor", "ttft_floor",
           "training_figures"]

WHOLE_MEMORY = Serving(memory_utilization=1.0, block_size=1)
"""The engine at its most: every byte of the chip's memory for weights and cache."""


def running_batch(s: ServingSetup) -> int:
    """Conversations decoding at once: the run's batch, or as many whole conversations
    (prompt and answer) as fit beside the weights on the fullest device, if fewer."""
    tokens = s.prompt + s.answer
    fit = min(largest_batch(st, s.chip, tokens, WHOLE_MEMORY) for st in s.stages)
    if fit < 1:
        raise ValueError(f"not one conversation of {tokens:,} tokens fits beside the "
                         "weights on a device, by this count")
    return fit if s.batch is None else min(s.batch, fit)


def least_batch(s: ServingSetup) -> int:
    """Conversations a floor-only run's decode step is held at: its batch (at most as
    many as fit) when given, else 1, the fewest a decode worker could hold, so that
    the floor holds whatever the number of workers."""
    running = running_batch(s)  # a ValueError when not one conversation fits
    return running if s.batch is not None else 1


@lru_cache(maxsize=8192)  # the fit and the check price the same runs
def tpot_floor(s: ServingSetup, batch: int) -> float:
    """Seconds of the mean decode step over the answer at ``batch`` conversations."""
    return math.fsum(
        request_times(st, s.chip, s.prompt, max(s.answer, 2), batch).mean_step
        for st in s.stages
    )


@lru_cache(maxsize=8192)
def ttft_floor(s: ServingSetup) -> float:
    """Seconds of the prompt's own pass on its devices."""
    return math.fsum(prefill_time(st, s.chip, s.prompt, 1)
                     for st in s.prefill_stages)


@lru_cache(maxsize=8192)  # the fit, the check and the memory table price each run
def training_figures(t: TrainingSetup) -> dict:
    """What ``train`` computes for the run: the step's memory, time, tokens a second
    and utilisation (its time is the floor); one dict a run, shared by its callers,
    which read it and never change it."""
    return training_split(t.model, t.chip, t.split, t.training, 10**9)
