"""The roofline per operation (``timing.decode_operation_times`` and its kin) against its
references: the kernels' counts against a real PyTorch decoder's matrices, look-up and
operations, and the rule's own bounds (never under the whole-step floor, and equal to it
where every kernel waits on the same limit).

Only counts are compared with PyTorch here (FlopCounterMode on a real step, the shapes of the
real ``Linear`` modules, the bytes a real ``Embedding`` hands back), so the file is
``torch_counts``; that the kernels' times add on a real processor is timed on this machine in
``test_operations_timed.py``."""
from __future__ import annotations

import cmath
import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import transformer_arithmetic as ta
from decoder_reference import CHIP_24GIB, PLAIN_335M
from transformer_arithmetic import intensity, memory, timing, training, work
from transformer_arithmetic.runs.reference_model import Decoder

pytestmark = pytest.mark.torch_counts

M, A = PLAIN_335M, CHIP_24GIB
UNTIED = dataclasses.replace(PLAIN_335M, tied_embeddings=False, gated_ffn=True, kv_heads=4)


@st.composite
def shapes(draw) -> ta.ModelShape:
    heads = draw(st.integers(1, 32))
    kv = draw(st.sampled_from([k for k in range(1, heads + 1) if heads % k == 0]))
    return ta.ModelShape(
        layers=draw(st.integers(1, 64)), heads=heads, kv_heads=kv,
        head_dim=draw(st.sampled_from([16, 64, 128])), ffn_width=draw(st.integers(1, 30000)),
        vocab=draw(st.integers(1, 200000)), bytes_per_number=draw(st.sampled_from([1, 2, 4])),
        gated_ffn=draw(st.booleans()), tied_embeddings=draw(st.booleans()),
        norm_bias=draw(st.booleans()))


chips = st.builds(ta.Accelerator, flops_per_s=st.floats(1e11, 5e15),
                  bytes_per_s=st.floats(1e10, 1e14), memory_bytes=st.just(2**40))


@settings(max_examples=200, deadline=None)
@given(m=shapes(), acc=chips, n=st.integers(0, 2**18), batch=st.integers(1, 4096))
def test_the_kernels_never_beat_the_whole_step_floor(m, acc, n, batch):
    # the kernels' operations are the floor's and their bytes at least the floor's, so a sum
    # of maxima is never below the maximum of the sums
    floor = timing.decode_step_time(m, acc, n, batch)
    assert timing.decode_time_by_operation(m, acc, n, batch) >= floor * (1 - 1e-12)
    if n:
        prompt = timing.prefill_time(m, acc, n)
        assert timing.prefill_time_by_operation(m, acc, n) >= prompt * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(m=shapes(), acc=chips, batch=st.integers(1, 64), seq=st.integers(1, 4096))
def test_a_training_step_by_phase_moves_the_floors_bytes_and_never_beats_it(m, acc, batch, seq):
    phases = training.step_phase_times(m, acc, batch, seq)
    parts = memory.training_memory(m, batch, seq)
    moved = {k: sum(n for use in training.PHASE_TRAFFIC.values() for p, n in use.items()
                    if p == k) for k in parts}
    assert moved == training.TRAFFIC                  # the two phases split the traffic
    assert sum(phases.values()) >= training.step_time(m, acc, batch, seq) * (1 - 1e-12)
    assert sum(phases.values()) == training.step_time_by_operation(m, acc, batch, seq)


def test_where_every_kernel_waits_on_reading_the_two_rules_agree():
    # one conversation, a short context: each kernel reads more than it computes, so the sum of
    # the kernels' reading is the step's reading (plus the activations, which the floor leaves out)
    by_kernel = timing.decode_operation_times(M, A, 2048)
    reading = timing.reading_time(M, A, 2048)
    assert by_kernel["matrices"] + by_kernel["attention"] == pytest.approx(reading, rel=1e-3)


