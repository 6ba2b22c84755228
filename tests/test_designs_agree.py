"""Chapter 2's designs and the calculator's layouts, one vocabulary: a
``designs.Design`` applied to a plain shape is laid out as the calculator's blocks
(full attention, a window, grouped key-value heads, a hybrid of attention and Mamba
layers), and what one conversation holds and the mixing work of one more token and of a
prompt come out the same (hypothesis), so neither side can drift.

The window's rule is one: a window of W positions (a query sees itself and the W - 1
before it) keeps the last W - 1 tokens' keys and values, all the next token reads, as
transformers' ``DynamicSlidingWindowLayer`` keeps them (test_designs_and_waits.py feeds
one a prompt); its static layer allocates W slots, one for the incoming token, as a
static cache does for full attention.

Where they differ by design: a design keeps the weights of the model it is applied to
(chapter 2 compares only what the designs hold and their mixing), so weights and times
are not compared; and a design's running summary keeps its state alone, where the
calculator's Mamba layer also keeps its causal filter's last ``conv`` inputs a channel
(transformers' ``conv_states``), which the test adds.
"""
from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_arithmetic as ta
from test_calculator_agrees import plain_shapes
from transformer_arithmetic import designs, memory
from transformer_calculator.counting import costs
from transformer_calculator.anatomy.layout import Block
from transformer_calculator.anatomy.mixers import Mamba
from transformer_calculator.anatomy.model import Model
from transformer_calculator.reading.plain import model_of

CONV = 4
"""A Mamba layer's filter, in tokens (transformers' default ``conv_kernel``)."""


def layout_of(d: designs.Design, m: ta.ModelShape) -> Model:
    """The calculator's model of design ``d`` on ``m``: attention with the design's
    key-value heads and window in every layer, or a hybrid's first
    ``attention_layers`` so and the rest Mamba layers of ``expand`` times the width."""
    shape = m if d.kind == "hybrid" or d.kv_heads is None else dataclasses.replace(
        m, kv_heads=d.kv_heads)
    plain = model_of(shape)
    block = plain.layout.blocks[0]
    if d.kind == "attention":
        blocks = (dataclasses.replace(
            block, mixer=dataclasses.replace(block.mixer, window=d.window)),) * m.layers
    elif d.kind == "hybrid":
        summary = Block(mixer=Mamba(width=m.width, inner=d.expand * m.width,
                                    state_size=d.state_size, conv=CONV, dt_rank=8),
                        ffn=None, norms=block.norms)
        blocks = (block,) * d.attention_layers + (summary,) * (
            m.layers - d.attention_layers)
    else:
        raise ValueError(f"no calculator layout for a {d.kind} design")
    layout = dataclasses.replace(plain.layout, blocks=blocks)
    return dataclasses.replace(plain, layout=layout)


@st.composite
def designs_on_shapes(draw) -> tuple[designs.Design, ta.ModelShape]:
    """A plain shape and one of chapter 2's layouts on it: plain, windowed, grouped or
    hybrid."""
    m = draw(plain_shapes())
    kind = draw(st.sampled_from(["plain", "windowed", "grouped", "hybrid"]))
    if kind == "plain":
        return designs.Design("plain", "attention"), m
    if kind == "windowed":
        return designs.Design("windowed", "attention",
                              window=draw(st.integers(1, 8192))), m
    if kind == "grouped":
        kv = draw(st.sampled_from([k for k in range(1, m.heads + 1)
                                   if m.heads % k == 0]))
        return designs.Design("grouped", "attention", kv_heads=kv), m
    d = designs.Design("hybrid", "hybrid", attention_layers=draw(
        st.integers(1, m.layers)), state_size=draw(st.integers(1, 128)),
        expand=draw(st.integers(1, 2)), state_bytes=4)   # Mamba's float32 summary
    return d, m


@settings(max_examples=150, deadline=None)
@given(dm=designs_on_shapes(), n=st.integers(1, 2**17))
def test_a_design_and_its_layout_hold_and_mix_alike(dm, n):
    d, m = dm
    c = layout_of(d, m)
    summaries = m.layers - d.attention_layers if d.kind == "hybrid" else 0
    filters = summaries * d.expand * m.width * CONV * m.bytes_per_number
    assert costs.state_bytes(c) == designs.state_bytes(d, m) + filters
    assert costs.cache_bytes(c, n) == designs.held_bytes(d, m, n) + filters
    mixing = designs._token_flops(d, m, n) - 2 * memory.parameter_count(m)
    assert c.layout.decode_pair_flops(n) + c.layout.state_flops == mixing
    prompt = designs._prefill_flops(d, m, n) - 2 * memory.parameter_count(m) * n
    assert c.layout.prefill_pair_flops(n) + n * c.layout.state_flops == prompt


@settings(max_examples=60, deadline=None)
@given(m=plain_shapes(), window=st.integers(1, 4096), n=st.integers(0, 2**15))
def test_one_window_rule(m, window, n):
    """The teaching cache, the design's and the calculator's: W - 1 tokens once full."""
    d = designs.Design("windowed", "attention", window=window)
    c = layout_of(d, m)
    kept = min(n, window - 1) * memory.kv_bytes_per_token(m)
    assert memory.kv_cache_bytes(m, n, window=window) == kept
    assert designs.held_bytes(d, m, n) == kept == costs.cache_bytes(c, n)
    assert c.layout.blocks[0].mixer.cache_cap == window - 1
