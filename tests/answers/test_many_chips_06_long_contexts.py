"""Answers of the long-context section: the ring's pieces counted as they pass, the whole
cache from a real decoder's cache, the causal work counted block by block, and the design's
ring searched piece size by piece size with its allowed pairs counted on a mask."""
import numpy as np
import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token
from transformer_arithmetic.examples.many_chips import NETWORK, REAL_CHIP, grown
from transformer_arithmetic.units import size_text

pytestmark = [pytest.mark.notebooks, pytest.mark.torch_kernels]

NOTEBOOK = "many_chips/06_long_contexts"
BIG = grown(ta.EXAMPLE_MODEL)


def ring_sent(tokens, n):
    """Bytes one device sends as the pieces go round: it passes on every piece but the last
    one it receives."""
    piece = 2 * (tokens // n) * BIG.kv_heads * BIG.head_dim * BIG.bytes_per_number
    held, sent = 0, 0
    for _ in range(n - 1):
        sent += piece
        held = (held - 1) % n
    return sent


def busiest_over_mean(n, zigzag):
    pieces, size = (2 * n if zigzag else n), 2
    allowed = np.tril(np.ones((pieces * size, pieces * size), bool))
    owner = [min(p, 2 * n - 1 - p) for p in range(pieces)] if zigzag else list(range(n))
    work = np.zeros(n)
    for q, device in enumerate(owner):
        for k in range(pieces):
            work[device] += allowed[q * size:(q + 1) * size, k * size:(k + 1) * size].any()
    return work.max() / work.mean()


def step_hides(piece, heads, kv, backward):
    """One zigzag ring step of a device holding ``heads`` query and ``kv`` key-value heads:
    the allowed pairs of its two half pieces against another device's, counted on a causal
    mask over four half pieces, four operations a pair a channel (two and a half times that
    backward); the keys and values sent, and their four-byte gradients backward."""
    half = 2
    mask = np.tril(np.ones((4 * half, 4 * half), bool))
    mine, theirs = [0, 3], [1, 2]          # pieces i and 2N-1-i of device 0 and 1, N = 2
    allowed = sum(mask[q * half:(q + 1) * half, k * half:(k + 1) * half].sum()
                  for q in mine for k in theirs) / (2 * half) ** 2   # share of a whole pair
    work = allowed * 4 * piece * piece * heads * BIG.head_dim * (2.5 if backward else 1)
    sent = 2 * piece * kv * BIG.head_dim * BIG.bytes_per_number * (3 if backward else 1)
    return work / REAL_CHIP.flops_per_s >= NETWORK.step_latency_s + sent / NETWORK.bytes_per_s


def fewest_positions(backward):
    heads, kv = BIG.heads // 8, max(BIG.kv_heads // 8, 1)
    low, high = 1, 1 << 24
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if step_hides(mid, heads, kv, backward) else (mid, high)
    return high


def gather_share(n, n_cp):
    heads, kv = BIG.heads // 8, max(BIG.kv_heads // 8, 1)
    piece = n // n_cp
    sent = (n_cp - 1) * 2 * piece * kv * BIG.head_dim * BIG.bytes_per_number
    gather = (n_cp - 1) * NETWORK.step_latency_s + sent / NETWORK.bytes_per_s
    pairs = n * n / 2 / n_cp                   # an even share of the causal half of n^2 pairs
    return gather / (4 * pairs * heads * BIG.head_dim / REAL_CHIP.flops_per_s)


CHECKS = {
    "ans_mc_cp_bound": lambda g: BIG.kv_heads / BIG.heads * BIG.bytes_per_number
    * REAL_CHIP.flops_per_s / NETWORK.bytes_per_s,
    "ans_mc_cp_layer": lambda g: size_text(ring_sent(g["ex_mc_cp_tokens"], g["ex_mc_cp_devices"])),
    "ans_mc_cp_all": lambda g: size_text(BIG.layers * ring_sent(g["ex_mc_cp_tokens"], g["ex_mc_cp_devices"])),
    "ans_mc_cp_cache": lambda g: size_text(cache_bytes_per_token(BIG) * g["ex_mc_cp_tokens"]),
    "ans_mc_zig_plain": lambda g: busiest_over_mean(g["ex_mc_zig_devices"], False),
    "ans_mc_zig_even": lambda g: busiest_over_mean(g["ex_mc_zig_devices"], True),
    "ans_mc_design_piece": lambda g: g["ex_mc_design_n"] // g["ex_mc_design_cp"],
    "ans_mc_design_fwd": lambda g: fewest_positions(False),
    "ans_mc_design_bwd": lambda g: fewest_positions(True),
    "ans_mc_design_share": lambda g: gather_share(g["ex_mc_design_n"], g["ex_mc_design_cp"]),
    "ans_mc_design_word": lambda g: "hides both ways" if g["ex_mc_design_n"] // g["ex_mc_design_cp"]
    >= max(fewest_positions(False), fewest_positions(True)) else "does not hide",
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