def test_the_matrices_are_the_real_decoders_linear_modules():
    for m in (M, UNTIED):
        with torch.device("meta"):
            decoder = Decoder(m)
        real = sorted((mod.in_features, mod.out_features) for mod in decoder.modules()
                      if isinstance(mod, torch.nn.Linear))
        ours = sorted((rows, cols) for _, count, rows, cols in work.matrix_shapes(m)
                      for _ in range(count))
        assert real == ours
        assert sum(c * r * k for _, c, r, k in work.matrix_shapes(m)) == training.matrix_params(m)


def _step_flops(m: ta.ModelShape, batch: int, context: int) -> int:
    """Operations FlopCounterMode counts in one real decode step of ``batch`` tokens after
    ``context`` cached positions (matrix products and attention, in the math kernel, whose
    products it sees; a look-up counts none)."""
    small = dataclasses.replace(m, layers=2)
    torch.manual_seed(0)
    decoder = Decoder(small).to(torch.float32).eval()
    with torch.inference_mode():
        _, cache = decoder(torch.zeros(batch, context, dtype=torch.long), None)
        with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
            decoder(torch.zeros(batch, 1, dtype=torch.long), cache)
    return counter.get_total_flops(), small


@pytest.mark.parametrize("m", [dataclasses.replace(M, width=256, heads=4, kv_heads=4, head_dim=64,
                                                   ffn_width=512, vocab=1000),
                               dataclasses.replace(UNTIED, width=256, heads=4, kv_heads=2,
                                                   head_dim=64, ffn_width=512, vocab=1000)])
def test_decode_operations_against_what_pytorch_counts(m):
    batch, context = 3, 5
    counted, small = _step_flops(m, batch, context)
    matrices = 2 * batch * training.matrix_params(small)
    pairs = batch * work.decode_pair_flops(small, context + 1)   # the new token meets itself
    assert counted == matrices + pairs
    # the floor's count: two a multiplied weight (not the untied input table), the pairs, and
    # the normalisations' scales, which FlopCounterMode does not count (they only scale)
    norms = (2 * small.layers + 1) * small.norm_numbers * small.width
    assert work.decode_flops(small, context + 1) * batch == counted + 2 * batch * norms


def test_a_look_up_reads_one_row_a_token():
    table = torch.nn.Embedding(UNTIED.vocab, UNTIED.width, device="meta", dtype=torch.bfloat16)
    for batch in (1, 7, 300):
        rows = table(torch.zeros(batch, 1, dtype=torch.long, device="meta"))
        assert rows.nelement() * rows.element_size() == timing.input_rows_bytes(UNTIED, batch)
        held = memory.weight_bytes(UNTIED) - UNTIED.vocab * UNTIED.width * 2
        assert timing.decode_bytes(UNTIED, 0, batch) == held + timing.input_rows_bytes(UNTIED, batch)
    assert timing.input_rows_bytes(M, 5) == 0             # a tied table is the output layer's


def test_the_matmul_intensity_and_the_critical_batch():
    d, f = M.width, M.ffn_width
    for t in (1, 16, 256):
        assert intensity.matmul_intensity(t, d, f, 2) == pytest.approx(t * d * f / (t * d + d * f + t * f))
        assert intensity.matmul_intensity(t, d, f, 2) < t
    h100 = ta.accelerator_of(__import__("published").chip("h100-sxm"))
    critical = intensity.critical_batch(h100, 2)
    assert round(critical) == 295                             # 989.4 / 3.35
    assert intensity.critical_batch(h100, 1) == critical / 2    # int8 weights halve it
    # a matrix product turns from reading to arithmetic just past the critical batch: the inputs
    # and outputs it moves push the crossing later by a factor 1 / (1 - T* (D + F) / (D F)),
    # a tenth for a feed-forward matrix of Llama 3 8B's
    d, f = 4096, 14336
    turns = next(t for t in range(1, 2000) if timing.matrix_time(t, d, f, h100, 2)
                 == 2 * t * d * f / h100.flops_per_s)
    assert turns == math.ceil(critical / (1 - critical * (d + f) / (d * f)))
    assert critical < turns < critical * 1.12


