"""How far a stack of convolutions can see: plain filters, filters with doubling gaps
(once, or repeated in blocks as WaveNet did), and one long filter computed with the
FFT."""

from __future__ import annotations

import numpy as np

from .checks import checked_whole

__all__ = [
    "receptive_field",
    "layers_to_span",
    "dilated_receptive_field",
    "dilated_layers_to_span",
    "repeated_dilated_receptive_field",
    "causal_filter",
    "causal_filter_fft",
    "fft_padded_length",
    "direct_filter_flops",
    "fft_filter_flops",
    "layer_gaps",
    "taps",
]


def _kernel(kernel: int) -> int:
    k = checked_whole("kernel", kernel, minimum=1)
    if k < 2:
        raise ValueError(
            f"a filter of width {k} never widens what a position sees; use kernel >= 2"
        )
    return k


def receptive_field(kernel: int, layers: int) -> int:
    """Positions one output sees after ``layers`` filters of width ``kernel``: 1 + L(k -
    1)."""
    layers = checked_whole("layers", layers)
    return 1 + layers * (_kernel(kernel) - 1)


def layers_to_span(kernel: int, span: int) -> int:
    """Fewest plain layers whose receptive field covers ``span`` positions."""
    k, s = _kernel(kernel), checked_whole("span", span, minimum=1)
    return -(-(s - 1) // (k - 1))


def dilated_receptive_field(kernel: int, layers: int) -> int:
    """Positions seen after ``layers`` filters whose gaps double each layer (1, 2, 4,
    ...)."""
    layers = checked_whole("layers", layers)
    return 1 + (_kernel(kernel) - 1) * (2**layers - 1)


def dilated_layers_to_span(kernel: int, span: int) -> int:
    """Fewest doubling-gap layers whose receptive field covers ``span`` positions."""
    k, s = _kernel(kernel), checked_whole("span", span, minimum=1)
    layers = 0
    while dilated_receptive_field(k, layers) < s:
        layers += 1
    return layers


def layer_gaps(layers: int, dilated: bool = False) -> list[int]:
    """Gap, in positions, between neighbouring taps of each layer, lowest layer first:
    1 everywhere for plain filters, 1, 2, 4, ... when the gaps double."""
    layers = checked_whole("layers", layers)
    return [2**layer if dilated else 1 for layer in range(layers)]


def taps(kernel: int, layers: int, dilated: bool = False) -> list[list[int]]:
    """For one output of a stack of backward-looking filters, the positions that feed it
    at each level, as distances back from the output: level 0 (the inputs) first, the
    output ([0]) last.

    A filter of width k at gap g reads its own position and the k - 1 positions g, 2g,
    ... behind it, so a position p at one level is fed by p, p + g, ..., p + (k - 1)g
    below."""
    k = _kernel(kernel)
    levels = [[0]]
    for gap in reversed(layer_gaps(layers, dilated)):
        levels.append(sorted({p + j * gap for p in levels[-1] for j in range(k)}))
    return levels[::-1]


def repeated_dilated_receptive_field(kernel: int, layers: int, blocks: int) -> int:
    """Positions one output sees through ``blocks`` blocks, each of ``layers`` filters
    whose gaps double (1, 2, ..., 2**(layers-1)) and start again at 1 in the next block:
    1 + blocks (k - 1)(2**layers - 1)."""
    blocks = checked_whole("blocks", blocks, minimum=1)
    return 1 + blocks * (dilated_receptive_field(kernel, layers) - 1)


def _row_and_filter(x, kernel) -> tuple[np.ndarray, np.ndarray]:
    x, f = np.asarray(x, dtype=float), np.asarray(kernel, dtype=float)
    if x.ndim != 1 or f.ndim != 1 or x.size == 0 or f.size == 0:
        raise ValueError(
            f"x and kernel must be non-empty rows, got {x.shape}, {f.shape}"
        )
    return x, f


def causal_filter(x, kernel) -> np.ndarray:
    """o_t = sum over j of kernel[j] x_(t-j): a causal filter whose weight depends only
    on the distance j back, summed directly (n times the filter's length operations)."""
    x, f = _row_and_filter(x, kernel)
    out = np.zeros_like(x)
    for j, w in enumerate(f[: x.size]):
        out[j:] += w * x[: x.size - j]
    return out


def causal_filter_fft(x, kernel) -> np.ndarray:
    """The same causal filter computed with the fast Fourier transform (about n log n
    operations, however long the filter): both rows padded to twice the length, so the
    circular product does not wrap round."""
    x, f = _row_and_filter(x, kernel)
    size = fft_padded_length(x.size)
    f = f[: x.size]
    spectrum = np.fft.rfft(x, size) * np.fft.rfft(f, size)
    return np.fft.irfft(spectrum, size)[: x.size]


def fft_padded_length(n: int) -> int:
    """Length both rows are padded to for a causal filter by FFT over ``n`` positions:
    the smallest power of two of at least 2n - 1, so the circular product does not wrap
    round."""
    n = checked_whole("n", n, minimum=1)
    return 1 << (2 * n - 1).bit_length()


def direct_filter_flops(n: int) -> int:
    """Operations of one filter as long as the row, summed directly over ``n``
    positions: position t takes t + 1 multiply-adds, n(n + 1)/2 in all, two operations
    each."""
    n = checked_whole("n", n, minimum=1)
    return n * (n + 1)


def fft_filter_flops(n: int) -> float:
    """Operations of the same filter by FFT: three real FFTs of the padded length N (the
    row's, the filter's and the inverse), each about 2.5 N log2 N operations (half a
    complex FFT's 5 N log2 N, the count FFTW's benchmarks use), and the product of the
    N/2 + 1 complex pairs between them, 6 operations each."""
    size = fft_padded_length(n)
    return 3 * 2.5 * size * np.log2(size) + 6 * (size // 2 + 1)
