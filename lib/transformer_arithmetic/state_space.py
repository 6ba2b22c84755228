"""State-space layers: a bank of running summaries per channel, read out by a vector.

One channel of a state-space layer carries N_s numbers h_t (the state), updated per
token by a diagonal matrix A, an input vector B and a readout vector C:

    h_t = Abar_t * h_(t-1) + Bbar_t x_t,    o_t = C_t . h_t,

with Abar_t = exp(Delta_t A) and Bbar_t = (exp(Delta_t A) - 1) / A * B_t (the
zero-order hold with step Delta_t). In the time-invariant layers (S4, S4D, LRU) Delta,
B and C are fixed after training, so the weight on token s read at t depends only on
t - s: the layer is one long causal filter, which the FFT computes at once. In a
selective layer (Mamba) Delta_t, B_t and C_t are computed from each token, so the
weight on token s read at t is C_t . (Abar_(s+1) ... Abar_t) Bbar_s: a read that depends
on what both tokens hold, through N_s numbers.

The sizes: a Mamba block widens the model's d channels to E d (E, the expansion) and
keeps N_s state numbers per widened channel, plus the last k inputs of its short
causal filter (``transformers`` keeps k; the next token needs k - 1).
"""

from __future__ import annotations

import numpy as np

from .checks import checked_whole

__all__ = [
    "zoh",
    "selective_walk",
    "selective_weights",
    "bank_kernel",
    "bank_walk",
    "mamba_state_bytes",
    "mamba_filter_bytes",
    "mamba2_filter_channels",
]


def zoh(delta, a) -> tuple[np.ndarray, np.ndarray]:
    """(Abar, the factor on B) for step sizes ``delta`` (>= 0) and a diagonal ``a``
    (< 0): exp(delta a) and (exp(delta a) - 1) / a, elementwise (broadcast)."""
    d = np.asarray(delta, dtype=float)
    a = np.asarray(a, dtype=float)
    if np.any(~np.isfinite(d)) or np.any(d < 0):
        raise ValueError(f"delta must be finite and >= 0, got {delta!r}")
    if np.any(~np.isfinite(a)) or np.any(a >= 0):
        raise ValueError(f"a must hold finite numbers below 0, got {a!r}")
    kept = np.exp(d * a)
    return kept, np.expm1(d * a) / a


def _selective(x, delta, a, b, c):
    x = np.asarray(x, dtype=float)
    b, c = np.asarray(b, dtype=float), np.asarray(c, dtype=float)
    n = x.shape[0] if x.ndim == 1 else -1
    a = np.asarray(a, dtype=float)
    shapes_ok = x.ndim == 1 and n > 0 and a.ndim == 1 and b.shape == (n, a.size)
    if not shapes_ok or c.shape != b.shape:
        raise ValueError(
            f"x must be (tokens,), a (N,), b and c (tokens, N); got {x.shape}, "
            f"{a.shape}, {b.shape}, {c.shape}"
        )
    d = np.broadcast_to(np.asarray(delta, dtype=float), (n,))
    kept, factor = zoh(d[:, None], a[None, :])
    return x, kept, factor * b, c


def selective_walk(x, delta, a, b, c) -> np.ndarray:
    """Outputs of one channel of a selective state-space layer, walked token by token:
    h_t = Abar_t h_(t-1) + Bbar_t x_t, o_t = C_t . h_t (``delta``: one step per token;
    ``a``: the N diagonal entries; ``b``, ``c``: one N-vector per token)."""
    x, kept, bbar, c = _selective(x, delta, a, b, c)
    h = np.zeros(kept.shape[1])
    out = np.empty(x.shape[0])
    for t in range(x.shape[0]):
        h = kept[t] * h + bbar[t] * x[t]
        out[t] = c[t] @ h
    return out


def selective_weights(delta, a, b, c) -> np.ndarray:
    """M[t, s]: the weight of token s in the output at t, C_t . (Abar_(s+1) ... Abar_t)
    Bbar_s (0 above the diagonal), so that the outputs are M @ x."""
    b = np.asarray(b, dtype=float)
    if b.ndim != 2 or b.shape[0] == 0:
        raise ValueError(f"b must be (tokens, N), got {b.shape}")
    _, kept, bbar, c = _selective(np.zeros(b.shape[0]), delta, a, b, c)
    n = b.shape[0]
    out = np.zeros((n, n))
    for s in range(n):
        carried = bbar[s].copy()  # what token s wrote, as it stands at step t
        for t in range(s, n):
            if t > s:
                carried = carried * kept[t]
            out[t, s] = c[t] @ carried
    return out


def bank_kernel(rates, b, c, length: int) -> np.ndarray:
    """The long filter of a time-invariant layer: K_j = Re(sum over n of c_n rates_n^j
    b_n) for j = 0 .. length-1 (``rates`` may be complex, |rate| < 1)."""
    length = checked_whole("length", length, minimum=1)
    lam = np.asarray(rates, dtype=complex)
    if lam.ndim != 1 or np.any(np.abs(lam) >= 1):
        raise ValueError(
            f"rates must be one row of numbers inside |r| < 1, got {rates!r}"
        )
    powers = lam[None, :] ** np.arange(length)[:, None]
    weights = np.asarray(c, dtype=complex) * np.asarray(b, dtype=complex)
    return np.real(powers @ weights)


def bank_walk(x, rates, b, c) -> np.ndarray:
    """Outputs of a time-invariant layer walked token by token: h_t = rates * h_(t-1) +
    b x_t, o_t = Re(c . h_t)."""
    x = np.asarray(x, dtype=float)
    lam = np.asarray(rates, dtype=complex)
    b, c = np.asarray(b, dtype=complex), np.asarray(c, dtype=complex)
    h = np.zeros(lam.shape, dtype=complex)
    out = np.empty(x.shape[0])
    for t in range(x.shape[0]):
        h = lam * h + b * x[t]
        out[t] = np.real(c @ h)
    return out


def mamba_state_bytes(
    layers: int, width: int, expand: int, state_size: int, bytes_per_number: int = 4
) -> int:
    """Bytes of the running summaries a stack of Mamba blocks holds: layers x (expand x
    width) channels x state_size numbers, however long the text (Mamba-2's heads of
    head_dim channels hold the same count)."""
    return (
        checked_whole("layers", layers, minimum=1)
        * checked_whole("expand", expand, minimum=1)
        * checked_whole("width", width, minimum=1)
        * checked_whole("state_size", state_size, minimum=1)
        * checked_whole("bytes_per_number", bytes_per_number, minimum=1)
    )


def mamba_filter_bytes(
    layers: int, channels: int, taps: int, bytes_per_number: int = 2
) -> int:
    """Bytes of the short causal filter's window a stack keeps: the last ``taps`` inputs
    of each of its ``channels`` in every layer."""
    return (
        checked_whole("layers", layers, minimum=1)
        * checked_whole("channels", channels, minimum=1)
        * checked_whole("taps", taps, minimum=1)
        * checked_whole("bytes_per_number", bytes_per_number, minimum=1)
    )


def mamba2_filter_channels(inner: int, groups: int, state_size: int) -> int:
    """Channels a Mamba-2 block's short filter runs over: x (inner) and its B and C
    (state_size each, per group)."""
    return checked_whole("inner", inner, minimum=1) + 2 * checked_whole(
        "groups", groups, minimum=1
    ) * checked_whole("state_size", state_size, minimum=1)