def test_decode_attention_waits_on_reading_at_any_context():
    for m in (M, UNTIED):
        for n, batch in ((1, 1), (4096, 64)):
            t = timing.decode_operation_times(m, A, n, batch)["attention"]
            assert t == timing.cache_reading_time(m, A, n) * batch
        assert intensity.attention_intensity(m) == 2 * m.heads / (m.kv_heads * m.bytes_per_number)


def test_the_real_model_on_its_chip_the_issue_figures():
    from transformer_calculator.reading.plain import shipped_shape
    llama = shipped_shape("llama-3-8b")
    h100 = ta.accelerator_of(__import__("published").chip("h100-sxm"))
    assert round(timing.decode_step_time(llama, h100, 2048) * 1e3, 2) == 4.56
    assert round(timing.throughput(llama, h100, 2048)) == 219
    fit = memory.conversations_that_fit(llama, h100, 256)
    big = timing.decode_time_by_operation(llama, h100, 256, 754)
    assert round(big * 1e3, 1) == 19.2 > 1.5 * timing.decode_step_time(llama, h100, 256, 754) * 1e3
    limit = 1 / (2 * training.matrix_params(llama) / h100.flops_per_s
                 + timing.cache_reading_time(llama, h100, 256))
    assert timing.throughput_by_operation(llama, h100, 256, fit) < limit


def test_bandwidth_utilisation():
    assert timing.bandwidth_utilisation(1e12, 1.0, A) == 1.0
    with pytest.raises(ValueError, match="seconds must be a positive finite number, got 0"):
        timing.bandwidth_utilisation(1e9, 0, A)


def test_the_speculative_rule_writes_the_targets_chances():
    # the rule's output is p exactly (algebra), and a torch simulation of the accept-or-redraw
    # procedure agrees with it to within sampling noise
    from transformer_arithmetic import sampling
    torch.manual_seed(0)
    p = torch.softmax(torch.randn(12, dtype=torch.float64), -1)
    q = torch.softmax(torch.randn(12, dtype=torch.float64), -1)
    accepted, out = sampling.speculative_rule(p.numpy(), q.numpy())
    assert accepted == pytest.approx(float(torch.minimum(p, q).sum()))
    assert abs(out - p.numpy()).max() <= 1e-12
    draws = 200_000
    x = torch.multinomial(q, draws, replacement=True)
    keep = torch.rand(draws, dtype=torch.float64) < torch.clamp(p[x] / q[x], max=1.0)
    rest = torch.clamp(p - q, min=0.0)
    redrawn = torch.multinomial(rest / rest.sum(), draws, replacement=True)
    written = torch.where(keep, x, redrawn)
    freq = torch.bincount(written, minlength=12).double() / draws
    assert float(keep.double().mean()) == pytest.approx(accepted, abs=0.01)
    assert float((freq - p).abs().max()) < 0.01


@pytest.mark.parametrize("m", [M, UNTIED, dataclasses.replace(M, norm_bias=True, kv_heads=1)],
                         ids=["plain", "untied-gated", "layernorm-mqa"])
def test_the_kernels_of_a_real_decoder_give_the_same_times(m):
    # the kernels read off a real decoder's Linear and norm modules and its real cache
    from decoder_reference import kernels_decode, kernels_prefill
    for context, batch, positions in ((0, 1, 1), (2048, 1, 1), (512, 64, 1), (1024, 8, 5)):
        ours = timing.decode_time_by_operation(m, A, context, batch, positions)
        assert ours == pytest.approx(kernels_decode(m, A, context, batch, positions), rel=1e-12)
    ours = timing.decode_time_by_operation(m, A, 100, 4, weight_bits=4)
    assert ours == pytest.approx(kernels_decode(m, A, 100, 4, weight_bytes_per_number=0.5),
                                 rel=1e-12)
    for tokens in (1, 300, 4096):
        for all_logits in (True, False):
            ours = timing.prefill_time_by_operation(m, A, tokens, all_logits)
            assert ours == pytest.approx(kernels_prefill(m, A, tokens, all_logits), rel=1e-12)


