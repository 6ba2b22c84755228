"""Linear attention: attention without its softmax, carried along the row as a state.

Drop the softmax from one head and weight each earlier token by how well its key matches
the query, times a share ``gamma`` kept per step (1: nothing forgotten). The output at t
is then

    o_t = sum over s <= t of  Gamma[t, s] * (q_t . k_s) * v_s,
    Gamma[t, s] = gamma_(s+1) * ... * gamma_t   (1 when s = t).

The same sum can be computed two ways. As a walk: a state S_t, a d_k-by-d_v matrix,
updated once per token, S_t = gamma_t S_(t-1) + k_t v_t^T, read by o_t = S_t^T q_t. Or
all at once: O = (Gamma * Q K^T) V, a masked matrix like attention's grid of scores
(Mamba-2's "duality": the two are one computation). The chunked form mixes them: the
masked matrix inside each chunk, the state carried between chunks.

The delta rule (DeltaNet and its gated form) writes differently: before adding the new
pair it removes what the state already returns for that key, S_t = gamma_t (I - beta_t
k_t k_t^T) S_(t-1) + beta_t k_t v_t^T.

Shapes: q and k are (tokens, d_k), v is (tokens, d_v), one head.
"""

from __future__ import annotations

import numpy as np

from .checks import checked_fraction, checked_positive, checked_whole

__all__ = [
    "decay_matrix",
    "linear_attention_walk",
    "linear_attention_masked",
    "linear_attention_chunked",
    "delta_rule_walk",
    "state_numbers",
    "read_errors",
    "walk_flops_per_token",
    "grid_flops_per_token",
    "chunked_flops_per_token",
    "best_chunk",
]


def _rates(rates, n: int) -> np.ndarray:
    """The share kept at each of ``n`` steps, each in (0, 1]."""
    g = np.broadcast_to(np.asarray(rates, dtype=float), (n,)).copy()
    for r in np.unique(g):
        checked_fraction("rates", r)
    return g


def _qkv(q, k, v) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, k, v = (np.asarray(x, dtype=float) for x in (q, k, v))
    if q.ndim != 2 or k.shape != q.shape or v.ndim != 2 or v.shape[0] != q.shape[0]:
        raise ValueError(
            f"q, k, v must be (tokens, d_k), (tokens, d_k), (tokens, d_v); got "
            f"{q.shape}, {k.shape}, {v.shape}"
        )
    if q.shape[0] == 0:
        raise ValueError("q, k, v must hold at least one token")
    return q, k, v


def decay_matrix(rates, tokens: int) -> np.ndarray:
    """Gamma[t, s]: the share of token s left at step t, the product of the rates of
    steps s+1..t (1 on the diagonal, 0 above it)."""
    n = checked_whole("tokens", tokens, minimum=1)
    g = _rates(rates, n)
    out = np.zeros((n, n))
    for t in range(n):
        out[t, t] = 1.0
        for s in range(t - 1, -1, -1):
            out[t, s] = out[t, s + 1] * g[s + 1]
    return out


def linear_attention_walk(q, k, v, rates=1.0) -> tuple[np.ndarray, np.ndarray]:
    """(outputs, last state) of one head of linear attention run as a walk:
    S_t = gamma_t S_(t-1) + k_t v_t^T, o_t = S_t^T q_t."""
    q, k, v = _qkv(q, k, v)
    g = _rates(rates, q.shape[0])
    state = np.zeros((q.shape[1], v.shape[1]))
    out = np.empty((q.shape[0], v.shape[1]))
    for t in range(q.shape[0]):
        state = g[t] * state + np.outer(k[t], v[t])
        out[t] = state.T @ q[t]
    return out, state


def linear_attention_masked(q, k, v, rates=1.0) -> np.ndarray:
    """Outputs of one head of linear attention computed all at once:
    O = (Gamma * Q K^T) V, Gamma the decay matrix (causal: 0 above the diagonal)."""
    q, k, v = _qkv(q, k, v)
    return (decay_matrix(rates, q.shape[0]) * (q @ k.T)) @ v


def linear_attention_chunked(q, k, v, rates, chunk: int) -> np.ndarray:
    """Outputs of one head of linear attention in chunks of ``chunk`` tokens: the masked
    matrix inside each chunk, plus what the state carried in from earlier chunks
    returns; the state is updated once per chunk."""
    q, k, v = _qkv(q, k, v)
    c = checked_whole("chunk", chunk, minimum=1)
    n = q.shape[0]
    g = _rates(rates, n)
    state = np.zeros((q.shape[1], v.shape[1]))
    out = np.empty((n, v.shape[1]))
    for start in range(0, n, c):
        part = slice(start, min(start + c, n))
        kept = np.cumprod(g[part])  # share of the incoming state left at each step
        inside = decay_matrix(g[part], part.stop - start)
        out[part] = (inside * (q[part] @ k[part].T)) @ v[part]
        out[part] += kept[:, None] * (q[part] @ state)
        state = kept[-1] * state + (inside[-1][:, None] * k[part]).T @ v[part]
    return out


