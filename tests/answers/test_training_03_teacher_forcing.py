"""Answers of training section 3 (teacher forcing and training memory): parameters counted on a
real PyTorch module, memory from the published formulas, lengths by a closed form."""
import dataclasses
import math

import pytest

import transformer_arithmetic as ta
from checking import check
from decoder_reference import parameters as torch_params  # a real decoder's, built on the meta device

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/03_teacher_forcing"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR


def bytes_per_parameter(shape: ta.ModelShape) -> int:
    """Mixed-precision Adam as ZeRO counts it: weights and gradients, two 4-byte moments, and a
    4-byte master copy when the weights are held in fewer bytes."""
    n = shape.bytes_per_number
    return 2 * n + 2 * 4 + (4 if n < 4 else 0)


def biggest_batch(seq_len: int, keep_scores: bool) -> int:
    """The most sequences that fit, solved in closed form from Korthikanti et al.'s per-layer
    s*b*h*(34 + 5*a*s/h) (or s*b*h*34) and 4-byte logits, with M's dropout-style layer."""
    s, h, a = seq_len, M.width, M.heads
    per_sequence = M.layers * (34 * s * h + (5 * a * s * s if keep_scores else 0)) + s * M.vocab * 4
    fixed = torch_params(M) * bytes_per_parameter(M)
    return (A.memory_bytes - fixed) // per_sequence


def untied_gated() -> ta.ModelShape:
    return dataclasses.replace(M, tied_embeddings=False, gated_ffn=True)


CHECKS = {
    "ans_tf_untied_params": lambda g: torch_params(untied_gated()),
    "ans_tf_untied_bytes": lambda g: torch_params(untied_gated()) * bytes_per_parameter(untied_gated()),
    "ans_tf_batch_kept": lambda g: biggest_batch(g["seq_len"], True),
    "ans_tf_batch_recomputed": lambda g: biggest_batch(g["seq_len"], False),
    "ans_tf_longest": lambda g: math.floor(math.log(0.5) / math.log(g["ex_tf_q"])),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
