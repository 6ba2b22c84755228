"""The fit of the estimate's fractions of peak to the shipped measured runs, split by
model: fitted on the runs of some models, the error and the intervals measured on the
others (``HELD_OUT``). Run it to rewrite ``estimate/data/fractions.json``:

    python -m transformer_calculator.measured_runs.fit

Each value is found by coordinate descent on the mean absolute log error of the
fitted runs' time between tokens and time to the first token (and, for training,
tokens a second), every kernel's fraction of peak held at most 1. Training is priced
as ``estimate.training`` prices it: micro-batch slots, each the stage's own share and
its device costs with the schedule's fixed times (added; the longer of the two in a
pipeline), and the step's own costs. It is
deterministic: the same runs give the same file, its values rounded to four
significant figures. It needs numpy (the calculator itself does not).

Serving is fitted in three stages (``_serving_fit``): the values a decode step uses
to the times between tokens, then the rest (a prompt's pass, the first token's fixed
times and waits) to the times to the first token, then the share of prompt passes a
decode step waits for again; so the first token's terms cannot pull the decode
step's fractions. The serving runs with attention data parallel are checked (their
errors count among the held-out models' and their regimes') but not fitted: fitted,
they pull the other runs' fractions away. A row repeating another's measurement is
left out (``repeats``). Training runs taken for failed jobs (a run five times slower
than its twins: ``failed_runs``) are checked but not fitted.

The first token's fixed times are keyed by the engine alone, not by its version (nor
its chip's generation, nor its host's processor): keyed so, they fit the fitted
models' first tokens better and the held-out models' worse, from every start tried.
A version's fitted runs are mostly one or two models', so its fixed time takes up
what those models' prompt passes miss, and the least first token measured within
one version and chip differs by model several times over: the fixed time follows
the model, not the engine's build.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass

import numpy as np

from ..estimate.fractions import FRACTIONS_FILE, Fractions, Interval
from ..estimate.serving import ROUNDS, serving_parts
from ..estimate.training import training_parts
from . import conversion, floors
from .failed import failed_runs
from .repeats import repeats
from .runs import read_runs, write_runs
from .setup import serving_setup, training_setup
from .vectors import Vectors, key_index, keys_index

__all__ = ["HELD_OUT", "START", "FIXED", "serving_cases", "training_cases",
           "fit", "main"]

HELD_OUT = ("deepseek-v3-fp8", "deepseek-v3.1-nvfp4", "llama-3.1-70b",
            "qwen3-235b-a22b-fp8", "gpt-oss-120b", "playbook-3b", "playbook-80b",
            "qwen3.5-397b-a17b", "glm-5")
"""Models whose runs are held out of the fit: the error and the intervals are theirs.
One of each pair of a family stays out (DeepSeek-V3 beside R1, Llama-3.1-70B beside
8B, Qwen3-235B beside 32B, the playbook's 3B and 80B beside 1B and 8B), and gpt-oss,
Qwen3.5 and GLM-5 whole (Gated DeltaNet and sparse attention are then tested unseen).
DeepSeek-V3 has R1's shape: its runs are unseen runs of a seen shape (``repeats``)."""

START = {"compute": 1.6, "read": 1.25, "expert compute": 2.0, "expert read": 1.5,
         "prefill compute": 1.6, "prefill expert compute": 2.0,
         "prefill expert": 1e-5, "prefill attention compute": 2.0, "prefill read": 1.25,
         "attention compute": 2.0, "attention read": 1.5, "prefill attention read": 1.5,
         "layer": 2e-5, "expert layer": 1e-5, "step": 1e-3, "latency": 1.0,
         "link": 1.5, "interference": 1.0,
         "first token": 0.02, "first token layer": 2e-4, "queue": 1.0,
         "disaggregated": 2.0, "disaggregated queue": 1.0, "burst": 1.0,
         "train compute": 2.0, "train read": 1.5, "train tp step": 1e-4,
         "train tp link": 1.0, "train dp link": 1.0, "train dp gather": 1.0,
         "train pp latency": 1.0, "train pp link": 1.0, "train layer": 1e-3,
         "train pp layer": 1e-3, "train pp slot": 1e-3, "train fixed": 0.1}
"""Where the descent starts, by the key's first part."""

LOWEST = dict.fromkeys(("compute", "read", "expert compute", "expert read",
                        "prefill compute", "prefill expert compute", "prefill read",
                        "train compute", "train read", "attention compute",
                        "attention read", "prefill attention compute",
                        "prefill attention read"), 1.0)
"""Bounds below: a kernel never beats its roof (a fraction of peak at most 1)."""

HIGHEST: dict[str, float] = {}

FIXED = {"interference:sglang": 1.0}
"""Values an engine's code sets, never fitted: SGLang runs prompt batches alone unless
``--enable-mixed-chunk`` (sglang ``srt/server_args.py``): a decode waits every pass."""


@dataclass
class Case:
    """One measured quantity of one run, as the fit sees it."""

    run: str
    model: str
    quantity: str
    measured: float
    parts: object
    regime: str
    floor: float
    fitted: bool = True


def _regime(quantity: str, engine: str) -> str:
    names = {"tpot_ms": "time between tokens", "ttft_ms": "time to the first token",
             "tokens_per_s_per_chip": "training tokens a second a chip"}
    return f"{names[quantity]}, {engine}"


def serving_cases() -> list[Case]:
    """Every expressible serving run's two measured times, each measurement once."""
    out, rows = [], conversion.serving_rows()
    again = repeats(rows, frozenset(HELD_OUT))
    for run in read_runs(write_runs([r for r in rows if r["id"] not in again])):
        if run.refused:
            continue
        try:
            s = serving_setup(run)
            if s.unknown:  # its workers' counts unknown: floors only, never fitted
                continue
            b = floors.running_batch(s)
            floor_tpot, floor_ttft = floors.tpot_floor(s, b), floors.ttft_floor(s)
        except ValueError:
            continue
        p = serving_parts(s.stages, s.prefill_stages, s.chip, s.split, s.prefill_split,
                          s.prompt, s.answer, b, s.engine, s.disaggregated,
                          s.engine_version, s.decode_copies, s.prefill_copies)
        regime_engine = "disaggregated" if s.disaggregated else p.engine
        plain = s.split.dp == 1 and s.prefill_split.dp == 1
        for q, floor in (("tpot_ms", floor_tpot), ("ttft_ms", floor_ttft)):
            out.append(Case(run.id, run.options["model"], q, run.measured[q] / 1e3, p,
                            _regime(q, regime_engine), floor, plain))
    return out


def training_cases() -> list[Case]:
    """Every measured training run's tokens a second a chip (the failed jobs,
    ``failed_runs``, checked but not fitted)."""
    out = []
    runs = read_runs(write_runs(conversion.training_rows()))
    failed = failed_runs(runs)
    for run in runs:
        if run.refused or "tokens_per_s_per_chip" not in run.measured:
            continue
        try:
            t = training_setup(run)
            figures = floors.training_figures(t)
        except ValueError:
            continue
        p = training_parts(t, figures)
        out.append(Case(run.id, run.options["model"], "tokens_per_s_per_chip",
                        run.measured["tokens_per_s_per_chip"], p,
                        _regime("tokens_per_s_per_chip", "any"), p.floor,
                        run.id not in failed))
    return out


class Model:
    """Every case priced by one vector of values, as ``estimate.serving`` and
    ``estimate.training`` price them one at a time."""

    def __init__(self, cases: list[Case]):
        self.cases = cases
        self.keys: dict[str, int] = {}
        serving = [c for c in cases if c.quantity != "tokens_per_s_per_chip"]
        parts = {id(c.parts): c.parts for c in serving}
        self.parts = list(parts.values())
        where = {pid: i for i, pid in enumerate(parts)}
        engines = [p.engine for p in self.parts]
        self.step = Vectors([list(p.step) for p in self.parts], self.keys, engines)
        self.prefill = Vectors([list(p.prefill) for p in self.parts], self.keys,
                               engines, summed=True)
        k = self.keys
        self.k_interf = keys_index(k, "interference:{e}", engines)
        self.k_first = keys_index(k, "first token:{e}", engines)
        self.k_first_layer = keys_index(k, "first token layer:{e}", engines)
        self.layers = np.array([p.layers for p in self.parts], dtype=float)
        self.k_queue = keys_index(k, "queue:{e}", engines)
        self.k_dis = keys_index(k, "disaggregated:any", engines)
        self.k_dis_queue = keys_index(k, "disaggregated queue:any", engines)
        self.k_burst = keys_index(k, "burst:{e}", engines)
        self.prompt = np.array([p.prompt for p in self.parts], dtype=float)
        self.step_tokens = np.array([p.step_tokens for p in self.parts], dtype=float)
        self.clients = np.array([p.clients for p in self.parts], dtype=float)
        self.servers = np.array([p.servers for p in self.parts], dtype=float)
        self.running = np.array([p.running for p in self.parts], dtype=float)
        self.batch = np.array([p.batch for p in self.parts], dtype=float)
        self.answer = np.array([max(p.answer, 1) for p in self.parts], dtype=float)
        self.dis = np.array([p.disaggregated for p in self.parts])
        training = [c for c in cases if c.quantity == "tokens_per_s_per_chip"]
        self.train_parts = [c.parts for c in training]
        anys = ["any"] * len(training)
        self.t_device = Vectors([list(p.device) for p in self.train_parts], self.keys,
                                anys)
        self.t_host = Vectors([list(p.host) for p in self.train_parts], self.keys, anys)
        self.t_step = Vectors([list(p.step) for p in self.train_parts], self.keys, anys)
        own = [p.own for p in self.train_parts]
        self.t_a = np.array([o.arith_s for o in own])
        self.t_b = np.array([o.read_s for o in own])
        self.t_ka = np.array([key_index(k, o.arith_key) for o in own], dtype=int)
        self.t_kb = np.array([key_index(k, o.read_key) for o in own], dtype=int)
        self.t_slots = np.array([p.slots for p in self.train_parts])
        self.t_mb = np.array([p.micro_batches for p in self.train_parts], dtype=float)
        self.t_pipelined = np.array([p.pipelined for p in self.train_parts], dtype=bool)
        self.t_tokens = np.array([p.tokens for p in self.train_parts])
        self.index = np.array([where.get(id(c.parts), -1) for c in cases])
        self.quantity = [c.quantity for c in cases]
        self.measured = np.array([c.measured for c in cases])
        self.train_index = np.cumsum([q == "tokens_per_s_per_chip" for q in
                                      self.quantity]) - 1

    def predict(self, theta: np.ndarray) -> np.ndarray:
        """Every case's estimate (seconds, or tokens a second a chip)."""
        step, prefill = self.step.seconds(theta), self.prefill.seconds(theta)
        tpot = np.where(self.dis, step, step + theta[self.k_interf] * self.running
                        / self.answer * prefill)
        fixed = theta[self.k_first] + self.layers * theta[self.k_first_layer]
        away = self.answer * tpot
        share = self.prompt / self.step_tokens
        service = np.where(self.dis, prefill / self.servers, prefill + step * share)
        clients = np.where(self.dis, self.clients, self.running)
        steady = _queue_wait(clients, service, away)
        burst = theta[self.k_burst] * (clients - 1) / 2 * service / ROUNDS
        first = (fixed + prefill + np.ceil(share) * step
                 + theta[self.k_queue] * steady + burst)
        whole = first + away
        beyond = np.where(self.batch > self.running,
                          (self.batch / self.running - 1) * whole, 0.0)
        ttft = np.where(self.dis, fixed + theta[self.k_dis] * prefill
                        + theta[self.k_dis_queue] * steady + burst, first + beyond)
        out = np.empty(len(self.cases))
        for i, q in enumerate(self.quantity):
            if q == "tpot_ms":
                out[i] = tpot[self.index[i]]
            elif q == "ttft_ms":
                out[i] = ttft[self.index[i]]
        if len(self.train_parts):
            own = np.maximum(self.t_a * theta[self.t_ka], self.t_b * theta[self.t_kb])
            device = own / self.t_mb + self.t_device.seconds(theta)
            host = self.t_host.seconds(theta)
            slot = np.where(self.t_pipelined, np.maximum(device, host), device + host)
            steps = self.t_slots * slot + self.t_step.seconds(theta)
            rate = self.t_tokens / steps
            mask = np.array([q == "tokens_per_s_per_chip" for q in self.quantity])
            out[mask] = rate[self.train_index[mask]]
        return out


def _queue_wait(clients: np.ndarray, service: np.ndarray,
                away: np.ndarray) -> np.ndarray:
    """``estimate.serving.queue_wait`` for arrays of cases."""
    over = clients * service - away
    response = (over + np.sqrt(over * over + 4 * service * away)) / 2
    return np.maximum(response - service, 0.0)


def _first(key: str) -> str:
    return key.split(":")[0]


def _start(keys: dict[str, int]) -> np.ndarray:
    order = sorted(keys, key=keys.get)
    return np.array([FIXED.get(k, START[_first(k)]) for k in order])


def _bounds(keys: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    order = sorted(keys, key=keys.get)
    low = np.array([FIXED.get(k, LOWEST.get(_first(k), 1e-9)) for k in order])
    high = np.array([FIXED.get(k, HIGHEST.get(_first(k), 1e9)) for k in order])
    return low, high


def _loss(pred: np.ndarray, measured: np.ndarray, mask: np.ndarray) -> float:
    return float(np.mean(np.abs(np.log(pred[mask] / measured[mask]))))


STEPS = (2.0, 1.4, 1.15, 1.05, 1.02)
"""The factors each value is tried at, a sweep each, from coarse to fine."""


def fit(model: Model, mask: np.ndarray, sweeps: int = 2,
        free: list[int] | None = None, theta: np.ndarray | None = None) -> np.ndarray:
    """The values that minimise the mean absolute log error over ``mask``'s cases
    (only the values ``free`` indexes moved, from ``theta``: by default all, from
    ``START``)."""
    theta = _start(model.keys) if theta is None else theta
    low, high = _bounds(model.keys)
    best = _loss(model.predict(theta), model.measured, mask)
    free = list(range(len(theta))) if free is None else free
    for factor in STEPS:
        for _ in range(sweeps):
            for j in free:
                for f in (factor, 1 / factor):
                    trial = theta.copy()
                    trial[j] = min(max(trial[j] * f, low[j]), high[j])
                    if trial[j] == theta[j]:
                        continue
                    loss = _loss(model.predict(trial), model.measured, mask)
                    if loss < best:
                        theta, best = trial, loss
    return theta


def _round(x: float) -> float:
    """``x`` to four significant figures (the file's values)."""
    return float(f"{x:.4g}")


def _anys(values: dict[str, float]) -> dict[str, float]:
    """Each key's ``any`` forms: the geometric mean of the fitted values it stands
    for, in each place a part can be missing."""
    groups: dict[str, list[float]] = {}
    for key, v in values.items():
        head, _, tail = key.partition(":")
        parts = tail.split(":")
        for i in range(len(parts)):
            if parts[i] == "any":
                continue
            g = ":".join([head, *parts[:i], "any", *parts[i + 1:]])
            groups.setdefault(g, []).append(v)
    return {k: _round(math.exp(sum(map(math.log, v)) / len(v)))
            for k, v in groups.items() if k not in values}


SHARE = 0.8
"""The share of measured runs each interval holds."""


def intervals(cases: list[Case], pred: np.ndarray, held: np.ndarray) -> dict:
    """For each regime (and each quantity's ``any``), the 10th and 90th percentiles of
    measured over estimated among the held-out runs, but for the training runs taken
    for failed jobs (``failed_runs``: no run like the one asked about is expected to
    fail so; their errors still count in the median)."""
    by: dict[str, list[float]] = {}
    for c, p, h in zip(cases, pred, held):
        failed = c.quantity == "tokens_per_s_per_chip" and not c.fitted
        if h and not failed:
            ratio = c.measured / p
            by.setdefault(c.regime, []).append(ratio)
            whole = c.regime.split(",")[0] + ", any"
            if whole != c.regime:  # once: a regime already "any" is its own whole
                by.setdefault(whole, []).append(ratio)
    out = {}
    for regime, ratios in sorted(by.items()):
        r = np.sort(np.array(ratios))
        lo, hi = np.quantile(r, (1 - SHARE) / 2), np.quantile(r, (1 + SHARE) / 2)
        out[regime] = {"low": _round(lo), "high": _round(hi), "share": SHARE,
                       "runs": len(ratios)}
    return out


def _serving_fit(model: Model, used: np.ndarray, sweeps: int) -> np.ndarray:
    """Serving's values in three stages, so that the first token's terms do not pull
    the decode step's: the values a time between tokens uses fitted to those times,
    then the rest to the times to the first token, then the share of prompt passes
    a decode step waits for again."""
    tpot = used & np.array([q == "tpot_ms" for q in model.quantity])
    ttft = used & np.array([q == "ttft_ms" for q in model.quantity])
    v = model.step
    stepped = sorted({*v.r_ka.tolist(), *v.r_kb.tolist(), *v.c_k.tolist(),
                      *model.k_interf.tolist()})
    rest = [j for j in range(len(model.keys)) if j not in set(stepped)]
    theta = fit(model, tpot, sweeps + 1, stepped)
    theta = fit(model, ttft, sweeps, rest, theta)
    return fit(model, tpot, 1, sorted(set(model.k_interf.tolist())), theta)


def _fit_part(cases: list[Case], sweeps: int) -> tuple[dict[str, float], np.ndarray]:
    """The rounded values fitted to ``cases`` outside ``HELD_OUT``, and every case's
    estimate with them."""
    model = Model(cases)
    held = np.array([c.model in HELD_OUT for c in cases])
    used = ~held & np.array([c.fitted for c in cases])
    if model.train_parts:
        theta = fit(model, used, sweeps)
    else:
        theta = _serving_fit(model, used, sweeps)
    order = sorted(model.keys, key=model.keys.get)
    values = {k: _round(v) for k, v in zip(order, theta)}
    return values, model.predict(np.array([values[k] for k in order]))


def fitted(cases: list[Case] | None = None) -> tuple[dict, list[Case], np.ndarray]:
    """The fractions file's content, the cases and every case's estimate: serving and
    training fitted apart (they share no value)."""
    cases = cases if cases is not None else serving_cases() + training_cases()
    serving = [c for c in cases if c.quantity != "tokens_per_s_per_chip"]
    training = [c for c in cases if c.quantity == "tokens_per_s_per_chip"]
    values, pred = {}, []
    for part, sweeps in ((serving, 2), (training, 3)):
        if part:
            v, p = _fit_part(part, sweeps)
            values.update(v)
            pred.append(p)
    cases = serving + training
    pred = np.concatenate(pred)
    held = np.array([c.model in HELD_OUT for c in cases])
    used = ~held & np.array([c.fitted for c in cases])
    values.update(_anys(values))
    fitted_on = sorted({c.model for c, u in zip(cases, used) if u})
    data = {
        "about": "Fitted by python -m transformer_calculator.measured_runs.fit on the "
        "shipped measured runs (published/measured/): values as the estimate's keys "
        "name them (estimate/fractions.py), intervals of measured over estimated for "
        "the held-out models' runs",
        "values": dict(sorted(values.items())),
        "intervals": intervals(cases, pred, held),
        "basis": {"fitted_on": fitted_on, "held_out": sorted(set(HELD_OUT)),
                  "runs_fitted": int(used.sum()), "runs_held_out": int(held.sum()),
                  "runs_checked_not_fitted": int((~held & ~used).sum())},
    }
    return data, cases, pred


def main(argv: list[str] | None = None) -> int:
    """Fit and write ``estimate/data/fractions.json``; print the held-out errors."""
    data, cases, pred = fitted()
    FRACTIONS_FILE.parent.mkdir(exist_ok=True)
    FRACTIONS_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    held = np.array([c.model in HELD_OUT for c in cases])
    measured = np.array([c.measured for c in cases])
    for q in ("tpot_ms", "ttft_ms", "tokens_per_s_per_chip"):
        for name, m in (("fitted", ~held), ("held out", held)):
            sel = np.array([c.quantity == q for c in cases]) & m
            if sel.any():
                err = np.abs(pred[sel] - measured[sel]) / measured[sel]
                print(f"{q:<24} {name:<9} runs {int(sel.sum()):>5}  median abs error "
                      f"{np.median(err):.1%}")
    failed = sum(c.quantity == "tokens_per_s_per_chip" and not c.fitted for c in cases)
    print(f"training runs taken for failed jobs (failed_runs), not fitted: {failed}")
    print(f"wrote {FRACTIONS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
