"""Agreement instead of a fork: the calculator's count of a plain layout equals the formula the
pages teach, quantity by quantity, for many plain shapes (hypothesis).

The calculator (``transformer_calculator``) counts every quantity over a model's layout, layer
by layer; the book's formulas (``transformer_arithmetic``) count the plain decoder in closed
form. ``plain.model_of`` lays a plain shape out part by part, and every quantity the two
share must come out the same: parameters, active parameters, weight bytes (held and read),
the cache a token and at a length, the fixed state (none), the work of a decode step and of
a prefill, the bytes a step reads, the times on the roofline, throughput, where the pair work
passes the weight work, and what fits. (The other families are checked against the models
``transformers`` builds: test_families*.py, test_family_caches.py.)
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_arithmetic as ta
from transformer_arithmetic import memory, timing, work
from transformer_calculator.counting import costs
from transformer_calculator.reading.plain import model_of


@st.composite
def plain_shapes(draw) -> ta.ModelShape:
    """A plain decoder: any head count with a divisor for the key-value heads, any widths."""
    heads = draw(st.integers(1, 64))
    kv_heads = draw(st.sampled_from([d for d in range(1, heads + 1) if heads % d == 0]))
    head_dim = draw(st.sampled_from([8, 16, 32, 64, 80, 96, 128, 256]))
    width = draw(st.one_of(st.none(), st.integers(8, 16384)))
    return ta.ModelShape(
        layers=draw(st.integers(1, 128)), heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        width=width, ffn_width=draw(st.integers(1, 65536)), vocab=draw(st.integers(1, 262144)),
        bytes_per_number=draw(st.sampled_from([1, 2, 4])), gated_ffn=draw(st.booleans()),
        tied_embeddings=draw(st.booleans()), norm_bias=draw(st.booleans()))


chips = st.builds(ta.Accelerator, flops_per_s=st.floats(1e11, 5e15),
                  bytes_per_s=st.floats(1e10, 1e14), memory_bytes=st.integers(2**20, 2**41))
lengths = st.integers(0, 2**20)


@settings(max_examples=150, deadline=None)
@given(m=plain_shapes(), n=lengths, batch=st.integers(1, 1024))
def test_memory_and_work_agree(m, n, batch):
    c = model_of(m)
    assert costs.parameters(c) == costs.active_parameters(c) == memory.parameter_count(m)
    assert costs.weight_bytes(c) == memory.weight_bytes(m)
    assert costs.cache_bytes_per_token(c) == memory.kv_bytes_per_token(m)
    assert costs.cache_bytes_per_token_past_windows(c) == memory.kv_bytes_per_token(m)
    assert costs.state_bytes(c) == 0
    assert costs.cache_bytes(c, n) == memory.kv_cache_bytes(m, n)
    assert costs.serving_bytes(c, n, batch) == memory.serving_bytes(m, n, batch)
    assert costs.pairs_pass_weights_at(c) == work.pairs_pass_weights_at(m)
    if m.tied_embeddings:  # an untied input table is read a row a token, not whole
        assert costs.weight_bytes_read(c, batch) == memory.weight_bytes(m)
    # tied or untied: both sides gather the input table's rows and multiply none
    assert costs.decode_flops(c, n) == work.decode_flops(m, n)
    assert costs.decode_bytes(c, n, batch) == timing.decode_bytes(m, n, batch)
    assert costs.prefill_flops(c, n) == work.prefill_flops(m, n)


@settings(max_examples=150, deadline=None)
@given(m=plain_shapes(), acc=chips, n=lengths, batch=st.integers(1, 1024))
def test_time_and_fit_agree(m, acc, n, batch):
    c = model_of(m)
    assert costs.arithmetic_time(c, acc, n, batch) == timing.arithmetic_time(m, acc, n, batch)
    assert costs.reading_time(c, acc, n, batch) == timing.reading_time(m, acc, n, batch)
    assert costs.decode_step_time(c, acc, n, batch) == timing.decode_step_time(m, acc, n, batch)
    assert costs.throughput(c, acc, n, batch) == timing.throughput(m, acc, n, batch)
    assert costs.prefill_time(c, acc, n) == timing.prefill_time(m, acc, n)
    if memory.weight_bytes(m) <= acc.memory_bytes:
        assert costs.longest_conversation(c, acc) == memory.longest_conversation(m, acc)
        if n:
            assert costs.conversations_that_fit(c, acc, n) == memory.conversations_that_fit(m, acc, n)
