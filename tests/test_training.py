"""A training step's operations, bytes and time, against real PyTorch objects.

- Operations: PyTorch's own ``FlopCounterMode`` counts every product of a real forward and
  backward pass of the reference decoder, with attention written row by row so that only the
  pairs the causal mask allows are multiplied; recomputation is real ``torch.utils.checkpoint``
  (its early stop off, so that a recomputed function is recomputed whole).
- Memory: the optimiser state of a real ``torch.optim.Adam``, gradients in float32, and what a
  real ``cross_entropy`` on bfloat16 and float32 logits holds at its peak (PyTorch's
  profiler).
- Utilisation: PaLM's published 46.2 % from its own throughput and chip count.
- The expert readers' recomputations of issue 23 (8.52 GiB, 1.75 GiB, 18 bytes a parameter,
  the cache's saving in seconds, a beam's and quantised weights' time) pinned for the library's
  own test model.
"""
import dataclasses
import math
import types

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop
from torch.utils.flop_counter import FlopCounterMode

import transformer_arithmetic as ta
from decoder_reference import CHIP_24GIB, PLAIN_335M
from transformer_arithmetic import memory, sampling, timing, training, work
from transformer_arithmetic.runs import reference_model
from transformer_arithmetic.runs.reference_model import Decoder
from transformer_arithmetic.units import power_text

pytestmark = pytest.mark.torch_kernels

SMALL = ta.ModelShape(layers=2, heads=4, head_dim=8, ffn_width=48, vocab=40, name="small")
SHAPES = [SMALL, dataclasses.replace(SMALL, kv_heads=2, gated_ffn=True),
          dataclasses.replace(SMALL, tied_embeddings=False, norm_bias=True)]


def causal_rows(q, k, v, attn_mask=None, is_causal=False, enable_gqa=False):
    """Attention one query row at a time against only the keys it may see: every product is a
    real matmul that FlopCounterMode counts, and no blocked pair is multiplied."""
    assert attn_mask is None and is_causal
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    rows = []
    for i in range(q.shape[2]):
        scores = q[:, :, i:i + 1] @ k[:, :, :i + 1].transpose(-1, -2) / q.shape[-1] ** 0.5
        rows.append(torch.softmax(scores, dim=-1) @ v[:, :, :i + 1])
    return torch.cat(rows, dim=2)


def counted_step(m, batch, seq_len, recompute, monkeypatch):
    """Operations FlopCounterMode counts in one real forward and backward pass of ``m``."""
    attend = causal_rows
    if recompute == "score grids":
        def attend(*args, **kw):
            return checkpoint(causal_rows, *args, use_reentrant=False, **kw)
    monkeypatch.setattr(reference_model, "F", types.SimpleNamespace(
        scaled_dot_product_attention=attend, silu=F.silu, gelu=F.gelu))
    torch.manual_seed(0)
    decoder = Decoder(m).double()
    tokens = torch.randint(0, m.vocab, (batch, seq_len))
    # early stopping would skip recomputing a function's last product, which no backward needs
    with set_checkpoint_early_stop(False), FlopCounterMode(display=False) as counter:
        x = decoder.embed(tokens)
        for block in decoder.blocks:
            if recompute == "everything":
                x = checkpoint(lambda y, b=block: b(y)[0], x, use_reentrant=False)
            else:
                x = block(x)[0]
        logits = decoder.head(decoder.norm(x))
        F.cross_entropy(logits.flatten(0, 1), tokens.flatten()).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("m, recompute", [(SHAPES[0], r) for r in training.RECOMPUTE]
                         + [(SHAPES[1], "nothing"), (SHAPES[1], "everything"), (SHAPES[2], "nothing")],
                         ids=lambda v: v if isinstance(v, str) else f"kv{v.kv_heads}-gated{v.gated_ffn}"
                         f"-tied{v.tied_embeddings}")
def test_step_flops_equal_what_pytorch_counts(m, recompute, monkeypatch):
    batch, seq_len = 2, 5
    assert counted_step(m, batch, seq_len, recompute, monkeypatch) == training.step_flops(
        m, batch, seq_len, recompute)


