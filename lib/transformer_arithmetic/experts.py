"""Expert parallel: a mixture-of-experts layer with its experts on different devices.

A mixture-of-experts feed-forward part holds E experts (each a feed-forward part of its
own) and a router that sends each token to k of them (Shazeer et al., 2017; GShard,
Lepikhin et al., 2021; Switch, Fedus et al., 2022). With the experts spread over N_ep
devices, E / N_ep each, every device sends each of its tokens to the devices that hold
the token's k experts and gets the results back: two all-to-alls a layer in the forward
pass. The step waits for the busiest expert, so a device whose experts are chosen more
than their share slows every other; GShard and Switch give each expert a capacity, the
capacity factor gamma times its even share k T / E of the T tokens, and drop (pass
around the layer) the tokens beyond it.

The counts below take the router's choices as uniform and independent: each token picks
each expert with chance k / E (it picks k different experts), so the tokens an expert
gets follow a binomial distribution. A trained router is less even than that.
"""

from __future__ import annotations

import math

import numpy as np

from .checks import checked_positive, checked_whole
from .collectives import ring_bytes_sent
from .shapes import ModelShape

__all__ = [
    "dispatch_bytes",
    "layer_all_to_all_bytes",
    "expert_capacity",
    "load_chances",
    "overflow_chance",
    "dropped_share",
]


def dispatch_bytes(m: ModelShape, tokens: int, chosen: int) -> int:
    """Bytes one device hands to the dispatching all-to-all for ``tokens`` tokens that
    each go to ``chosen`` experts: one vector of d numbers per token per expert."""
    tokens = checked_whole("tokens", tokens)
    chosen = checked_whole("chosen", chosen, minimum=1)
    return tokens * chosen * m.width * m.bytes_per_number


def layer_all_to_all_bytes(
    m: ModelShape, tokens: int, chosen: int, devices: int, backward: bool = False
) -> float:
    """Bytes each of ``devices`` sends for one layer: (N_ep - 1) / N_ep of what it
    hands the dispatch, and as much again to bring the results back (twice that with the
    backward pass), with the router's choices spread evenly."""
    one = ring_bytes_sent("all-to-all", dispatch_bytes(m, tokens, chosen), devices)
    return (4 if backward else 2) * one


def expert_capacity(tokens: int, experts: int, chosen: int, factor: float) -> int:
    """Tokens one expert takes at most: the capacity factor times its even share k T /
    E, rounded down."""
    t, e, k = _tek(tokens, experts, chosen)
    return math.floor(checked_positive("factor", factor) * t * k / e)


def load_chances(tokens: int, experts: int, chosen: int) -> np.ndarray:
    """The chance that one expert gets exactly 0, 1, ..., T of the ``tokens``: the
    binomial distribution with chance k / E a token (its logarithms summed term by term,
    so that large counts neither overflow nor underflow)."""
    t, e, k = _tek(tokens, experts, chosen)
    p = k / e
    if p == 1.0:
        return np.concatenate([np.zeros(t), [1.0]])
    log_p, log_q = math.log(p), math.log1p(-p)
    j = np.arange(t, dtype=float)
    steps = np.log(t - j) - np.log(j + 1) + (log_p - log_q)  # pmf(j + 1) / pmf(j)
    return np.exp(t * log_q + np.concatenate([[0.0], np.cumsum(steps)]))


def overflow_chance(tokens: int, experts: int, chosen: int, factor: float) -> float:
    """The chance that one expert is chosen by more tokens than its capacity."""
    cap = expert_capacity(tokens, experts, chosen, factor)
    return float(load_chances(tokens, experts, chosen)[cap + 1 :].sum())


def dropped_share(tokens: int, experts: int, chosen: int, factor: float) -> float:
    """The share of the tokens' expert choices that land beyond an expert's capacity and
    are dropped: the expected excess over the capacity, over the expected load k T /
    E."""
    t, e, k = _tek(tokens, experts, chosen)
    cap = expert_capacity(t, e, k, factor)
    beyond = load_chances(t, e, k)[cap + 1 :]
    excess = float((np.arange(1, beyond.size + 1) * beyond).sum())
    return excess / (t * k / e)


def _tek(tokens: int, experts: int, chosen: int) -> tuple[int, int, int]:
    """Tokens (at least 1), experts (at least 1) and experts chosen a token (1 to E)."""
    t = checked_whole("tokens", tokens, minimum=1)
    e = checked_whole("experts", experts, minimum=1)
    k = checked_whole("chosen", chosen, minimum=1)
    if k > e:
        raise ValueError(f"chosen={k} is more than the {e} experts")
    return t, e, k
