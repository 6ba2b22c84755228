"""Answers of the long-context section: the ring's pieces counted as they pass, the whole
cache from a real decoder's cache, the causal work counted block by block."""
import numpy as np
import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_per_token
from transformer_arithmetic.many_chips_inputs import NETWORK, REAL_CHIP, grown
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


CHECKS = {
    "ans_mc_cp_bound": lambda g: BIG.kv_heads / BIG.heads * BIG.bytes_per_number / 2
    * REAL_CHIP.flops_per_s / NETWORK.bytes_per_s,
    "ans_mc_cp_layer": lambda g: size_text(ring_sent(g["ex_mc_cp_tokens"], g["ex_mc_cp_devices"])),
    "ans_mc_cp_all": lambda g: size_text(BIG.layers * ring_sent(g["ex_mc_cp_tokens"], g["ex_mc_cp_devices"])),
    "ans_mc_cp_cache": lambda g: size_text(cache_bytes_per_token(BIG) * g["ex_mc_cp_tokens"]),
    "ans_mc_zig_plain": lambda g: busiest_over_mean(g["ex_mc_zig_devices"], False),
    "ans_mc_zig_even": lambda g: busiest_over_mean(g["ex_mc_zig_devices"], True),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key], rel=1e-9)
