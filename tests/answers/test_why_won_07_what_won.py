"""Answers of why-won section 7 (why the transformer won), computed from real PyTorch modules:
a real decoder's cache and parameters, and a real tensor for a running summary's state."""
import dataclasses

import pytest
import torch

import transformer_arithmetic as ta
from checking import check
from decoder_reference import DTYPES, cache_bytes_per_token, parameters  # a real decode loop's cache; a real decoder's
from decoder_reference import kernels_decode  # a step kernel by kernel, from a real decoder

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
    """(bytes held, ms a token kernel by kernel, conversations that fit) with a window of W."""
    W = g["ex_won_window"]
    kept = min(g["long_ctx"], W - 1)  # transformers' DynamicSlidingWindowLayer keeps W - 1
    held = kept * cache_bytes_per_token(PLAIN)
    ms = kernels_decode(PLAIN, A, kept) * 1e3   # the cache read stops at W - 1
    return held, ms, (A.memory_bytes - parameters(M) * M.bytes_per_number) // held


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


def hybrid_held_at(g, tokens: int, attention_layers: int) -> int:
    """The hybrid's real cache a layer with Jamba's key-value heads in its attention layers and
    a real Mamba-sized state in each of the others."""
    shared = dataclasses.replace(M, kv_heads=g["jamba_kv"])
    per_layer = cache_bytes_per_token(shared) // M.layers
    return attention_layers * tokens * per_layer + (M.layers - attention_layers) * mamba_layer_state(g)


def most_layers(g) -> int:
    """Add attention layers one at a time until the next one would break the budget."""
    layers = 0
    while layers < M.layers and hybrid_held(g, layers + 1) <= budget_bytes(g):
        layers += 1
    return layers


def fit_with(g, held: int) -> int:
    return (A.memory_bytes - parameters(M) * M.bytes_per_number) // held


CHECKS = {
    "ans_won_window_bytes": lambda g: window(g)[0],
    "ans_won_window_ms": lambda g: window(g)[1],
    "ans_won_window_fit": lambda g: window(g)[2],
    "ans_won_fit_full": lambda g: fit_with(g, g["mem_ctx"] * cache_bytes_per_token(PLAIN)),
    "ans_won_fit_hybrid": lambda g: fit_with(g, hybrid_held_at(g, g["mem_ctx"], g["keep"])),
    "ans_won_fit_mamba": lambda g: fit_with(g, 2 * M.layers * mamba_layer_state(g)),
    "ans_won_budget_layers": most_layers,
    "ans_won_budget_bytes": lambda g: hybrid_held(g, most_layers(g)),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
