"""Answers of why-won section 9 (using it in Python), computed another way: a brute-force
count over a boolean grid, real decoders' weights and cache, and a search over lengths
with the work read off a real module's matrices."""
import dataclasses
from functools import lru_cache

import numpy as np
import pytest
import torch

import transformer_arithmetic as ta
from checking import check, given
from decoder_reference import cache_bytes_per_token as real_cache_bytes_per_token  # of a real decode loop
from decoder_reference import weight_bytes as real_weight_bytes  # a real decoder's, built on the meta device
from transformer_arithmetic.reference_model import Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/09_in_python"


@lru_cache(maxsize=None)
def window_pairs_by_rows(context: int, window: int) -> int:
    """Pairs a window keeps, row by row of a boolean grid (in slices, to spare memory)."""
    cols = np.arange(context)
    total = 0
    for start in range(0, context, 1024):
        rows = np.arange(start, min(start + 1024, context))[:, None]
        total += np.count_nonzero((cols <= rows) & (cols > rows - window))   # rows - cols < window
    return total


def real_fit(kv_heads: int, tokens: int) -> int:
    m = dataclasses.replace(ta.EXAMPLE_MODEL, kv_heads=kv_heads)
    free = ta.EXAMPLE_ACCELERATOR.memory_bytes - real_weight_bytes(m)
    return free // (real_cache_bytes_per_token(m) * tokens)


def first_length_where_pairs_win(m: ta.ModelShape) -> int:
    """Search the lengths: one layer's weight work from its real matrices against 4 operations
    per channel for every allowed pair."""
    with torch.device("meta"):
        block = Decoder(dataclasses.replace(m, layers=1)).blocks[0]
    per_token = sum(2 * mod.in_features * mod.out_features for mod in block.modules()
                    if isinstance(mod, torch.nn.Linear))
    t = 1
    while 4 * m.heads * m.head_dim * t * (t + 1) // 2 <= per_token * t:
        t += 1
    return t


CHECKS = {
    "ans_why_py_pairs": lambda g: window_pairs_by_rows(g["ex_why_py_context"], g["ex_why_py_window"]),
    "ans_why_py_share": lambda g: window_pairs_by_rows(g["ex_why_py_context"], g["ex_why_py_window"])
    / sum(range(1, g["ex_why_py_context"] + 1)),
    "ans_why_py_fit_full": lambda g: real_fit(ta.EXAMPLE_MODEL.heads, g["ex_why_py_tokens"]),
    "ans_why_py_fit_shared": lambda g: real_fit(g["shared"], g["ex_why_py_tokens"]),
    "ans_why_py_fit_one": lambda g: real_fit(1, g["ex_why_py_tokens"]),
    "ans_why_py_wide_crossing": lambda g: first_length_where_pairs_win(
        dataclasses.replace(ta.EXAMPLE_MODEL, heads=g["ex_why_py_wide_heads"], width=None)),
}


def test_shared_count_divides_the_heads():
    values = given(NOTEBOOK)
    assert all(ta.EXAMPLE_MODEL.heads % kv == 0 for kv in values["choices"])
    assert values["shared"] in values["choices"]


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