def test_the_forward_pass_is_two_per_multiplied_number_plus_the_pairs():
    m = PLAIN_335M
    with torch.device("meta"):
        decoder = Decoder(m)
    multiplied = sum(mod.weight.numel() for mod in decoder.modules() if isinstance(mod, torch.nn.Linear))
    assert training.matrix_params(m) == multiplied        # the tied table counts once, as the head
    n = 512
    assert training.forward_flops_per_token(m, n) * n == 2 * multiplied * n + 4 * m.layers * m.heads \
        * m.head_dim * n * (n + 1) // 2
    assert training.rule_of_thumb_flops(m, 10) == 6 * memory.parameter_count(m) * 10


def test_adam_state_and_float32_gradients_make_eighteen_bytes_a_parameter():
    m = dataclasses.replace(SMALL, bytes_per_number=2)
    torch.manual_seed(0)
    decoder = Decoder(m)                                    # float32: the master copy
    weights = {id(p): p for p in decoder.parameters()}.values()
    loss = decoder(torch.randint(0, m.vocab, (1, 4)))[0].float().pow(2).mean()
    loss.backward()
    adam = torch.optim.Adam(weights)
    adam.step()
    state = sum(t.numel() * t.element_size() for s in adam.state.values() for t in s.values()
                if t.dim() > 0)                               # the moments, not the step count
    grads = sum(p.grad.numel() * p.grad.element_size() for p in weights)
    master = sum(p.numel() * p.element_size() for p in weights)
    parts = memory.training_memory(m, 1, 4, gradient_bytes=4)
    assert (parts["optimiser"], parts["gradients"], parts["master copy"]) == (state, grads, master)
    p = memory.parameter_count(m)
    held = parts["weights"] + parts["gradients"] + parts["optimiser"] + parts["master copy"]
    assert held == 18 * p


