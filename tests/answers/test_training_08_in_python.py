"""Answers of training section 8 (using it in Python), computed another way: the operations of a
real cached decode step from the shapes of a real module's matrices, and the smallest bfloat16
number from its bits."""
import math

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.runs.reference_model import Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/08_in_python"
SMALL = ta.ModelShape(layers=2, heads=4, kv_heads=2, head_dim=8, ffn_width=32, vocab=40,
                      bytes_per_number=8)


def decode_step_flops(m: ta.ModelShape, batch: int, cached: int) -> int:
    """Operations of one cached decode step of ``batch`` tokens in the math kernel: each Linear's
    in x out weights twice for every token, and a score and a weighted value per query channel
    for each of the cached keys and the token's own."""
    with torch.device("meta"):
        decoder = Decoder(m)
    weights = sum(mod.in_features * mod.out_features for mod in decoder.modules()
                  if isinstance(mod, torch.nn.Linear))
    channels = sum(block.attn.q.out_features for block in decoder.blocks)
    return batch * (2 * weights + 2 * 2 * channels * (cached + 1))


def smallest_bfloat16() -> float:
    """The smallest positive bfloat16, the bit pattern 0x0001 read as a bfloat16."""
    return torch.tensor([1], dtype=torch.int16).view(torch.bfloat16).item()


CHECKS = {
    "ans_py_count": lambda g: decode_step_flops(SMALL, g["ex_py_batch"], g["ex_py_cached"]),
    "ans_py_bf16_gap": lambda g: -math.log(smallest_bfloat16()),
    # the first whole gap whose chance e^-g rounds to zero in bfloat16: below half the smallest
    "ans_py_bf16_breaks": lambda g: next(k for k in range(200) if math.exp(-k) < smallest_bfloat16() / 2),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
