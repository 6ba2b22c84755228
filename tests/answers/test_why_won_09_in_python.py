"""Answers of why-won section 9 (using it in Python), computed another way: a search over
lengths with the work read off a real module's matrices, a brute-force count of blocks over a
boolean grid, and Jamba's published configuration read as plain JSON."""
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import transformer_arithmetic as ta
import transformer_calculator
from published import model_config_path
from checking import check, given
from transformer_arithmetic.runs.reference_model import Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/09_in_python"


def blocks_by_rows(context: int, window: int, block: int) -> int:
    """Blocks of the grid holding an allowed pair, one row of blocks at a time from the pairs."""
    cols = np.arange(context)[None, :]
    count = 0
    for r0 in range(0, context, block):
        rows = np.arange(r0, min(r0 + block, context))[:, None]
        allowed = (cols <= rows) & (rows - cols < window)
        count += int(allowed.reshape(len(rows), -1, block).any(axis=(0, 2)).sum())
    return count


def causal_blocks(context: int, block: int) -> int:
    return blocks_by_rows(context, context, block)


def jamba() -> dict:
    """Jamba's published configuration, read as plain JSON (not through the calculator)."""
    path = model_config_path("jamba-v0.1")
    return json.loads(path.read_text())


def jamba_state_bytes() -> int:
    """Every Mamba layer: expand x hidden channels of d_state four-byte numbers, plus the last
    d_conv inputs of each channel in two bytes (what transformers' Jamba cache keeps)."""
    c = jamba()
    mamba_layers = c["num_hidden_layers"] - c["num_hidden_layers"] // c["attn_layer_period"]
    inner = c["mamba_expand"] * c["hidden_size"]
    return mamba_layers * inner * (c["mamba_d_state"] * 4 + c["mamba_d_conv"] * 2)


def jamba_cache_per_token() -> int:
    c = jamba()
    head = c["hidden_size"] // c["num_attention_heads"]
    return (c["num_hidden_layers"] // c["attn_layer_period"]) * 2 * c["num_key_value_heads"] * head * 2


def wide(g, kv_heads: int) -> ta.ModelShape:
    m = ta.EXAMPLE_MODEL
    return dataclasses.replace(m, heads=2 * m.heads, kv_heads=kv_heads, width=2 * m.width,
                               ffn_width=8 * m.width)


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
    "ans_why_py_cross_standard": lambda g: first_length_where_pairs_win(
        wide(g, 2 * ta.EXAMPLE_MODEL.heads)),
    "ans_why_py_cross_times": lambda g: first_length_where_pairs_win(
        wide(g, 2 * ta.EXAMPLE_MODEL.heads)) / (2 * ta.EXAMPLE_MODEL.width),
    "ans_why_py_cross_grouped": lambda g: first_length_where_pairs_win(wide(g, g["ex_why_py_kv"])),
    "ans_why_py_blocks": lambda g: blocks_by_rows(g["ex_why_py_context"], g["ex_why_py_window"],
                                                  g["ex_why_py_block"]),
    "ans_why_py_block_share": lambda g: blocks_by_rows(g["ex_why_py_context"], g["ex_why_py_window"],
                                                       g["ex_why_py_block"])
    / causal_blocks(g["ex_why_py_context"], g["ex_why_py_block"]),
    "ans_why_py_jamba_state": lambda g: jamba_state_bytes(),
    "ans_why_py_jamba_tokens": lambda g: jamba_state_bytes() / jamba_cache_per_token(),
}


def test_shared_count_divides_the_heads():
    values = given(NOTEBOOK)
    assert all(ta.EXAMPLE_MODEL.heads % kv == 0 for kv in values["choices"])
    assert values["shared"] in values["choices"]


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
