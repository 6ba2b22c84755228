"""Answers of training section 8 (using it in Python), computed another way: the operations of a
real forward and backward pass from the shapes of a real module's matrices, and the smallest
bfloat16 number from its bits."""
import math

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.reference_model import Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/08_in_python"
SMALL = ta.ModelShape(layers=2, heads=4, kv_heads=2, head_dim=8, ffn_width=32, vocab=40,
                      bytes_per_number=8)


def dense_step_flops(m: ta.ModelShape, batch: int, tokens: int) -> int:
    """Operations of a forward and backward pass with a dense (math) attention kernel: each
    Linear's in x out weights, times 2 for the forward and 4 for the backward, for every token;
    the score and weighted-value products over the full tokens x tokens grid, the same."""
    with torch.device("meta"):
        decoder = Decoder(m)
    weights = sum(mod.in_features * mod.out_features for mod in decoder.modules()
                  if isinstance(mod, torch.nn.Linear))
    grid = 2 * 2 * m.layers * m.heads * m.head_dim * batch * tokens * tokens   # QK and AV
    return 3 * (2 * weights * batch * tokens + grid)


def smallest_bfloat16() -> float:
    """The smallest positive bfloat16, the bit pattern 0x0001 read as a bfloat16."""
    return torch.tensor([1], dtype=torch.int16).view(torch.bfloat16).item()


CHECKS = {
    "ans_py_count": lambda g: dense_step_flops(SMALL, g["ex_py_batch"], g["ex_py_tokens"]),
    "ans_py_bf16_gap": lambda g: -math.log(smallest_bfloat16()),
    # the first whole gap whose chance e^-g rounds to zero in bfloat16: below half the smallest
    "ans_py_bf16_breaks": lambda g: next(k for k in range(200) if math.exp(-k) < smallest_bfloat16() / 2),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
