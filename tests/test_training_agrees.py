"""One model of a training step: the calculator's memory and time of a plain layout
equal the formulas section 1.3 teaches, part by part, for many plain shapes
(hypothesis), as test_calculator_agrees.py holds inference.

The teaching side is ``memory.training_memory`` (and ``training.step_phase_times``)
called with the loss at its peak, ``logit_bytes=memory.loss_bytes_per_logit(m)`` (b +
12 bytes a logit: the logits, the float32 log-softmax and the two float32 gradients of
``cross_entropy(logits.float())``'s backward pass, measured in test_training.py); its
default, four-byte logits, is the page's earlier refinement. The calculator's default
(``Training``: AdamW, selective recomputation, one micro-batch, no ZeRO) is the page's
"today": no grid stored. Where the two differ by design the test says so:

- the calculator splits the loss's bytes into three parts (logits, float32 log-softmax,
  float32 logit gradients) that the teaching count holds as one;
- the calculator's ``selective`` recomputes the pairs in the backward pass, as a fused
  attention kernel does; the teaching count's recompute="score grids" is that, and its
  "nothing" with ``keep_scores=True`` is the calculator's ``none``;
- the teaching count has no full recomputation's memory, no ZeRO, no micro-batches, no
  8-bit Adam and no LoRA (the calculator's further options, checked against real
  PyTorch, DeepSpeed and PEFT in test_calculator_training*.py, test_training_meta.py);
- time: the calculator's step is the teaching count's step by phase (the passes on
  their roof, then the optimizer's bytes); the whole-step floor ``training.step_time``
  lies below it.
"""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_arithmetic as ta
from test_calculator_agrees import chips, plain_shapes
from transformer_arithmetic import memory, training
from transformer_calculator.counting import training_time
from transformer_calculator.reading.plain import model_of
from transformer_calculator.counting.training import Training, step_memory

RECOMPUTE = {"selective": ("score grids", False), "none": ("nothing", True)}
"""The calculator's recomputation: (the teaching count's recompute, keep_scores)."""

GRADIENTS = {"model": None, "fp32": 4}
"""The calculator's gradients: the teaching count's gradient_bytes."""

settings_ = settings(max_examples=120, deadline=None)
steps = dict(
    m=plain_shapes(), batch=st.integers(1, 64), seq_len=st.integers(1, 8192),
    recompute=st.sampled_from(sorted(RECOMPUTE)), dropout=st.booleans(),
    gradients=st.sampled_from(sorted(GRADIENTS)),
)


def _teaching(m: ta.ModelShape, batch, seq_len, recompute, dropout, gradients) -> dict:
    """The teaching formula's options for the calculator's setting."""
    keep = RECOMPUTE[recompute][1]
    return dict(keep_scores=keep, dropout=dropout, gradient_bytes=GRADIENTS[gradients],
                logit_bytes=memory.loss_bytes_per_logit(m))


@settings_
@given(**steps)
def test_step_memory_agrees_part_by_part(m, batch, seq_len, recompute, dropout,
                                         gradients):
    options = _teaching(m, batch, seq_len, recompute, dropout, gradients)
    ours = memory.training_memory(m, batch, seq_len, **options)
    t = Training(batch=batch, seq_len=seq_len, recompute=recompute, dropout=dropout,
                 gradients=gradients)
    calc = step_memory(model_of(m), t)
    assert calc["weights"] == ours["weights"]
    assert calc["gradients"] + calc["float32 gradients"] == ours["gradients"]
    assert calc["optimizer states"] == ours["optimiser"]
    assert calc["float32 master weights"] == ours["master copy"]
    assert calc["gathered weights"] == 0
    assert calc["activations"] == ours["activations"]
    loss = (calc["logits"] + calc["float32 log-softmax"]
            + calc["float32 logit gradients"])
    assert loss == ours["logits"]
    assert sum(calc.values()) == sum(ours.values())


@settings_
@given(acc=chips, **steps)
def test_step_time_agrees(m, acc, batch, seq_len, recompute, dropout, gradients):
    options = _teaching(m, batch, seq_len, recompute, dropout, gradients)
    phases = training.step_phase_times(m, acc, batch, seq_len, RECOMPUTE[recompute][0],
                                       **options)
    t = Training(batch=batch, seq_len=seq_len, recompute=recompute, dropout=dropout,
                 gradients=gradients)
    c = model_of(m)
    assert math.isclose(training_time.pass_time(c, acc, t),
                        phases["forward and backward"], rel_tol=1e-12)
    assert math.isclose(training_time.optimizer_time(c, acc, t), phases["optimiser"],
                        rel_tol=1e-12)
    seconds = training_time.step_time(c, acc, t)
    assert math.isclose(seconds, sum(phases.values()), rel_tol=1e-12)
    floor = training.step_time(m, acc, batch, seq_len, RECOMPUTE[recompute][0],
                               **options)
    assert floor <= seconds * (1 + 1e-12)


@settings_
@given(m=plain_shapes(), batch=st.integers(1, 64), seq_len=st.integers(1, 8192))
def test_the_default_step_is_the_pages_today_with_the_loss_at_its_peak(m, batch,
                                                                       seq_len):
    t = Training(batch=batch, seq_len=seq_len)
    calc = sum(step_memory(model_of(m), t).values())
    ours = memory.training_memory(m, batch, seq_len,
                                  logit_bytes=memory.loss_bytes_per_logit(m))
    assert calc == sum(ours.values())
    work = training_time.step_work(model_of(m), Training(batch=batch, seq_len=seq_len))
    assert math.isclose(work.matrix + work.other,
                        training.step_flops(m, batch, seq_len, "score grids"),
                        rel_tol=1e-12)        # the calculator's floats pass 2**53
