"""Answers of training section 6 (the context window and the speed of generation), recomputed
from a real PyTorch decoder: each kernel's operations and bytes from the shapes of its Linear and
normalisation modules and from the cache it really keeps (``decoder_reference.kernels_*``)."""
import dataclasses
import itertools

import pytest

import published
import transformer_arithmetic as ta
from transformer_calculator.reading.plain import shipped_shape
from checking import check
from decoder_reference import (cache_bytes_per_token, kernels_decode, kernels_prefill,
                               matrices, matrix_flops_per_token)

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/06_context_window"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR
CTX = 2048


LLAMA = shipped_shape("llama-3-8b")   # the sizes of its published config.json
H100 = ta.accelerator_of(published.chip("h100-sxm"))


def wider(g):
    return dataclasses.replace(A, bytes_per_s=g["ex_window_bw_factor"] * A.bytes_per_s)


def first_busy_batch(m, acc):
    """The smallest batch, found by trying each, whose matrices' arithmetic (read off the real
    decoder's Linear modules) takes as long as reading those matrices."""
    weights = sum(i * o for _, i, o in matrices(m))
    return next(t for t in itertools.count(1)
                if 2 * t * weights / acc.flops_per_s >= m.bytes_per_number * weights / acc.bytes_per_s)


def changed(g):
    return dataclasses.replace(M, kv_heads=g["ex_window_kv_heads"])


def attention_share(n):
    """Attention's share of a large batch's step: n C / S against 2 P_x / R a token, from the
    real decoder's matrices and cache."""
    reading = n * cache_bytes_per_token(LLAMA) / H100.bytes_per_s
    return reading / (matrix_flops_per_token(LLAMA) / H100.flops_per_s + reading)


CHECKS = {
    "ans_window_bw_ridge": lambda g: A.flops_per_s / wider(g).bytes_per_s,
    "ans_window_bw_step_us": lambda g: kernels_decode(M, wider(g), CTX) * 1e6,
    "ans_window_bw_batch": lambda g: first_busy_batch(M, wider(g)),
    "ans_window_eight_bit": lambda g: g["ex_window_batch"] / kernels_decode(
        M, A, CTX, g["ex_window_batch"], weight_bytes_per_number=1),
    "ans_window_heads_tput": lambda g: g["ex_window_batch"] / kernels_decode(
        changed(g), A, CTX, g["ex_window_batch"]),
    "ans_window_prompt_ttft_ms": lambda g: kernels_prefill(M, A, g["ex_window_prompt"], False) * 1e3,
    "ans_window_prompt_tokens": lambda g: kernels_prefill(M, A, g["ex_window_prompt"], False)
    / kernels_decode(M, A, g["ex_window_prompt"]),
    "ans_window_ridge_context": lambda g: matrix_flops_per_token(LLAMA) * H100.bytes_per_s
    / (H100.flops_per_s * cache_bytes_per_token(LLAMA)),
    "ans_window_share_short": lambda g: attention_share(g["ex_window_short_ctx"]),
    "ans_window_share_long": lambda g: attention_share(g["ex_window_long_ctx"]),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
