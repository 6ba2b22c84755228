"""Each measured run against the calculator: its floor (the bound no real run beats),
the estimate with its interval, the measurement and their ratios, or the one-line
reason it cannot be expressed. A disaggregated run that does not say its workers'
counts (``setup.WORKER_COUNTS``) is expressed by its floors alone: each quantity has
its ``floor``, ``measured`` and the reason its estimate is refused
(``estimate_refused``) in place of the estimate and its interval.

Times are in milliseconds, rates in tokens a second a chip, memory in GiB, the
model-flops utilisation a fraction. A run faster than its floor is flagged with the
likeliest cause the calculator can name (``below_floor``).
"""

from __future__ import annotations

from ..estimate.fractions import Fractions, fractions
from ..estimate.interval import REGIME_NAMES, estimate_with_interval
from ..estimate.serving import Estimate, serving_parts, tpot_seconds, ttft_seconds
from ..estimate.training import training_parts, training_tokens_per_s
from . import floors
from .runs import Run
from .setup import serving_setup, training_setup

__all__ = ["check_run", "check_runs", "estimate_refused"]


_LEFT_UNKNOWN = {"batch": "each decode worker's batch",
                 "prefill_workers": "the prompt workers' rate",
                 "decode_workers": "the requests the prompt workers serve"}


def _listed(names) -> str:
    names = list(names)
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def estimate_refused(unknown: tuple[str, ...]) -> str:
    """Why a disaggregated run leaving out the options ``unknown`` (of
    ``setup.WORKER_COUNTS``) has floors but no estimate (one line)."""
    head = ("the worker counts are not recorded" if set(unknown) - {"batch"}
            else "the decode workers' batch is not recorded")
    return (f"{head}: a disaggregated run without {_listed(unknown)} leaves "
            f"{_listed(_LEFT_UNKNOWN[n] for n in unknown)} unknown (its floors hold "
            "whatever they are)")


def _figures(est: Estimate, measured: float | None) -> dict:
    out = est.as_dict()
    if measured is not None:
        out["measured"] = measured
        out["measured_over_estimate"] = measured / est.estimate
        out["measured_over_floor"] = measured / est.floor
        beaten = measured < est.floor if est.bound == "least" else measured > est.floor
        out["below_floor"] = bool(beaten)
    return out


def _why_tpot(s, measured_s: float) -> str:
    one = floors.tpot_floor(s, 1)
    if measured_s < one:
        return ("faster than a single conversation's decode step can read its "
                "weights: more than one token a step (speculative decoding or "
                "multi-token prediction, which the table does not record) or a run "
                "that is not the one its row describes")
    return ("faster than the run's batch allows: the engine decoded fewer "
            "conversations at once than were in flight")


_WHY_RATE = ("more tokens a second than the running conversations' decode steps "
             "allow: the engine ran more at once than fit by this count")
_WHY_TTFT = ("faster than the prompt's own pass: part of the prompt was cached or "
             "skipped")


def _floor_only(run: Run, s) -> dict:
    """A run's floors without an estimate: the decode step at ``least_batch`` on one
    decode worker, the prompt's pass alone on one prompt worker."""
    batch = floors.least_batch(s)
    why = estimate_refused(s.unknown)
    out: dict = {"batch": batch, "estimate_refused": why}
    for q, floor in (("tpot_ms", floors.tpot_floor(s, batch) * 1e3),
                     ("ttft_ms", floors.ttft_floor(s) * 1e3)):
        f = {"floor": floor, "estimate_refused": why,
             "regime": f"{REGIME_NAMES[q]}, disaggregated", "unit": "ms",
             "bound": "least"}
        measured = run.measured.get(q)
        if measured is not None:
            f.update(measured=measured, measured_over_floor=measured / floor,
                     below_floor=bool(measured < floor))
            if f["below_floor"]:
                f["why"] = (_why_tpot(s, measured / 1e3) if q == "tpot_ms"
                            else _WHY_TTFT)
        out[q] = f
    rate = run.measured.get("tokens_per_s_per_chip")
    if rate is not None and s.batch is not None:
        floor = batch * s.split.dp / (out["tpot_ms"]["floor"] / 1e3) / s.split.devices
        out["tokens_per_s_per_chip"] = {
            "floor": floor, "estimate_refused": why, "unit": "tokens/s/chip",
            "regime": out["tpot_ms"]["regime"], "bound": "most",
            "measured": rate, "measured_over_floor": rate / floor,
            "below_floor": bool(rate > floor)}
        if rate > floor:
            out["tokens_per_s_per_chip"]["why"] = _WHY_RATE
    elif rate is not None:
        out["tokens_per_s_per_chip"] = {
            "measured": rate, "unit": "tokens/s/chip", "estimate_refused": why,
            "floor_refused": "no bound without the batch: more conversations a "
                             "decode worker give more tokens a second"}
    return out


