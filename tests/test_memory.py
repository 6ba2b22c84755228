"""Parameters and memory, checked against the stated figures and against real PyTorch objects."""
import pytest
import torch

import transformer_arithmetic as ta
from transformer_arithmetic import memory
from transformer_arithmetic.reference_model import Decoder, cache_bytes

M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR


def torch_parameter_count(shape: ta.ModelShape) -> int:
    """Parameters of a real torch decoder of this shape, built on the meta device (no memory)."""
    with torch.device("meta"):
        return sum(p.numel() for p in Decoder(shape).parameters())


def test_example_parameter_count_matches_a_torch_module():
    assert memory.parameter_count(M) == 335_594_496 == torch_parameter_count(M)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"kv_heads": 4},
        {"kv_heads": 1},
        {"gated_ffn": True, "ffn_width": 2816},
        {"tied_embeddings": False},
        {"norm_bias": True},
        {"width": 1536, "gated_ffn": True, "kv_heads": 2, "tied_embeddings": False},
    ],
)
def test_parameter_count_matches_torch_for_other_layouts(changes):
    shape = ta.ModelShape(layers=3, heads=8, head_dim=32, ffn_width=512, vocab=1000) 
    shape = ta.ModelShape(**{**shape.__dict__, **changes})
    assert memory.parameter_count(shape) == torch_parameter_count(shape)


def test_weight_and_training_memory_are_the_stated_figures():
    assert memory.weight_bytes(M) == 671_188_992
    parts = memory.training_memory(M, batch=8, seq_len=512)
    gib = {k: round(v / ta.GIB, 2) for k, v in parts.items()}
    assert gib == {"weights": 0.63, "gradients": 0.63, "optimiser": 2.50, "master copy": 1.25, "activations": 1.88}
    assert round(sum(parts.values()) / ta.GIB, 2) == 6.88
    assert round(sum(parts.values()) / memory.weight_bytes(M)) == 11


def test_cache_per_token_and_per_conversation():
    assert memory.kv_bytes_per_token(M) == 98_304
    assert memory.kv_cache_bytes(M, 8192) == 768 * ta.MIB
    assert memory.kv_cache_bytes(M, 32768) == 3072 * ta.MIB
    assert memory.kv_cache_bytes(M, 32768, window=1024) == 96 * ta.MIB
    assert memory.kv_cache_bytes(M.__class__(**{**M.__dict__, "kv_heads": 4}), 8192) == 192 * ta.MIB
    assert round(memory.serving_bytes(M, 2048, 64) / ta.GIB, 2) == 12.63


@pytest.mark.parametrize("kv_heads", [8, 2, 1])
def test_cache_bytes_match_a_real_decode_loop(kv_heads):
    shape = ta.ModelShape(layers=3, heads=8, kv_heads=kv_heads, head_dim=16, ffn_width=64, vocab=50)
    torch.manual_seed(0)
    model = Decoder(shape).to(torch.float16).eval()
    row, cache = model.generate(torch.tensor([[1, 2, 3, 4]]), new_tokens=6)
    assert cache_bytes(cache) == memory.kv_bytes_per_token(shape) * row.shape[1]
    assert cache_bytes(cache) == memory.kv_cache_bytes(shape, row.shape[1])


def test_cached_decoding_gives_the_same_logits_as_a_full_pass():
    shape = ta.ModelShape(layers=2, heads=4, kv_heads=2, head_dim=8, ffn_width=32, vocab=40, gated_ffn=True)
    torch.manual_seed(1)
    model = Decoder(shape).eval()
    row, _ = model.generate(torch.tensor([[5, 6, 7]]), new_tokens=4)
    full, _ = model(row)
    with torch.no_grad():
        _, cache = model(row[:, :-1])
        last, _ = model(row[:, -1:], cache)
    torch.testing.assert_close(last[:, -1], full[:, -1].detach(), rtol=1e-5, atol=1e-5)


def test_what_fits_in_the_example_accelerator():
    assert memory.longest_conversation(M, A) == 255_316
    assert memory.conversations_that_fit(M, A, 2048) == 124
    assert memory.conversations_that_fit(M, A, 32768) == 7
    grouped = ta.ModelShape(**{**M.__dict__, "kv_heads": 4})
    # Grouped keys and values also narrow the key and value matrices, so the weights shrink
    # too: 500 fit, not the 498 that dividing only the cache by four would give.
    assert (memory.conversations_that_fit(grouped, A, 2048), memory.conversations_that_fit(grouped, A, 32768)) == (500, 31)
    cache_only = (A.memory_bytes - memory.weight_bytes(M)) // (memory.kv_bytes_per_token(grouped) * 2048)
    assert cache_only == 498


