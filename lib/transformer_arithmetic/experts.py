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

Serving engines (vLLM, SGLang, DeepSeek's own) drop no tokens: they meet an uneven load
with more copies of the busiest experts (redundant experts, placed by DeepSeek's EPLB)
and DeepSeek-V3 trains its router to balance without a loss term. DeepSeek-V3 also
limits each token to the experts of at most four nodes, sends it once to each node it
reaches (the node's own fast links hand it on), dispatches it in one-byte numbers with a
scale for every 128 and brings the results back in two-byte ones.
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
    "scaled_bytes_a_number",
    "token_traffic_bytes",
    "expected_groups_reached",
    "replicated_loads",
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


def scaled_bytes_a_number(
    bits: int = 8, group: int = 128, scale_bytes: int = 4
) -> float:
    """Bytes one number costs in a block-scaled format: ``bits`` of its own and a
    ``scale_bytes`` scale shared by each ``group`` (DeepSeek-V3's fp8 dispatch: one byte
    and a four-byte scale for every 128 numbers)."""
    bits = checked_whole("bits", bits, minimum=1)
    group = checked_whole("group", group, minimum=1)
    return bits / 8 + checked_whole("scale_bytes", scale_bytes) / group


def token_traffic_bytes(
    width: int,
    tokens: int,
    copies: float,
    dispatch_bytes: float,
    combine_bytes: float,
) -> dict[str, float]:
    """Bytes one device sends for one layer's experts: ``copies`` of each of its
    ``tokens`` vectors of ``width`` numbers out at ``dispatch_bytes`` a number, and as
    many results back at ``combine_bytes`` a number."""
    width = checked_whole("width", width, minimum=1)
    tokens = checked_whole("tokens", tokens)
    copies = float(copies)
    if copies < 0:
        raise ValueError(f"copies must be 0 or more, got {copies}")
    out = tokens * copies * width
    return {"dispatch": out * checked_positive("dispatch_bytes", dispatch_bytes),
            "combine": out * checked_positive("combine_bytes", combine_bytes)}


def expected_groups_reached(experts: int, groups: int, chosen: int) -> float:
    """The groups (nodes) a token's ``chosen`` experts fall in on average when it picks
    them at random among ``experts`` split evenly into ``groups``: G (1 - C(E - E/G, k)
    / C(E, k))."""
    e = checked_whole("experts", experts, minimum=1)
    g = checked_whole("groups", groups, minimum=1)
    k = checked_whole("chosen", chosen, minimum=1)
    if e % g or k > e:
        raise ValueError(f"experts={e} must split into groups={g} and hold chosen={k}")
    return g * (1 - math.comb(e - e // g, k) / math.comb(e, k))


def replicated_loads(loads: list[float], devices: int, redundant: int) -> list[float]:
    """Each device's load when ``redundant`` extra copies go, one at a time, to the
    expert with the most load per copy (a copy shares its expert's load evenly) and the
    copies are then placed heaviest first on the least loaded device with room, (E + R)
    / N copies a device: the greedy idea of DeepSeek's EPLB."""
    n = checked_whole("devices", devices, minimum=1)
    r = checked_whole("redundant", redundant)
    if not loads or (len(loads) + r) % n:
        raise ValueError(f"{len(loads)} experts and {r} copies do not fill {n} devices")
    copies = [1] * len(loads)
    for _ in range(r):
        hot = max(range(len(loads)), key=lambda e: loads[e] / copies[e])
        copies[hot] += 1
    pieces = sorted((loads[e] / copies[e] for e in range(len(loads))
                     for _ in range(copies[e])), reverse=True)
    room, held = (len(loads) + r) // n, [0.0] * n
    count = [0] * n
    for piece in pieces:
        d = min((d for d in range(n) if count[d] < room), key=lambda d: held[d])
        held[d] += piece
        count[d] += 1
    return held
