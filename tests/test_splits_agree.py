"""The splits of part 3 counted once: the calculator's splits package (``splits``) and
the teaching formulas (``tensor_parallel``, ``pipeline``, ``data_parallel``,
``collectives``) give the same cost for the same split of many plain shapes
(hypothesis), as test_calculator_agrees.py holds one device.

Held equal: whether the layer can be cut over N_tp devices; a tensor-parallel device's
weights and the cache one token adds to it; the fullest pipeline stage's numbers (the
last: its layers, the output table and the final norm; the first one norm fewer, the
tied table copied to both ends as Megatron-LM keeps it); the bubble's share of a step
(plain and interleaved 1F1B); a layer's tensor-parallel all-reduces and the
data-parallel collectives of ZeRO 0, 1 and 2 on a link (the calculator calls the
teaching module's rings, so this holds the arrays it hands them).

Where they differ by design:

- ZeRO's shares: the teaching formula gives the fullest device's share, ceil(P / N_dp)
  numbers (DeepSpeed pads its flat buffer to a multiple of N_dp); the calculator
  divides the bytes evenly, P / N_dp, so it may count up to one number a part less
  than the fullest device holds (a few bytes);
- the teaching page's own choice of splits (``transformer_arithmetic.splits``) takes
  whole layers per stage (N_pp divides L) and micro-batches of one sequence; the
  calculator also cuts unevenly, with the fewer layers at the ends.
"""
from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import transformer_arithmetic as ta
from test_calculator_agrees import chips, plain_shapes
from transformer_arithmetic import collectives, data_parallel, pipeline, tensor_parallel
from transformer_arithmetic import splits as teaching_splits
from transformer_arithmetic.collectives import Link
from transformer_calculator.counting import costs
from transformer_calculator.reading.plain import model_of
from transformer_calculator.splits import Split, check_split, device_model, stage_models
from transformer_calculator.splits import comm
from transformer_calculator.splits.training_split import _step
from transformer_calculator.counting.training import Training, step_memory

links = st.builds(Link, bytes_per_s=st.floats(1e9, 1e12),
                  step_latency_s=st.floats(1e-7, 1e-4))
sizes = st.sampled_from([1, 2, 3, 4, 6, 8, 16])
agree = settings(max_examples=120, deadline=None,
                 suppress_health_check=[HealthCheck.filter_too_much])


@st.composite
def cut_shapes(draw) -> tuple[ta.ModelShape, int]:
    """A plain shape and an N_tp that cuts it: heads and feed-forward width multiples
    of N_tp, key-value heads that divide among N_tp devices or divide them."""
    tp = draw(sizes)
    m = draw(plain_shapes())
    heads = tp * draw(st.integers(1, 8))
    kv = draw(st.sampled_from([d for d in range(1, heads + 1)
                               if heads % d == 0 and (d % tp == 0 or tp % d == 0)]))
    ffn = tp * draw(st.integers(1, 4096))
    width = draw(st.one_of(st.none(), st.integers(8, 8192)))
    shape = dataclasses.replace(m, heads=heads, kv_heads=kv, ffn_width=ffn,
                                width=width or heads * m.head_dim)
    return shape, tp


def _cuts(m, tp: int) -> bool:
    """Whether the calculator lets N_tp = ``tp`` cut the model."""
    try:
        check_split(model_of(m), Split(tp=tp))
    except ValueError:
        return False
    return True


@agree
@given(m=plain_shapes(), tp=sizes)
def test_the_same_sizes_cut_a_layer(m, tp):
    assert _cuts(m, tp) == tensor_parallel.divides(m, tp)


@agree
@given(cut=cut_shapes())
def test_a_tensor_parallel_devices_share(cut):
    m, tp = cut
    device = device_model(model_of(m), Split(tp=tp))
    assert costs.weight_bytes(device) == tensor_parallel.tp_weight_bytes(m, tp)
    cache = tensor_parallel.tp_cache_bytes_per_token(m, tp)
    assert costs.cache_bytes_per_token(device) == cache


