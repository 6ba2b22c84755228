"""Answers of training section 6 (the context window and the speed of generation), recomputed
from a real PyTorch decoder: operations from the shapes of its matrices and a count of the
pairs, bytes from its parameters and from the cache it really keeps."""
import dataclasses

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import decode_work, prefill_work

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/06_context_window"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR
CTX = 2048


def step(m, acc, context, batch=1):
    """(operations, bytes, seconds) of one decode step of a real decoder of shape ``m``."""
    flops, nbytes = decode_work(m, context, batch)
    return flops, nbytes, max(flops / acc.flops_per_s, nbytes / acc.bytes_per_s)


def prefill_seconds(m, acc, tokens):
    flops, nbytes = prefill_work(m, tokens)
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
