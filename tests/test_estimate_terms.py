"""The estimate's kernels add up to the floor's counts (one cost, counted two ways, held
equal), each kernel at its fitted fraction is never faster than its roof, and the fit's
vectorised pricing equals the estimate's own, run by run."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from transformer_calculator.counting import costs
from transformer_calculator.counting.chips import chip
from transformer_calculator.command_line.cli import apply_formats, load_model
from transformer_calculator.estimate.fractions import fractions
from transformer_calculator.estimate.serving import (serving_parts, tpot_seconds,
                                                     ttft_seconds)
from transformer_calculator.estimate.terms import Roof, decode_terms, prefill_terms
from transformer_calculator.measured_runs import fit
from transformer_calculator.service.serving import served
from transformer_calculator.splits import Split, chip_link, stage_models

CASES = [
    ("llama-3.1-8b", None, None, "h100-sxm", 1),
    ("playbook-1b", None, None, "h200", 1),  # a tied table: the head multiplies it
    ("deepseek-r1", "nvfp4", "nvfp4", "b200", 8),
    ("gpt-oss-120b", "bf16", "mxfp4", "h100-sxm", 2),
    ("kimi-k2.5", "bf16", "int4-wo", "b300", 8),
    ("qwen3-235b-a22b-fp8", None, None, "gb200", 4),
]


def device(name, weights, experts, key, tp):
    model, notes = load_model(name)
    model, _ = served(model)
    model = apply_formats(model, list(notes), weights, None, experts)
    c = chip(key)
    split = Split(tp=tp, ep=1, link=chip_link(c))
    return stage_models(model, split)[0], c, split


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("context, batch", [(1024, 1), (9000, 64)])
def test_a_decode_steps_kernels_add_up_to_its_counts(case, context, batch):
    st, c, _ = device(*case)
    roofs = [t for t in decode_terms(st, c, context, batch) if isinstance(t, Roof)]
    arith = costs.arithmetic_time(st, c, context, batch)
    read = costs.reading_time(st, c, context, batch)
    assert sum(r.arith_s for r in roofs) == pytest.approx(arith, rel=1e-9)
    assert sum(r.read_s for r in roofs) == pytest.approx(read, rel=1e-9)
    rest = next(r for r in roofs if r.name.startswith("norms"))  # and float32 routers
    assert rest.arith_s <= 0.01 * arith and rest.read_s <= 0.06 * read  # no kernel missed


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_prompts_kernels_add_up_to_its_counts(case):
    st, c, _ = device(*case)
    roofs = [t for t in prefill_terms(st, c, 4096) if isinstance(t, Roof)]
    arith, read = costs.prefill_limits(st, c, 4096, 1)
    assert sum(r.arith_s for r in roofs) == pytest.approx(arith, rel=1e-9)
    assert sum(r.read_s for r in roofs) == pytest.approx(read, rel=1e-9)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_estimate_is_never_below_the_floor(case):
    st, c, split = device(*case)
    fr = fractions()
    for batch in (1, 16, 256):
        p = serving_parts((st,), (st,), c, split, split, 2048, 512, batch, "vllm", False)
        floor_step = costs.decode_step_time(st, c, 2048 + 256, p.running)
        assert tpot_seconds(p, fr) >= floor_step
        assert ttft_seconds(p, fr) >= costs.prefill_time(st, c, 2048, 1)


def test_every_fraction_of_peak_is_at_most_one():
    for key, value in fractions().values.items():
        if key.split(":")[0] in fit.LOWEST and fit.LOWEST[key.split(":")[0]] == 1.0:
            assert value >= 1.0, key


def test_the_fits_vector_prices_each_run_as_the_estimate_does():
    cases = []
    for name, weights, experts, key, tp in CASES[:4]:
        st, c, split = device(name, weights, experts, key, tp)
        for engine, batch, dis in (("vllm", 8, False), ("trtllm", 300, False),
                                   ("sglang", 4, True)):
            p = serving_parts((st,), (st,), c, split, split, 1024, 256, batch, engine,
                              dis, None, 4, 2)
            for q in ("tpot_ms", "ttft_ms"):
                cases.append(fit.Case(name, name, q, 1.0, p, f"{q}, {engine}", 0.0))
    model = fit.Model(cases)
    fr = fractions()
    order = sorted(model.keys, key=model.keys.get)
    theta = np.array([fr.value(k) for k in order])
    ours = [tpot_seconds(c.parts, fr) if c.quantity == "tpot_ms"
            else ttft_seconds(c.parts, fr) for c in cases]
    assert model.predict(theta) == pytest.approx(ours, rel=1e-12)


def test_a_fraction_not_fitted_falls_back_to_its_any_form():
    fr = fractions()
    values = dict(fr.values)
    assert fr.value("compute:ampere:bf16") == values["compute:any:bf16"]
    assert fr.value("layer:some-engine") == values["layer:any"]
    with pytest.raises(ValueError, match="no fitted fraction"):
        dataclasses.replace(fr, values={}).value("read:hopper")
