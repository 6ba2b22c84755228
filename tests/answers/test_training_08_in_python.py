"""Answers of training section 8 (using it in Python), computed another way: PyTorch's own
loss, a brute-force search over the sorted chances, and a real decoder's cache."""
import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.reference_model import Decoder, cache_bytes
from transformer_arithmetic.simulated import LOGITS

NOTEBOOK = "training/08_in_python"
DTYPES = {2: torch.bfloat16, 4: torch.float32, 8: torch.float64}


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


def real_cache_bytes(m: ta.ModelShape, prompt: int, new: int) -> int:
    """Bytes a real decoder with ``m``'s attention holds after a prompt and ``new`` greedy tokens:
    one layer is run for real (tiny feed-forward and vocabulary, which the cache does not
    depend on) and every layer holds the same."""
    one_layer = dataclasses.replace(m, layers=1, ffn_width=8, vocab=8)
    torch.manual_seed(0)
    decoder = Decoder(one_layer).to(DTYPES[m.bytes_per_number]).eval()
    _, cache = decoder.generate(torch.zeros(1, prompt, dtype=torch.long), new_tokens=new)
    return cache_bytes(cache) * m.layers


CHECKS = {
    "ans_py_first_loss": lambda g: torch_first_loss(g["ex_py_vocab"]),
    "ans_py_cold_kept": lambda g: brute_force_top_p(LOGITS[3], g["ex_py_temp"], g["ex_py_cut"]),
    "ans_py_cache_bytes": lambda g: real_cache_bytes(ta.EXAMPLE_MODEL, g["ex_py_prompt"], g["ex_py_new"]),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
