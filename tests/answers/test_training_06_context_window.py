"""Answers of training section 6 (the context window and the speed of generation), recomputed
from a real PyTorch decoder: operations from the shapes of its matrices and a count of the
pairs, bytes from its parameters and from the cache it really keeps."""
import dataclasses
from functools import lru_cache

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.reference_model import Decoder, cache_bytes

NOTEBOOK = "training/06_context_window"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR
CTX = 2048


@lru_cache(maxsize=None)
def measured(m: ta.ModelShape) -> dict:
    """Per-token operations through the matrices, weight bytes and cache bytes per token of a
    real decoder of shape ``m``."""
    with torch.device("meta"):
        decoder = Decoder(m)
    unique = {id(p): p for p in decoder.parameters()}.values()
    norms = sum(p.numel() for n, p in decoder.named_parameters() if "norm" in n)
    matrices = sum(2 * mod.in_features * mod.out_features for mod in decoder.modules()
                   if isinstance(mod, torch.nn.Linear))
    probe = dataclasses.replace(m, ffn_width=8, vocab=8)
    small = Decoder(probe).to(torch.bfloat16 if m.bytes_per_number == 2 else torch.float32).eval()
    row, cache = small.generate(torch.tensor([[1]]), new_tokens=1)
    return {"per_token": matrices + 2 * norms,          # a norm's scale: a multiply-add per number
            "weights": sum(p.numel() for p in unique) * m.bytes_per_number,
            "cache_per_token": cache_bytes(cache) // row.shape[1],
            "pair": 4 * m.layers * m.heads * m.head_dim}   # a score and a weighted value per pair


def step(m, acc, context, batch=1):
    """(operations, bytes, seconds) of one decode step."""
    r = measured(m)
    flops = batch * (r["per_token"] + r["pair"] * context)
    nbytes = r["weights"] + batch * context * r["cache_per_token"]
    return flops, nbytes, max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


def prefill_seconds(m, acc, tokens):
    r = measured(m)
    pairs = sum(range(1, tokens + 1))                  # position i attends to i positions
    flops = r["per_token"] * tokens + r["pair"] * pairs
    nbytes = r["weights"] + tokens * r["cache_per_token"]
    return max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


def wider(g):
    return dataclasses.replace(A, bytes_per_s=g["ex_window_bw_factor"] * A.bytes_per_s)


def first_busy_batch(m, acc):
    """The smallest batch, found by trying each, whose step with empty caches waits on arithmetic."""
    b = 1
    while True:
        flops, nbytes, _ = step(m, acc, 0, b)
        if flops / acc.flops_per_s >= nbytes / acc.bytes_per_s:
            return b
        b += 1


def changed(g):
    return dataclasses.replace(M, kv_heads=g["ex_window_kv_heads"])


CHECKS = {
    "ans_window_bw_ridge": lambda g: A.flops_per_s / wider(g).bytes_per_s,
    "ans_window_bw_step_us": lambda g: step(M, wider(g), CTX)[2] * 1e6,
    "ans_window_bw_batch": lambda g: first_busy_batch(M, wider(g)),
    "ans_window_heads_intensity": lambda g: (lambda f, b, t: f / b)(*step(changed(g), A, CTX, g["ex_window_batch"])),
    "ans_window_heads_tput": lambda g: g["ex_window_batch"] / step(changed(g), A, CTX, g["ex_window_batch"])[2],
    "ans_window_prompt_ttft_ms": lambda g: prefill_seconds(M, A, g["ex_window_prompt"]) * 1e3,
    "ans_window_prompt_tokens": lambda g: prefill_seconds(M, A, g["ex_window_prompt"])
    / step(M, A, g["ex_window_prompt"])[2],
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
