"""Answers of training section 8 (using it in Python), computed another way: PyTorch's own
loss, a brute-force search over the sorted chances, and a real decoder's cache."""
import math

import pytest
import torch
import torch.nn.functional as F

import transformer_arithmetic as ta
from checking import check
from decoder_reference import cache_bytes_after as real_cache_bytes  # a real decode loop's cache
from transformer_arithmetic.simulated import LOGITS

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/08_in_python"


def torch_first_loss(vocab: int) -> float:
    """F.cross_entropy of equal raw outputs over ``vocab`` words, in eight-byte numbers."""
    return F.cross_entropy(torch.zeros(1, vocab, dtype=torch.float64), torch.tensor([0])).item()


def brute_force_top_p(row, temperature: float, cut: float) -> int:
    """Fewest words whose chances reach ``cut``, found by adding the sorted chances one by one."""
    weights = [math.exp(x / temperature) for x in row]
    chances = sorted((w / sum(weights) for w in weights), reverse=True)
    total = 0.0
    for k, c in enumerate(chances, start=1):
        total += c
        if total >= cut:
            return k
    return len(chances)


CHECKS = {
    "ans_py_first_loss": lambda g: torch_first_loss(g["ex_py_vocab"]),
    "ans_py_cold_kept": lambda g: brute_force_top_p(LOGITS[3], g["ex_py_temp"], g["ex_py_cut"]),
    "ans_py_cache_bytes": lambda g: real_cache_bytes(ta.EXAMPLE_MODEL, g["ex_py_prompt"], g["ex_py_new"]),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