def test_score_grid_state_and_hybrid():
    assert memory.score_grid_bytes(8192) == 128 * ta.MIB
    assert memory.score_grid_bytes(32768) == 2048 * ta.MIB
    assert memory.score_grid_bytes(128) == 32 * ta.KIB
    assert memory.summary_state_bytes(M, 16) == 0.75 * ta.MIB
    assert round(memory.hybrid_cache_bytes(M, 32768, 3) / ta.MIB) == 385
    assert memory.hybrid_cache_bytes(M, 32768, M.layers) == memory.kv_cache_bytes(M, 32768)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: memory.kv_cache_bytes(M, -5), "tokens must be at least 0, got -5"),
        (lambda: memory.kv_cache_bytes(M, 10, window=0), "window must be at least 1, got 0"),
        (lambda: memory.training_memory(M, batch=0), "batch must be at least 1, got 0"),
        (lambda: memory.hybrid_cache_bytes(M, 10, 30), "attention_layers=30 is more than"),
        (lambda: memory.conversations_that_fit(M, A, 0), "tokens must be at least 1, got 0"),
        (lambda: memory.longest_conversation(M, ta.Accelerator(1e12, 1e12, 2**20)), "do not fit"),
    ],
)
def test_bad_inputs_name_the_bad_value(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_a_static_cache_gives_the_same_logits_and_holds_the_predicted_bytes():
    from transformer_arithmetic.reference_model import StaticCache

    shape = ta.ModelShape(layers=2, heads=4, kv_heads=2, head_dim=8, ffn_width=32, vocab=40, bytes_per_number=4)
    torch.manual_seed(2)
    model = Decoder(shape).eval()
    row = torch.tensor([[3, 1, 4, 1, 5, 9, 2]])
    with torch.no_grad():
        full, _ = model(row)
        static = StaticCache(shape, max_tokens=16)
        first, _ = model(row[:, :4], static)
        steps = [model(row[:, i:i + 1], static)[0] for i in range(4, row.shape[1])]
    torch.testing.assert_close(first, full[:, :4], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.cat(steps, dim=1), full[:, 4:], rtol=1e-5, atol=1e-5)
    assert static.length == row.shape[1]
    held = sum(k.numel() * k.element_size() for k in static.keys + static.values)
    assert held == memory.kv_cache_bytes(shape, static.max_tokens)
    with pytest.raises(ValueError, match="the static cache holds 16 tokens; 17 needed"):
        static.length = 16
        model(row[:, :1], static)


@pytest.mark.parametrize("heads", [1, 2, 3, 7, 8, 12, 16, 24, 40, 64])
def test_kv_head_choices_divide_the_heads_and_pick_the_group_nearest_four(heads):
    shape = ta.ModelShape(layers=1, heads=heads, head_dim=4, ffn_width=8, vocab=8)
    choices = memory.kv_head_choices(shape)
    assert choices[0] == heads and choices[-1] == 1 and len(set(choices)) == len(choices)
    # brute force: the proper divisors, found by trying every group size
    groups = [g for g in range(2, heads) if heads % g == 0]
    assert len(choices) == (1 if heads == 1 else 3 if groups else 2)
    if groups:
        middle_group = heads // choices[1]
        assert all(abs(middle_group - 4) <= abs(g - 4) for g in groups)
    for kv in choices:  # each count builds a real attention layer that shares its heads
        torch.manual_seed(0)
        layer = Decoder(ta.ModelShape(**{**shape.__dict__, "kv_heads": kv})).blocks[0].attn
        out, (k, v) = layer(torch.randn(1, 3, shape.width))
        assert out.shape == (1, 3, shape.width) and k.shape == (1, kv, 3, shape.head_dim)


def test_kv_head_choices_for_the_stated_example_and_a_bad_group():
    assert memory.kv_head_choices(M) == (16, 4, 1)
    assert memory.kv_head_choices(ta.ModelShape(layers=1, heads=12, head_dim=8, ffn_width=8, vocab=8)) == (12, 3, 1)
    with pytest.raises(ValueError, match="group must be at least 1, got 0"):
        memory.kv_head_choices(M, group=0)
