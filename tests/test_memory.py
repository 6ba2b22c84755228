"""Parameters and memory, checked against figures worked out for one model and chip (defined
here, not the book's example) and against real PyTorch objects."""
import pytest
import torch
from torch.nn import functional as F

import decoder_reference as R
from decoder_reference import CHIP_24GIB, PLAIN_335M
import transformer_arithmetic as ta
from transformer_arithmetic import memory
from transformer_arithmetic.runs.reference_model import Decoder, cache_bytes

pytestmark = pytest.mark.torch_kernels

M, A = PLAIN_335M, CHIP_24GIB


def test_parameter_count_matches_a_torch_module():
    assert memory.parameter_count(M) == 335_594_496 == R.parameters(M)


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
    assert memory.parameter_count(shape) == R.parameters(shape)


def test_weight_and_training_memory_are_the_stated_figures():
    assert memory.weight_bytes(M) == 671_188_992
    kept = memory.training_memory(M, batch=8, seq_len=512, keep_scores=True, dropout=True)
    gib = {k: round(v / ta.GIB, 3) for k, v in kept.items()}
    # ZeRO's mixed-precision Adam: 2 + 2 bytes of weights and gradients, 12 of optimiser and master
    assert (kept["weights"] + kept["gradients"] + kept["optimiser"] + kept["master copy"]
            == 16 * R.parameters(M))
    # Korthikanti et al.: s*b*h*(34 + 5*a*s/h) bytes a layer; s*b*h*34 without the score grids
    s, b, h, a = 512, 8, M.width, M.heads
    top = 2 * s * b * h * 2              # the final norm's and the output layer's inputs
    assert memory.top_activation_bytes(M, 8, 512) == top
    assert kept["activations"] == M.layers * s * b * h * (34 + 5 * a * s // h) + top
    assert memory.activation_bytes(M, 8, 512, keep_scores=False, dropout=True) == M.layers * s * b * h * 34
    assert kept["logits"] == 8 * 512 * M.vocab * 4 == 512 * ta.MIB
    assert gib == {"weights": 0.625, "gradients": 0.625, "optimiser": 2.5, "master copy": 1.25,
                   "activations": 6.953, "logits": 0.5}
    # today's defaults: no dropout, score grids never stored (a fused kernel): 32 bytes a layer
    # for every token and channel, two for each of 16 saved vectors of the width's size
    today = memory.training_memory(M, batch=8, seq_len=512)
    assert today["activations"] - top == M.layers * s * b * h * 32 == 3 * ta.GIB
    no_master = memory.training_memory(ta.ModelShape(**{**M.__dict__, "bytes_per_number": 4}))
    assert no_master["master copy"] == 0


def test_cache_per_token_and_per_conversation():
    assert memory.kv_bytes_per_token(M) == 98_304
    assert memory.kv_cache_bytes(M, 8192) == 768 * ta.MIB
    assert memory.kv_cache_bytes(M, 32768) == 3072 * ta.MIB
    # a window of 1,024 positions: the 1,023 before the newest, all the next token reads
    assert memory.kv_cache_bytes(M, 32768, window=1024) == 1023 * 98_304
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
    cache_only = (A.memory_bytes - R.weight_bytes(M)) // (R.cache_bytes_per_token(grouped) * 2048)
    assert cache_only == 498


def test_score_grid_state_and_hybrid():
    assert memory.score_grid_bytes(8192) == 128 * ta.MIB
    assert memory.score_grid_bytes(32768) == 2048 * ta.MIB
    assert memory.score_grid_bytes(128) == 32 * ta.KIB
    assert memory.summary_state_bytes(M, 16) == 0.75 * ta.MIB
    assert round(memory.hybrid_cache_bytes(M, 32768, 3) / ta.MIB) == 385
    assert memory.hybrid_cache_bytes(M, 32768, M.layers) == 32768 * R.cache_bytes_per_token(M)


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
    from transformer_arithmetic.runs.reference_model import StaticCache

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


class PaperLayer(torch.nn.Module):
    """One pre-norm transformer layer written out op by op as Korthikanti et al. describe it
    (LayerNorm, attention with its score grid, a feed-forward part, dropout with one-byte masks),
    with grouped key-value heads and a gated feed-forward part as options. ``recompute`` wraps
    the core of attention (scores, softmax, dropout, weighted sum) in a checkpoint, so that its
    score grids are recomputed in the backward pass instead of kept."""

    def __init__(self, shape: ta.ModelShape, dropout: float, recompute: bool) -> None:
        super().__init__()
        nn = torch.nn
        self.s, self.p, self.recompute = shape, dropout, recompute
        h, q, kv, f = shape.width, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim, shape.ffn_width
        self.norm1, self.norm2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.q, self.k, self.v, self.o = nn.Linear(h, q), nn.Linear(h, kv), nn.Linear(h, kv), nn.Linear(q, h)
        self.up, self.down = nn.Linear(h, f), nn.Linear(f, h)
        self.gate = nn.Linear(h, f) if shape.gated_ffn else None

    def drop(self, x):
        return torch.native_dropout(x, self.p, True)[0] if self.p else x  # keeps a bool mask

    def core(self, q, k, v):
        b, kvh, gt, d = q.shape
        t = k.shape[2]
        blocked = torch.full((t, t), float("-inf"), dtype=q.dtype).triu(1).repeat(gt // t, 1)
        weights = torch.softmax(q @ k.transpose(-1, -2) / d**0.5 + blocked, dim=-1)
        return self.drop(weights) @ v

    def forward(self, x):
        s, (b, t, h) = self.s, x.shape
        g, d = s.heads // s.kv_heads, s.head_dim
        y = self.norm1(x)
        # the queries of one group sit one after another along the rows: keys stay at their own width
        q = self.q(y).view(b, t, s.kv_heads, g, d).permute(0, 2, 3, 1, 4).reshape(b, s.kv_heads, g * t, d)
        k = self.k(y).view(b, t, s.kv_heads, d).transpose(1, 2)
        v = self.v(y).view(b, t, s.kv_heads, d).transpose(1, 2)
        core = (lambda *a: torch.utils.checkpoint.checkpoint(self.core, *a, use_reentrant=True)) if self.recompute else self.core
        mixed = core(q, k, v).view(b, s.kv_heads, g, t, d).permute(0, 3, 1, 2, 4).reshape(b, t, s.heads * d)
        x = x + self.drop(self.o(mixed))
        y = self.norm2(x)
        inner = F.silu(self.gate(y)) * self.up(y) if self.gate is not None else F.gelu(self.up(y))
        return x + self.drop(self.down(inner))


def kept_for_backward(layer: torch.nn.Module, batch: int, seq_len: int, dtype: torch.dtype) -> int:
    """Bytes of the tensors autograd really keeps for the backward pass of one layer, each
    storage counted once; the weights, and the per-position statistics of the normalisations
    (a few bytes a token, which the count leaves out), are not counted."""
    layer = layer.to(dtype).train()
    weights = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    kept = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights and t.numel() > batch * seq_len:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    x = torch.randn(batch, seq_len, layer.s.width, dtype=dtype, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x)
    return sum(kept.values())


@pytest.mark.parametrize("changes", [{}, {"kv_heads": 2}, {"gated_ffn": True, "ffn_width": 96}, {"bytes_per_number": 4}])
@pytest.mark.parametrize("keep_scores", [True, False])
@pytest.mark.parametrize("dropout", [True, False])
def test_activation_count_matches_what_autograd_keeps(changes, keep_scores, dropout):
    shape = ta.ModelShape(**{**ta.ModelShape(layers=1, heads=4, head_dim=16, ffn_width=256, vocab=10).__dict__,
                             **changes})
    batch, seq_len = 2, 24
    torch.manual_seed(0)
    layer = PaperLayer(shape, dropout=0.1 if dropout else 0.0, recompute=not keep_scores)
    dtype = torch.bfloat16 if shape.bytes_per_number == 2 else torch.float32
    real = kept_for_backward(layer, batch, seq_len, dtype)
    predicted = memory.layer_activation_bytes(shape, batch, seq_len, keep_scores=keep_scores, dropout=dropout)
    assert real == sum(predicted.values()) == memory.activation_bytes(shape, batch, seq_len,
                                                                      keep_scores=keep_scores, dropout=dropout)


def test_logits_bytes_match_a_real_output_layer():
    shape = ta.ModelShape(layers=1, heads=2, head_dim=8, ffn_width=32, vocab=300)
    with torch.no_grad():
        logits, _ = Decoder(shape)(torch.zeros(3, 7, dtype=torch.long))
    assert memory.logits_bytes(shape, 3, 7) == logits.float().numel() * 4 == logits.nbytes
    with pytest.raises(ValueError, match="seq_len must be at least 1, got 0"):
        memory.logits_bytes(shape, 3, 0)
