"""Answers of training section 6 (the context window and the speed of generation), recomputed
from a real PyTorch decoder: operations from the shapes of its matrices and a count of the
pairs, bytes from its parameters and from the cache it really keeps."""
import dataclasses

import pytest

import published
import transformer_arithmetic as ta
from transformer_calculator.plain import shipped_shape
from checking import check
from decoder_reference import (cache_bytes_per_token, decode_work, parameters, prefill_work,
                               query_channels, weight_bytes)

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/06_context_window"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR
CTX = 2048


def step(m, acc, context, batch=1):
    """(operations, bytes, seconds) of one decode step of a real decoder of shape ``m``."""
    flops, nbytes = decode_work(m, context, batch)
    return flops, nbytes, max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


def prefill_seconds(m, acc, tokens):
    """The prefill's time with the output layer run at the last position only: the real
    decoder's work less its head for the other tokens - 1 positions."""
    flops, nbytes = prefill_work(m, tokens)
    flops -= 2 * m.vocab * m.width * (tokens - 1)
    return max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


def eight_bit_tput(m, acc, context, batch):
    """Tokens a second with every weight in one byte and the cache as it is."""
    flops, _ = decode_work(m, context, batch)
    nbytes = weight_bytes(m) / m.bytes_per_number + batch * context * cache_bytes_per_token(m)
    return batch / max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


LLAMA = shipped_shape("llama-3-8b")   # the sizes of its published config.json


def ridge_context() -> float:
    """The context at which the real model's large-batch intensity, (2P + 4 channels n) / (n C),
    meets the H100's ridge, by bisection on that intensity (it falls as n grows)."""
    ridge = published.chip("h100-sxm").bf16_flops_per_s / published.chip("h100-sxm").bytes_per_s
    def limit(n):
        return (2 * parameters(LLAMA) + 4 * query_channels(LLAMA) * n) / (n * cache_bytes_per_token(LLAMA))
    low, high = 1.0, 1e6
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if limit(mid) > ridge else (low, mid)
    return (low + high) / 2


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
    "ans_window_eight_bit": lambda g: eight_bit_tput(M, A, CTX, g["ex_window_batch"]),
    "ans_window_heads_tput": lambda g: g["ex_window_batch"] / step(changed(g), A, CTX, g["ex_window_batch"])[2],
    "ans_window_prompt_ttft_ms": lambda g: prefill_seconds(M, A, g["ex_window_prompt"]) * 1e3,
    "ans_window_prompt_tokens": lambda g: prefill_seconds(M, A, g["ex_window_prompt"])
    / step(M, A, g["ex_window_prompt"])[2],
    "ans_window_ridge_context": lambda g: ridge_context(),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
