"""The calculator's training plans held against the Ultra-Scale Playbook's 1,758 measured
nanotron runs that fit (``tests/playbook_runs.py``: each run's split, ZeRO stage,
micro-batches and gradient accumulation, nanotron's shapes, stage placement and trainer
settings), without PyTorch.

- **The floor is never beaten.** Every run's step takes at least the calculator's floor at
  the H100's full rates, every collective hidden where a schedule can hide it.
- **Peak memory**, the first pipeline stage's device (nanotron writes rank 0's peak), against
  the table's "GPU memory" (nanotron's ``max_memory_allocated`` or ``max_memory_reserved``
  over 1024**3; which of the two the playbook plots is not stated). The test pins the
  distribution this calculator reaches, so that a change that moves it shows; the numbers and
  what is left unexplained are in the report of the round (below 10 % for about a quarter of
  the runs; a median of 0.85; the misses grow with tensor parallel: see
  ``test_the_misses_grow_with_tensor_parallel``).
"""
from __future__ import annotations

import statistics

import pytest

import playbook_runs as pb
from transformer_calculator.splits import training_split

pytestmark = pytest.mark.slow(seconds=6)


@pytest.fixture(scope="module")
def priced():
    """(run, the calculator's figures) for every run that fit."""
    out = []
    for run in pb.runs():
        if run.memory_gib is None:
            continue
        figures = training_split(pb.model(run.model), pb.H100, run.split(), run.training(),
                                 10**9)
        out.append((run, figures))
    return out


def test_every_run_that_fit_is_expressible(priced):
    assert len(priced) == 1758  # 1,529 of the 3,287 rows ran out of memory or failed


def test_no_run_beats_the_floor(priced):
    """Measured time a step (a global batch of 256 sequences over all GPUs) is never below the
    floor: the step at the chip's full rates with every collective hidden."""
    ratios = []
    for run, f in priced:
        gpus = run.dp * run.tp * run.pp
        measured = run.dp * run.mbs * run.grad_acc * pb.SEQ / (run.tokens_per_s_per_gpu * gpus)
        ratios.append(f["floor_seconds"] / measured)
    assert max(ratios) <= 1, max(ratios)
    assert 0.1 < statistics.median(ratios) < 0.2


def _ratio(run, f) -> float:
    """Predicted over measured peak memory of the run's first stage."""
    return f["devices"][0]["memory_bytes"] / 2**30 / run.memory_gib


def test_peak_memory_distribution(priced):
    ratios = [_ratio(run, f) for run, f in priced]
    within = sum(abs(q - 1) <= 0.10 for q in ratios) / len(ratios)
    assert 0.84 < statistics.median(ratios) < 0.86
    assert within > 0.25
    without_tp = [_ratio(run, f) for run, f in priced if run.tp == 1]
    assert sum(abs(q - 1) <= 0.10 for q in without_tp) / len(without_tp) > 0.6


def test_the_misses_grow_with_tensor_parallel(priced):
    """What the calculator does not count grows with N_tp at a fixed run: a part of each
    token's memory the measured runs do not cut by N_tp (about 0.8 GiB a sequence of 4,096 at
    the 1B model's tp 16 and 32), consistent with runs in nanotron's ALL_REDUCE mode (no
    sequence parallelism: each layer's d-wide inputs kept whole) beside its REDUCE_SCATTER
    mode, which the table does not tell apart."""
    medians = []
    for tp in (1, 4, 16):
        ratios = [_ratio(run, f) for run, f in priced if run.tp == tp and run.model == "1B"]
        medians.append(statistics.median(ratios))
    assert medians[0] > 0.93 and medians[0] > medians[1] > medians[2]