def delta_rule_walk(q, k, v, beta, rates=1.0) -> tuple[np.ndarray, np.ndarray]:
    """(outputs, last state) of one head written with the delta rule:
    S_t = gamma_t (I - beta_t k_t k_t^T) S_(t-1) + beta_t k_t v_t^T, o_t = S_t^T q_t
    (``beta`` in [0, 1] is how strongly each token overwrites what its key returned)."""
    q, k, v = _qkv(q, k, v)
    n = q.shape[0]
    g = _rates(rates, n)
    b = np.broadcast_to(np.asarray(beta, dtype=float), (n,))
    for w in np.unique(b):
        checked_fraction("beta", w, low_open=False)
    state = np.zeros((q.shape[1], v.shape[1]))
    out = np.empty((n, v.shape[1]))
    for t in range(n):
        returned = state.T @ k[t]  # what the state gives back for this key now
        state = g[t] * state + b[t] * np.outer(k[t], v[t] - g[t] * returned)
        out[t] = state.T @ q[t]
    return out, state


def state_numbers(key_dim: int, value_dim: int, heads: int = 1) -> int:
    """Numbers a linear-attention layer carries: a key_dim-by-value_dim state per head,
    however long the row."""
    return (
        checked_whole("key_dim", key_dim, minimum=1)
        * checked_whole("value_dim", value_dim, minimum=1)
        * checked_whole("heads", heads, minimum=1)
    )


def read_errors(keys, values, rule: str = "additive", beta: float = 1.0) -> np.ndarray:
    """Write the (key, value) pairs in order into one state, then read it with each key:
    the distance of each read from its own value, over that value's length (0: handed
    back exactly). ``rule``: "additive" (S_t = S_(t-1) + k_t v_t^T) or "delta" (the
    delta rule at strength ``beta``)."""
    k = np.asarray(keys, dtype=float)
    v = np.asarray(values, dtype=float)
    if k.ndim != 2 or v.ndim != 2 or k.shape[0] != v.shape[0] or k.shape[0] == 0:
        raise ValueError(
            f"keys and values must be (pairs, d_k) and (pairs, d_v); got {k.shape}, "
            f"{v.shape}"
        )
    if rule == "additive":
        state = linear_attention_walk(k, k, v)[1]
    elif rule == "delta":
        state = delta_rule_walk(k, k, v, beta)[1]
    else:
        raise ValueError(f"rule must be additive or delta, got {rule!r}")
    return np.linalg.norm(k @ state - v, axis=1) / np.linalg.norm(v, axis=1)


def walk_flops_per_token(key_dim: int, value_dim: int) -> int:
    """Matrix-product operations the walk spends on one token: the outer product
    k v^T added to the state and the read S^T q, 2 d_k d_v each (the decay, one
    multiply a number, is elementwise and left out)."""
    return 4 * state_numbers(key_dim, value_dim)


def grid_flops_per_token(tokens: int, key_dim: int, value_dim: int) -> float:
    """Matrix-product operations the masked grid (Gamma * Q K^T) V spends a token over a
    row of ``tokens``, computed whole as a matrix product does: 2 n (d_k + d_v)."""
    n = checked_whole("tokens", tokens, minimum=1)
    return 2 * n * (checked_whole("key_dim", key_dim, minimum=1)
                    + checked_whole("value_dim", value_dim, minimum=1))


def chunked_flops_per_token(chunk: int, key_dim: int, value_dim: int) -> float:
    """Matrix-product operations the chunked form spends a token, in its four steps:
    the grid inside each chunk of Q, 2 Q (d_k + d_v); each chunk's own state, K^T V,
    2 d_k d_v; the states passed from chunk to chunk (elementwise, left out); and each
    chunk's queries reading the state carried in, 2 d_k d_v."""
    return grid_flops_per_token(chunk, key_dim, value_dim) + walk_flops_per_token(
        key_dim, value_dim)


def best_chunk(
    flops_per_s: float, bytes_per_s: float, key_dim: int, value_dim: int,
    state_bytes: int,
) -> float:
    """The chunk size Q that makes the chunked form quickest on a chip: the grid's
    arithmetic, 2 Q (d_k + d_v) a token over R, grows with Q, while the states written
    and read between chunks, 2 d_k d_v b_s / Q bytes a token over S, shrink with it;
    their sum is least at Q = sqrt(R d_k d_v b_s / (S (d_k + d_v)))."""
    r = checked_positive("flops_per_s", flops_per_s)
    s = checked_positive("bytes_per_s", bytes_per_s)
    numbers = state_numbers(key_dim, value_dim)
    b = checked_whole("state_bytes", state_bytes, minimum=1)
    return float(np.sqrt(r * numbers * b / (s * (key_dim + value_dim))))