def peak_bytes(fn) -> int:
    """Most bytes PyTorch's CPU allocator holds at once while ``fn`` runs, above what it
    held before (its profiler's allocation and release events, in order)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    live = top = 0
    for e in events:
        live += e.nbytes()
        top = max(top, live)
    return top


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_the_loss_at_its_peak_holds_b_plus_twelve_bytes_a_logit(dtype):
    """The output layer and ``cross_entropy(logits.float())``, forward and backward, as a
    loop that keeps its logits (nanoGPT's) runs them: the peak, in the loss's backward
    pass, is the logits, the kept float32 log-softmax and the two float32 gradients;
    a loop that drops the logits first holds 12 bytes a logit."""
    m = dataclasses.replace(SMALL, vocab=4096, bytes_per_number=2 if dtype == torch.bfloat16 else 4)
    tokens = 64
    torch.manual_seed(0)
    x = torch.randn(tokens, 16, dtype=dtype, requires_grad=True)
    head = torch.randn(16, m.vocab, dtype=dtype, requires_grad=True)
    targets = torch.randint(0, m.vocab, (tokens,))

    def kept():
        logits = x @ head
        F.cross_entropy(logits.float(), targets).backward()

    def dropped():
        logits = x @ head
        loss = F.cross_entropy(logits.float(), targets)
        del logits
        loss.backward()

    logits = memory.logits_bytes(m, 1, tokens, memory.loss_bytes_per_logit(m))
    small = 4096                        # the loss, the gradients of x and head: < 1 %
    assert logits <= peak_bytes(kept) <= logits + small
    assert tokens * m.vocab * 12 <= peak_bytes(dropped) <= tokens * m.vocab * 12 + small


def test_a_whole_steps_peak_grows_with_the_vocabulary_by_the_loss_rule():
    """A real forward and backward pass of the reference decoder in bfloat16, at two
    vocabularies: the step's peak (in the loss's backward pass, every activation still
    held) grows by exactly what the count says, the b + 12 bytes a logit; what the count
    leaves out (normalisations' statistics, the token ids, the loss) does not grow."""
    def peak_and_count(vocab):
        shape = ta.ModelShape(layers=2, heads=4, head_dim=16, ffn_width=256, vocab=vocab,
                              bytes_per_number=2)
        torch.manual_seed(0)
        model = Decoder(shape).to(torch.bfloat16).train()
        tokens = torch.randint(0, vocab, (2, 32))

        def step():
            x = model.embed(tokens)
            for block in model.blocks:
                x = block(x)[0]
            logits = model.head(model.norm(x))
            F.cross_entropy(logits.float().flatten(0, 1), tokens.flatten()).backward()

        parts = memory.training_memory(shape, 2, 32,
                                       logit_bytes=memory.loss_bytes_per_logit(shape))
        return peak_bytes(step), parts["activations"] + parts["logits"]

    (small, small_count), (large, large_count) = peak_and_count(512), peak_and_count(4096)
    assert large - small == large_count - small_count == 2 * 32 * (4096 - 512) * 14
    assert 0 < small - small_count < 0.2 * small     # the few bytes a token left out


def test_the_temperature_slope_is_what_autograd_finds():
    z = torch.tensor([2.59, 1.97, 1.69, 1.37, 0.74, 0.64, -2.61], dtype=torch.float64)
    for t in (0.5, 0.7, 1.0, 1.5):
        beta = torch.tensor(1 / t, dtype=torch.float64, requires_grad=True)
        slopes = [torch.autograd.grad(torch.log_softmax(beta * z, 0)[i], beta)[0].item()
                  for i in range(len(z))]
        assert sampling.temperature_slope(z.numpy(), t) == pytest.approx(slopes, abs=1e-12)


def test_model_flops_utilisation_gives_palms_published_figure():
    # PaLM 540B: 118 layers, 48 heads of 256, sequences of 2,048; 238.3K tokens a second on
    # 6,144 TPU v4 chips of 275 TFLOP/s; the paper's own count, 6N + 12LHQT, and its 46.2 %
    per_token = 6 * 540.35e9 + 12 * 118 * 48 * 256 * 2048
    tpu_v4 = ta.Accelerator(flops_per_s=275e12, bytes_per_s=1.2e12, memory_bytes=32 * ta.GIB)
    mfu = training.model_flops_utilisation(per_token * 238.3e3, 1.0, tpu_v4, devices=6144)
    assert round(100 * mfu, 1) == 46.2


def test_a_run_on_chips_and_the_compute_optimal_rule():
    chinchilla = 70e9                                       # 70B parameters on 1.4T tokens
    assert 1.4e12 / chinchilla == training.COMPUTE_OPTIMAL_TOKENS_PER_PARAMETER
    assert training.compute_optimal_tokens(PLAIN_335M) == 20 * 335_594_496
    seconds = training.run_seconds(1e21, CHIP_24GIB, 0.5, devices=4)
    assert seconds == pytest.approx(1e21 / (4 * 100e12 * 0.5))


def test_a_small_training_step_waits_on_reading_and_a_large_one_on_arithmetic():
    m, acc = PLAIN_335M, CHIP_24GIB
    for batch, bound in ((1, "reading"), (8, "arithmetic")):
        flops, nbytes = training.step_flops(m, batch, 512), training.step_bytes(m, batch, 512)
        assert (flops / acc.flops_per_s > nbytes / acc.bytes_per_s) == (bound == "arithmetic")
        assert training.step_time(m, acc, batch, 512) == max(flops / acc.flops_per_s,
                                                              nbytes / acc.bytes_per_s)


def test_the_expert_readers_recomputations():
    m, acc = PLAIN_335M, CHIP_24GIB
    modern = memory.training_memory(m, 8, 512)              # no dropout, no stored score grids
    # 8.50 and 12.44 GiB before the final norm's and the output layer's inputs (16 MiB)
    assert round(sum(modern.values()) / ta.GIB, 2) == 8.52
    gpt3_era = memory.training_memory(m, 8, 512, keep_scores=True, dropout=True)
    assert round(sum(gpt3_era.values()) / ta.GIB, 2) == 12.45
    loss = memory.logits_bytes(m, 8, 512, memory.loss_bytes_per_logit(m))
    assert loss / ta.GIB == 1.75                # 14 bytes a logit (1.25 GiB at 10 before)
    # the cache's saving in seconds at 512, 2,048 and 4,096 tokens: about 2.4, 8.9 and 17
    saving = [sum(timing.generation_step_times(m, acc, n, cache=False))
              / sum(timing.generation_step_times(m, acc, n)) for n in (512, 2048, 4096)]
    assert [round(s, 1) for s in saving] == [2.4, 8.9, 17.3]
    # 8- and 4-bit weights with the cache in two bytes, and a beam of 4, at 2,048 tokens
    plain = timing.decode_step_time(m, acc, 2048)
    assert [round(plain / timing.step_time_at_bits(m, acc, 2048, b), 2) for b in (8, 4)] == [1.63, 2.36]
    assert round(timing.decode_step_time(m, acc, 2048, batch=4) / plain, 2) == 1.69


def test_generation_steps_add_up_to_the_generation_count():
    for m in SHAPES + [PLAIN_335M]:
        for cache in (True, False):
            steps = [work.generation_step_flops(m, k, cache) for k in range(1, 40)]
            assert sum(steps) == work.generation_flops(m, 39, cache)
    times = timing.generation_step_times(PLAIN_335M, CHIP_24GIB, 3)
    assert times[2] == max(work.generation_step_flops(PLAIN_335M, 3) / 100e12,
                           timing.decode_bytes(PLAIN_335M, 3) / 1e12)


def test_prefill_with_the_output_layer_at_the_last_position_only(monkeypatch):
    m, tokens = SMALL, 6
    monkeypatch.setattr(reference_model, "F", types.SimpleNamespace(
        scaled_dot_product_attention=causal_rows, silu=F.silu, gelu=F.gelu))
    decoder = Decoder(m).double()
    counts = {}
    for every in (True, False):
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            x = decoder.embed(torch.zeros(1, tokens, dtype=torch.long))
            for block in decoder.blocks:
                x = block(x)[0]
            decoder.head(decoder.norm(x if every else x[:, -1:]))
        counts[every] = counter.get_total_flops()
    saved = work.prefill_flops(m, tokens) - work.prefill_flops(m, tokens, all_logits=False)
    assert saved == counts[True] - counts[False] == 2 * (tokens - 1) * m.vocab * m.width
    assert work.prefill_flops(m, 0, all_logits=False) == 0
    assert math.isclose(timing.prefill_time(m, CHIP_24GIB, tokens, all_logits=False),
                        max(timing.prefill_limits(m, CHIP_24GIB, tokens, False)))


def test_bad_arguments_are_named():
    for call, message in [
        (lambda: training.flops_per_token(SMALL, 8, "half"), "recompute must be one of"),
        (lambda: training.step_flops(SMALL, 0, 8), "batch must be at least 1, got 0"),
        (lambda: training.forward_flops_per_token(SMALL, 0), "seq_len must be at least 1, got 0"),
        (lambda: training.run_seconds(1e20, CHIP_24GIB, 0.0), "utilisation must lie in"),
        (lambda: training.model_flops_utilisation(1e12, 0.0, CHIP_24GIB), "seconds must be"),
        (lambda: memory.training_memory(SMALL, gradient_bytes=0), "gradient_bytes must be at least 1"),
        (lambda: work.generation_step_flops(SMALL, 0), "step must be at least 1, got 0"),
    ]:
        with pytest.raises(ValueError, match=message):
            call()


def test_large_counts_are_written_with_a_power_of_ten():
    assert power_text(1.4020539664469852e19) == "1.40 \u00d7 10\u00b9\u2079"
    assert power_text(7.72067819520e23, digits=2) == "7.7 \u00d7 10\u00b2\u00b3"
    assert power_text(0.00123) == "1.23 \u00d7 10\u207b\u00b3"
    with pytest.raises(ValueError, match="value must be positive"):
        power_text(0)
