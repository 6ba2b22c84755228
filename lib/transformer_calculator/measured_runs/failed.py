"""Measured training runs taken for failed jobs: a run far slower than its twins
(``failed_runs``), which the fit checks but does not fit."""

from __future__ import annotations

import numpy as np

__all__ = ["FAILED_SHARE", "failed_runs"]

FAILED_SHARE = 5.0
"""How many times slower than its twin a training run must be to count as a failed
job (``failed_runs``)."""


def _shape(o: dict) -> tuple:
    """A training run's model, split, ZeRO stage and micro-batch (sequences)."""
    return (o["model"], o["tp"], o["pp"], o["devices"], o["zero_stage"],
            int(o["batch"]) // int(o["micro_batches"]))


def failed_runs(runs: list) -> set[str]:
    """The ids of measured training runs taken for failed jobs, so not fitted (their
    errors still count): a run measured below 1 / ``FAILED_SHARE`` of the median of
    its twins, the runs of the same model and split that differ only by the ZeRO
    stage, or only by a micro-batch half as large (twice as many of them: the same
    work, which a larger micro-batch does not slow five-fold), or only by half the
    data-parallel copies (half the nodes and twice the micro-batches: with compute c
    and collectives d a step there, the rate falls (c + 2 k d) / (c + d), at most
    2 k, where the collectives slow k-fold; the playbook's measured bandwidth falls
    at most 2.5-fold from n to 2 n nodes)."""
    done = [r for r in runs
            if not r.refused and "tokens_per_s_per_chip" in r.measured]
    by: dict[tuple, list[float]] = {}
    for r in done:
        by.setdefault(_shape(r.options), []).append(
            r.measured["tokens_per_s_per_chip"])
    out = set()
    for r in done:
        *split, zero, mb = _shape(r.options)
        twins = [v for z in ("0", "1", "2", "3") if z != zero
                 for v in by.get((*split, z, mb), [])]
        halves = by.get((*split, zero, mb // 2), []) if mb > 1 else []
        model, tp, pp, dp = split
        fewer = by.get((model, tp, pp, str(int(dp) // 2), zero, mb), []) \
            if int(dp) > 1 else []
        rate = r.measured["tokens_per_s_per_chip"]
        if any(t and rate < float(np.median(t)) / FAILED_SHARE
               for t in (twins, halves, fewer)):
            out.add(r.id)
    return out