@agree
@given(cut=cut_shapes(), pp=st.sampled_from([2, 3, 4, 8]))
def test_the_fullest_pipeline_stage(cut, pp):
    m, tp = cut
    m = dataclasses.replace(m, layers=pp * max(1, m.layers // pp))
    stages = stage_models(model_of(m), Split(tp=tp, pp=pp))
    numbers = teaching_splits.stage_numbers(m, teaching_splits.Split(1, tp, pp))
    assert costs.parameters(stages[-1]) == numbers
    assert costs.parameters(stages[0]) == numbers - m.norm_numbers * m.width
    assert [len(s.layout.blocks) for s in stages] == pipeline.uneven_stage_layers(
        m.layers, pp) == [m.layers // pp] * pp
    cache = tensor_parallel.tp_cache_bytes_per_token(m, tp) // pp   # a stage's layers
    assert [costs.cache_bytes_per_token(s) for s in stages] == [cache] * pp


@agree
@given(pp=st.integers(1, 32), micro=st.integers(1, 64), virtual=st.integers(1, 8),
       seconds=st.floats(1e-4, 10.0))
def test_the_bubble_share(pp, micro, virtual, seconds):
    """Stages of equal passes with nothing to hide: the calculator's step is N_mb
    passes plus the others' passes over v, the teaching bubble's share."""
    rows = [{"pass_seconds": seconds, "communication": {}, "data_parallel": {},
             "optimizer_seconds": 0.0} for _ in range(pp)]
    s = Split(pp=pp, micro_batches=micro, virtual_stages=virtual)
    step = _step(rows, s, overlap=False)
    share = step["bubble"] / step["seconds"]
    assert math.isclose(share, pipeline.interleaved_bubble_share(pp, micro, virtual),
                        rel_tol=1e-12, abs_tol=1e-15)
    if virtual == 1:
        assert math.isclose(share, pipeline.bubble_share(pp, micro), rel_tol=1e-12,
                            abs_tol=1e-15)


@agree
@given(cut=cut_shapes(), acc=chips, link=links, tokens=st.integers(1, 65536))
def test_a_layers_tensor_parallel_all_reduces(cut, acc, link, tokens):
    m, tp = cut
    s = Split(tp=tp, link=link)
    teaching = tensor_parallel.tp_layer_times(m, acc, link, tp, tokens)["communication"]
    calc = comm.tp_seconds(model_of(m), s, tokens, layers=1, passes=1)
    assert math.isclose(calc, teaching, rel_tol=1e-12, abs_tol=1e-18)


@agree
@given(m=plain_shapes(), acc=chips, link=links, dp=sizes,
       stage=st.sampled_from([0, 1, 2]), fp32=st.booleans())
def test_the_data_parallel_collectives(m, acc, link, dp, stage, fp32):
    s = Split(dp=dp, link=link)
    t = Training(zero_stage=stage, devices=dp, gradients="fp32" if fp32 else "model")
    g = 4 if fp32 else None
    calc = comm.dp_seconds(model_of(m), s, t)
    if dp == 1:
        assert calc == {}
        return
    sent = data_parallel.zero_step_bytes(m, stage, dp, gradient_bytes=g)
    p, b = data_parallel.parameter_count(m), m.bytes_per_number
    grads = p * (g or b)
    if stage == 0:
        teaching = data_parallel.data_parallel_times(m, acc, link, dp, dp, 1, g)
        assert math.isclose(calc["gradient all-reduce"], teaching["all-reduce"],
                            rel_tol=1e-12)
        assert sent["all-reduce of the gradients"] == collectives.ring_bytes_sent(
            "all-reduce", grads, dp)
        return
    assert math.isclose(calc["gradient reduce-scatter"],
                        collectives.ring_time("reduce-scatter", grads, dp, link),
                        rel_tol=1e-12)
    assert math.isclose(calc["weight all-gather"],
                        collectives.ring_time("all-gather", p * b, dp, link),
                        rel_tol=1e-12)
    assert sent == {
        "reduce-scatter of the gradients": collectives.ring_bytes_sent(
            "reduce-scatter", grads, dp),
        "all-gather of the weights": collectives.ring_bytes_sent("all-gather", p * b,
                                                                 dp),
    }


CALCULATOR_PART = {"weights": "weights", "gradients": "gradients",
                   "optimiser": "optimizer states",
                   "master copy": "float32 master weights"}
"""Each teaching part of the training state and the calculator's name for it."""


@agree
@given(m=plain_shapes(), dp=st.integers(1, 64), stage=st.sampled_from([0, 1, 2, 3]))
def test_zero_shares(m, dp, stage):
    teaching = data_parallel.zero_state_bytes(m, stage, dp)
    calc = step_memory(model_of(m), Training(zero_stage=stage, devices=dp, seq_len=1))
    per_number = {"weights": m.bytes_per_number, "gradients": m.bytes_per_number,
                  "optimiser": 8, "master copy": 4 if m.bytes_per_number < 4 else 0}
    for part, ours in teaching.items():
        theirs = calc[CALCULATOR_PART[part]]
        assert theirs == ours or 0 < ours - theirs < per_number[part]  # P/N, ceil(P/N)
        if data_parallel.parameter_count(m) % dp == 0:
            assert theirs == ours


def test_a_split_the_teaching_count_refuses_the_calculator_refuses_too():
    shape = ta.ModelShape(layers=2, heads=6, kv_heads=3, head_dim=8, ffn_width=24,
                          vocab=10)
    assert not tensor_parallel.divides(shape, 4) and not _cuts(shape, 4)
    with pytest.raises(ValueError, match="6 heads do not divide among 4"):
        check_split(model_of(shape), Split(tp=4))
