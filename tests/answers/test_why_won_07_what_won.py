"""Answers of why-won section 7 (why the transformer won), computed from real PyTorch modules:
a real decoder's cache and parameters, and a real tensor for a running summary's state."""
import dataclasses

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from decoder_reference import DTYPES, cache_bytes_per_token, parameters  # a real decode loop's cache; a real decoder's

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "why_won/07_what_won"
M, A = ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR
PLAIN = dataclasses.replace(M, kv_heads=M.heads)       # one key-value head per query head
DTYPE = DTYPES[M.bytes_per_number]   # the torch format of the model's numbers


def state_bytes_per_layer(state_size: int) -> int:
    state = torch.zeros(M.width, state_size, dtype=DTYPE)
    return state.numel() * state.element_size()


def seconds(ops: int, read: float, chip) -> float:
    return max(ops / chip.flops_per_s, read / chip.bytes_per_s)


def pair_ops(layers: int, earlier: int) -> int:
    """A new query meets `earlier` keys and values in each head channel of each layer: 4 operations."""
    return 4 * layers * M.heads * M.head_dim * earlier


def window(g):
    held = min(g["mem_ctx"], g["ex_won_window"]) * cache_bytes_per_token(PLAIN)
    n = min(g["long_ctx"], g["ex_won_window"])
    read = parameters(PLAIN) * M.bytes_per_number + n * cache_bytes_per_token(PLAIN)
    return held, seconds(2 * parameters(PLAIN) + pair_ops(M.layers, n), read, A) * 1e3


def mamba_layer_state(g) -> int:
    """A real four-byte tensor for one Mamba layer: twice the width, state_size numbers each."""
    state = torch.zeros(2 * M.width, g["state_size"], dtype=torch.float32)
    return state.numel() * state.element_size()


def budget_bytes(g) -> int:
    number, unit = g["ex_budget"].split()
    return int(float(number) * {"MiB": 2**20, "GiB": 2**30}[unit])


def hybrid_held(g, attention_layers: int) -> int:
    """A real decoder's cache per layer with the hybrid's key-value heads, in the attention
    layers, and real Mamba-sized state tensors in the rest."""
    shared = dataclasses.replace(M, kv_heads=g["jamba_kv"])
    per_layer = cache_bytes_per_token(shared) // M.layers
    return (attention_layers * g["ex_budget_ctx"] * per_layer
            + (M.layers - attention_layers) * mamba_layer_state(g))


def most_layers(g) -> int:
    """Add attention layers one at a time until the next one would break the budget."""
    layers = 0
    while layers < M.layers and hybrid_held(g, layers + 1) <= budget_bytes(g):
        layers += 1
    return layers


def quick(g):
    return dataclasses.replace(A, bytes_per_s=g["ex_won_tb_per_s"] * 1e12)


CHECKS = {
    "ans_won_window_bytes": lambda g: window(g)[0],
    "ans_won_window_ms": lambda g: window(g)[1],
    "ans_won_budget_layers": most_layers,
    "ans_won_budget_bytes": lambda g: hybrid_held(g, most_layers(g)),
    "ans_won_full_ms": lambda g: seconds(2 * parameters(PLAIN) + pair_ops(M.layers, g["long_ctx"]),
                                         parameters(PLAIN) * M.bytes_per_number
                                         + g["long_ctx"] * cache_bytes_per_token(PLAIN), quick(g)) * 1e3,
    # the Mamba stack: twice the layers, each with a Mamba-sized four-byte state
    "ans_won_summary_ms": lambda g: seconds(2 * parameters(M) + 2 * M.layers * 4 * 2 * M.width * g["state_size"],
                                            parameters(M) * M.bytes_per_number
                                            + 2 * M.layers * mamba_layer_state(g),
                                            quick(g)) * 1e3,
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