def _radix2_fft_flops(values: list[complex]) -> tuple[list[complex], int]:
    """A recursive radix-2 FFT that counts its real operations: a complex multiply is 6 (four
    multiplies, two adds), a complex add or subtract 2."""
    n = len(values)
    if n == 1:
        return values, 0
    even, f_even = _radix2_fft_flops(values[0::2])
    odd, f_odd = _radix2_fft_flops(values[1::2])
    out, flops = [0j] * n, f_even + f_odd
    for k in range(n // 2):
        t = cmath.exp(-2j * math.pi * k / n) * odd[k]
        out[k], out[k + n // 2] = even[k] + t, even[k] - t
        flops += 6 + 2 + 2
    return out, flops


def test_the_fft_filters_count():
    import numpy as np
    from transformer_arithmetic import convolution
    # a complex FFT of N points does 5 N log2 N real operations, counted on a real one that
    # agrees with numpy's; a real FFT is about half of that
    size = 256
    rng = np.random.default_rng(0)
    x = rng.standard_normal(size)
    out, flops = _radix2_fft_flops(list(x.astype(complex)))
    assert np.allclose(out, np.fft.fft(x), atol=1e-9)
    assert flops == 5 * size * math.log2(size)
    n = 4096
    assert convolution.fft_padded_length(n) == 8192 >= 2 * n - 1
    assert convolution.direct_filter_flops(n) == 2 * sum(range(1, n + 1))
    ratio = convolution.direct_filter_flops(n) / convolution.fft_filter_flops(n)
    assert 19 < ratio < 22                          # about 20 times, not n log2 n's 171


def test_the_chunked_forms_operations_are_what_pytorch_counts():
    # the four steps of the chunked (SSD) form written in torch and counted by FlopCounterMode:
    # the grid inside each chunk, each chunk's state, its passing on, the carried state's read
    from transformer_arithmetic import linear_attention as la
    import numpy as np
    n, chunk, dk, dv = 64, 16, 8, 4
    rng = np.random.default_rng(0)
    q, k, v = (torch.tensor(rng.standard_normal((n, x))) for x in (dk, dk, dv))
    g = torch.tensor(rng.uniform(0.7, 1.0, n))
    with FlopCounterMode(display=False) as counter:
        state, outs = torch.zeros(dk, dv, dtype=torch.float64), []
        for s in range(0, n, chunk):
            qs, ks, vs, gs = q[s:s + chunk], k[s:s + chunk], v[s:s + chunk], g[s:s + chunk]
            kept = torch.cumprod(gs, 0)
            inside = torch.tril(kept[:, None] / kept[None, :])           # Gamma in the chunk
            outs.append((inside * (qs @ ks.T)) @ vs + kept[:, None] * (qs @ state))
            state = kept[-1] * state + ((kept[-1] / kept)[:, None] * ks).T @ vs
    ours = torch.cat(outs).numpy()
    assert np.allclose(ours, la.linear_attention_chunked(q.numpy(), k.numpy(), v.numpy(),
                                                         g.numpy(), chunk), atol=1e-10)
    assert counter.get_total_flops() == n * la.chunked_flops_per_token(chunk, dk, dv)
    # the walk: an outer product and a read a token
    with FlopCounterMode(display=False) as counter:
        state = torch.zeros(dk, dv, dtype=torch.float64)
        for t in range(n):
            state = g[t] * state + k[t][:, None] @ v[t][None, :]
            _ = state.T @ q[t][:, None]             # a matrix product, as counted
    assert counter.get_total_flops() == n * la.walk_flops_per_token(dk, dv)
    # the best chunk balances the grid's arithmetic against the states' traffic
    best = la.best_chunk(100e12, 1e12, 64, 64, 4)
    cost = lambda c: 2 * c * 128 / 100e12 + 2 * 64 * 64 * 4 / c / 1e12
    assert cost(best) <= min(cost(best * 0.9), cost(best * 1.1))