def _serving(run: Run, fr: Fractions) -> dict:
    s = serving_setup(run)
    if s.unknown:
        return _floor_only(run, s)
    running = floors.running_batch(s)
    batch = s.batch if s.batch is not None else running
    p = serving_parts(s.stages, s.prefill_stages, s.chip, s.split, s.prefill_split,
                      s.prompt, s.answer, batch, s.engine, s.disaggregated,
                      s.engine_version,
                      s.decode_copies, s.prefill_copies)
    engine = "disaggregated" if s.disaggregated else p.engine
    out: dict = {"batch": batch, "running": p.running}
    floor = floors.tpot_floor(s, running)
    tpot = estimate_with_interval("tpot_ms", engine, floor * 1e3,
                                  tpot_seconds(p, fr) * 1e3, fr, "ms", "least")
    ttft = estimate_with_interval("ttft_ms", engine, floors.ttft_floor(s) * 1e3,
                                  ttft_seconds(p, fr) * 1e3, fr, "ms", "least")
    # tokens a second a chip from ms between tokens: each attention-data-parallel
    # rank runs its own conversations
    per_chip = 1e3 * s.split.dp / s.split.devices
    rate = Estimate(  # the running conversations' tokens a second: the most possible
        "tokens_per_s_per_chip", "tokens/s/chip", "most",
        running * s.split.dp / floor / s.split.devices,
        p.running / tpot.estimate * per_chip,
        p.running / tpot.high * per_chip, p.running / tpot.low * per_chip, tpot.share,
        tpot.runs, tpot.regime)
    for est in (tpot, ttft, rate):
        if est is rate and est.quantity not in run.measured:
            continue
        measured = run.measured.get(est.quantity)
        out[est.quantity] = _figures(est, measured)
        if out[est.quantity].get("below_floor"):
            out[est.quantity]["why"] = (
                _why_tpot(s, measured / 1e3) if est.quantity == "tpot_ms" else
                _WHY_TTFT if est.quantity == "ttft_ms" else _WHY_RATE)
    return out


def _training(run: Run, fr: Fractions) -> dict:
    t = training_setup(run)
    figures = floors.training_figures(t)
    p = training_parts(t, figures)
    est = estimate_with_interval("tokens_per_s_per_chip", "any", p.floor,
                                 training_tokens_per_s(p, fr), fr,
                                 "tokens/s/chip", "most")
    out = {"tokens_per_s_per_chip": _figures(est, run.measured.get(
        "tokens_per_s_per_chip"))}
    if out["tokens_per_s_per_chip"].get("below_floor"):
        out["tokens_per_s_per_chip"]["why"] = (
            "faster than the step train computes: the run hides part of its "
            "collectives under the arithmetic, which the step adds in full")
    mfu = figures["model_flops_utilisation"]
    if "mfu" in run.measured:
        out["mfu"] = {"floor": mfu, "measured": run.measured["mfu"], "bound": "most",
                      "unit": "fraction",
                      "measured_over_floor": run.measured["mfu"] / mfu,
                      "below_floor": run.measured["mfu"] > mfu}
    if "memory_gib" in run.measured:  # the first stage's device: rank 0 measured it
        gib = figures["devices"][0]["memory_bytes"] / 2**30
        out["memory_gib"] = {"counted": gib, "measured": run.measured["memory_gib"],
                             "unit": "GiB", "stage": 0, "measured_over_counted":
                             run.measured["memory_gib"] / gib}
    return out


def check_run(run: Run, fr: Fractions | None = None) -> dict:
    """One run's figures (``check``'s JSON object for it)."""
    fr = fr or fractions()
    head = {"row": run.row, "id": run.id, "command": run.command,
            "model": run.options.get("model")}
    if run.refused:
        return {**head, "refused": run.refused}
    try:
        body = _serving(run, fr) if run.command == "report" else _training(run, fr)
    except (ValueError, ArithmeticError, OSError) as err:
        return {**head, "refused": " ".join(str(err).split())}
    chip = run.options.get("chip")
    return {**head, "chip": chip, "engine": run.options.get("engine"), **body}


def check_runs(runs: list[Run], fr: Fractions | None = None) -> list[dict]:
    """Every run's figures, in the file's order."""
    fr = fr or fractions()
    return [check_run(r, fr) for r in runs]
