"""Counts and reach, each checked against a brute-force or PyTorch reference."""
import numpy as np
import pytest
import torch
from torch.nn import functional as F

import transformer_arithmetic as ta
from book_machinery import figures, prose
from transformer_arithmetic import convolution, masks, memory, objective, summaries, units
from transformer_arithmetic.runs.reference_model import Attention, Block, FeedForward

pytestmark = pytest.mark.torch_kernels


def conv_reach(kernel: int, layers: int, dilated: bool) -> int:
    """Positions a stack of real torch convolutions mixes into one output (an impulse's spread)."""
    x = torch.zeros(1, 1, 40_000, dtype=torch.float64)
    x[0, 0, 20_000] = 1.0
    w = torch.ones(1, 1, kernel, dtype=torch.float64)
    for layer in range(layers):
        d = 2**layer if dilated else 1
        x = F.conv1d(x, w, padding=d * (kernel - 1) // 2, dilation=d)
    return int((x[0, 0] != 0).sum())


@pytest.mark.parametrize("kernel, layers", [(3, 1), (3, 5), (3, 12), (7, 4), (5, 3)])
def test_receptive_fields_match_stacked_torch_convolutions(kernel, layers):
    assert convolution.receptive_field(kernel, layers) == conv_reach(kernel, layers, dilated=False)
    if layers <= 12:
        assert convolution.dilated_receptive_field(kernel, layers) == conv_reach(kernel, layers, dilated=True)


def test_layers_to_span_are_the_fewest_that_cover():
    for kernel in (2, 3, 7, 15):
        for span in (1, 2, 17, 513, 8192):
            plain = convolution.layers_to_span(kernel, span)
            assert convolution.receptive_field(kernel, plain) >= span
            assert plain == 0 or convolution.receptive_field(kernel, plain - 1) < span
            dil = convolution.dilated_layers_to_span(kernel, span)
            assert convolution.dilated_receptive_field(kernel, dil) >= span
            assert dil == 0 or convolution.dilated_receptive_field(kernel, dil - 1) < span
    assert (convolution.layers_to_span(3, 513), convolution.layers_to_span(7, 513)) == (256, 86)
    assert (convolution.layers_to_span(3, 8192), convolution.dilated_layers_to_span(3, 8192)) == (4096, 13)


@pytest.mark.parametrize("call, words", [
    (lambda: convolution.receptive_field(1, 3), "a filter of width 1 never widens"),
    (lambda: convolution.layers_to_span(3, 0), "span must be at least 1, got 0"),
    (lambda: convolution.receptive_field(3, -2), "layers must be at least 0, got -2"),
])
def test_convolution_errors_name_the_bad_value(call, words):
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize("window, layers", [(2, 1), (3, 4), (4, 3), (6, 2)])
def test_window_reach_matches_boolean_reachability(window, layers):
    n = window * layers + 5
    one = masks.window_mask(n, window).astype(int)
    reach = np.linalg.matrix_power(one, layers) > 0  # who can influence whom through `layers` layers
    farthest = max(i - j for i in range(n) for j in range(n) if reach[i, j])
    assert masks.window_reach(window, layers) == farthest


@pytest.mark.parametrize("n, window", [(16, 4), (8192, 1024), (5, 9), (0, 3)])
def test_window_pairs_count_the_mask(n, window):
    if n <= 16:
        assert masks.window_pairs(n, window) == int(masks.window_mask(n, window).sum())
    else:
        assert masks.window_pairs(n, window) == 7_864_832
        assert round(100 * masks.window_pairs(n, window) / masks.causal_pairs(n)) == 23


def test_part_counts_match_torch_modules():
    plain = ta.ModelShape(layers=24, heads=16, head_dim=64, ffn_width=4096, vocab=32768, name="a plain decoder")
    for shape in (plain, ta.ModelShape(layers=1, heads=8, kv_heads=2, head_dim=16, ffn_width=96, vocab=10,
                                       gated_ffn=True, width=160, norm_bias=True)):
        with torch.device("meta"):
            attn, ffn = Attention(shape), FeedForward(shape)
        assert memory.attention_params(shape) == sum(p.numel() for p in attn.parameters())
        assert memory.ffn_params(shape) == sum(p.numel() for p in ffn.parameters())
        with torch.device("meta"):
            block = Block(shape)
        norms = 2 * shape.norm_numbers * shape.width
        block_params = memory.attention_params(shape) + memory.ffn_params(shape) + norms
        assert block_params == sum(p.numel() for p in block.parameters())


def test_shifted_rows_match_tensor_slicing():
    words = ["the", "arm", "lifts", "the", "red", "block"]
    given, wanted = objective.shift(words)
    ids = torch.arange(len(words) + 1)  # 0 stands for the start marker
    assert [(["<start>"] + words)[i] for i in ids[:-1]] == given
    assert [(["<start>"] + words)[i] for i in ids[1:]] == wanted


def test_signal_and_pass_counts():
    assert objective.label_signals(1000) == 50
    assert objective.label_signals(10_000_000) == 500_000
    assert (objective.passes_to_score(2048), objective.passes_to_score(2048, teacher_forcing=False)) == (1, 2048)
    for n in (1, 7, 512):
        brute = sum(len(range(k)) for k in range(1, n + 1))  # step k re-reads all k positions
        assert objective.passes_without_cache(n) == brute
    assert objective.passes_without_cache(512) == 131_328
    assert objective.passes_without_cache(3, prompt=3) == 4 + 5 + 6


def test_surviving_weight_matches_a_running_summary():
    steps, walked = 100, 1.0
    for _ in range(steps):   # a token's weight in h_t = 0.98 h_(t-1) + x_t, one step after another
        walked = 0.98 * walked
    assert summaries.surviving_weight(0.98, steps) == pytest.approx(walked, rel=1e-12)
    assert round(summaries.surviving_weight(0.98, 100), 3) == 0.133
    assert f"{summaries.surviving_weight(0.98, 511):.3g}" == "3.28e-05"
    with pytest.raises(ValueError, match=r"rate must lie in \(0, 1\], got 1.5"):
        summaries.surviving_weight(1.5, 3)


def test_figures_render_identically_and_need_alt_text():
    def draw():
        fig, ax = figures.new_figure()
        ax.plot([0, 1, 2], [3, 1, 2], label="a line")
        ax.legend()
        fig.canvas.draw()
        return figures.svg_text(fig), figures.png_preview(fig)

    first, png = draw()
    assert (first, png) == draw()
    assert "<dc:date>" not in first and "Matplotlib v" not in first and b"Software" not in png
    assert figures.svg_width(first) > 0
    with pytest.raises(ValueError, match="alt text"):
        figures.BookFigure(first, png, alt="  ", width_pt=504, smallest_pt=9)
    data, meta = figures.BookFigure(first, png, alt="A line falling from 3 to 1.", width_pt=504,
                                    smallest_pt=9)._repr_mimebundle_()
    assert set(data) == {"image/svg+xml", "image/png", "text/plain"}
    assert meta == {"image/svg+xml": {"alt": "A line falling from 3 to 1.", "width_pt": 504,
                                      "smallest_font_pt": 9},
                    "image/png": {"alt": "A line falling from 3 to 1."}}


def test_prose_values_are_plain_python():
    assert type(prose.plain(np.float64(0.5))) is float and type(prose.plain(np.int64(3))) is int
    assert prose.plain("text") == "text" and prose.plain(True) is True


def test_size_text_picks_a_readable_unit():
    assert [units.size_text(b) for b in (512, 1536, 48 * 2**20, 0.75 * 2**30, 12 * 2**30)] == [
        "512 bytes", "1.5 KiB", "48 MiB", "768 MiB", "12 GiB"]
    with pytest.raises(ValueError, match="nbytes must not be negative, got -1"):
        units.size_text(-1)
