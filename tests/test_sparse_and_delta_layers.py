"""Gated DeltaNet (Qwen3-Next, Qwen3.5) and DeepSeek Sparse Attention (DeepSeek-V3.2,
GLM-5), held against independent references: the matrices a quantizer packs against the
weight tensors transformers builds (meta device); the top-k the indexer of a real CPU
GLM-MoE-DSA model picks; a delta-rule step's operations counted by PyTorch's
FlopCounterMode; DSA's pairs and bytes counted query by query. Parameters, the cache a
token and the real CPU cache are held in test_family_forms.py and
test_families_sparse.py (every published config, found from the files)."""
from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import hf_reference as H
from test_families import unquantized
from test_formats_meta import transformers_roles
from transformer_arithmetic.masks import causal_pairs
from transformer_calculator.anatomy.attention_kinds import SparseLatentAttention
from transformer_calculator.anatomy.cache_formats import CACHE_FORMATS
from transformer_calculator.anatomy.matrices import matrices
from transformer_calculator.anatomy.mixers import LatentAttention
from transformer_calculator.anatomy.recurrent import GatedDeltaNet
from transformer_calculator.counting import costs, stored
from transformer_calculator.reading.config import model_from_config

pytestmark = [pytest.mark.transformers, pytest.mark.meta_device]


@pytest.fixture(scope="module", autouse=True)
def _quiet():
    H.quiet()


def _roles(layout) -> dict[str, int]:
    ours: dict[str, int] = {}
    for m in matrices(layout):
        ours[m.role] = ours.get(m.role, 0) + m.numbers
    return ours


@pytest.mark.parametrize("name", ["qwen3.5-397b-a17b", "glm-5", "deepseek-v3.2"])
def test_matrices_are_the_weights_transformers_builds(name):
    cfg = unquantized(H.published(name))
    theirs = transformers_roles(H.build(H.language_config(cfg)))
    assert _roles(model_from_config(cfg, name)[0].layout) == theirs


def test_a_delta_rule_step_costs_three_matrix_products_a_memory_number():
    """One token's step of every value head's memory, written with matrix products as
    the delta rule reads it (S^T k, the rank-one correction, S^T q), counted by
    PyTorch."""
    mixer = GatedDeltaNet(width=64, key_heads=2, key_dim=16, value_heads=4, value_dim=8,
                          conv=4)
    heads, dk, dv = mixer.value_heads, mixer.key_dim, mixer.value_dim
    state = torch.randn(heads, dk, dv)
    k, q, v = torch.randn(heads, dk, 1), torch.randn(heads, dk, 1), torch.randn(heads, dv, 1)
    with FlopCounterMode(display=False) as counter:
        returned = state.transpose(1, 2) @ k
        state = state + k @ (v - returned).transpose(1, 2)
        state.transpose(1, 2) @ q
    filter_ops = 2 * mixer.conv_channels * mixer.conv
    assert mixer.state_flops - filter_ops == counter.get_total_flops()
    assert mixer.state.float32 == state.numel()


def _dsa(topk: int) -> SparseLatentAttention:
    return SparseLatentAttention(width=64, heads=4, kv_rank=16, q_rank=32, nope_dim=8,
                                 rope_dim=4, v_dim=8, index_heads=2, index_dim=8,
                                 topk=topk)


@pytest.mark.parametrize("tokens", [1, 5, 6, 7, 40])
def test_sparse_attention_pairs_and_reads_query_by_query(tokens):
    m = _dsa(topk=6)
    dense = LatentAttention(**{f: getattr(m, f) for f in
                               ("width", "heads", "kv_rank", "q_rank", "nope_dim",
                                "rope_dim", "v_dim")})
    per_query = [(min(i, m.topk), i) for i in range(1, tokens + 1)]  # (chosen, scored)
    index_pair = 2 * m.index_heads * m.index_dim + 2 * m.index_heads
    assert m.prefill_pair_flops(tokens) == sum(
        c * dense.pair_flops + s * index_pair for c, s in per_query)
    chosen, scored = min(tokens, m.topk), tokens
    assert m.decode_pair_flops(tokens) == chosen * dense.pair_flops + scored * index_pair
    assert m.decode_read_numbers(tokens) == (chosen * (m.kv_rank + m.rope_dim)
                                             + scored * m.index_dim)
    if tokens <= m.topk:  # nothing left out: as dense latent attention plus the indexer
        assert m.prefill_pair_flops(tokens) == (
            dense.prefill_pair_flops(tokens) + index_pair * causal_pairs(tokens))


@pytest.mark.parametrize("kv_dtype", [None, "fp8"])
def test_a_decode_step_reads_the_chosen_latents_and_every_indexer_key(kv_dtype):
    model, _ = model_from_config(H.published("glm-5"), "glm-5")
    if kv_dtype:
        model = dataclasses.replace(model, cache=CACHE_FORMATS[kv_dtype])
    m = model.layout.blocks[0].mixer
    layers = len(model.layout.blocks)
    vec = (lambda n: n * model.bytes_per_number) if kv_dtype is None else (
        lambda n: model.cache.vector_bytes(n, model.bytes_per_number))
    for context in (100, m.topk, 50_000):
        chosen = min(context, m.topk)
        expected = layers * (chosen * (vec(m.kv_rank) + vec(m.rope_dim))
                             + context * vec(m.index_dim) + model.cache.layer_bytes)
        assert stored.cache_read_bytes(model, context) == expected
        assert stored.cache_bytes(model, context) >= expected
    weights = costs.weight_bytes_read(model, 1)
    assert costs.decode_bytes(model, 50_000) == weights + stored.cache_read_bytes(
        model, 50_000)


def test_the_indexer_of_a_real_model_picks_index_topk_tokens_a_query():
    """A shrunk GLM-MoE-DSA run for real on the CPU: the indexer of each layer returns
    min(position + 1, index_topk) distinct earlier tokens for each query, the count the
    layout reads."""
    from family_forms import build, shrunk_form

    cfg = {**shrunk_form("glm_moe_dsa", layers=2), "index_topk": 3}
    torch.manual_seed(0)
    model = build(cfg, device="cpu")
    ours, _ = model_from_config(cfg, "x", route="layout")
    assert {b.mixer.topk for b in ours.layout.blocks} == {3}
    picked = []
    hook = model.model.layers[0].self_attn.indexer.register_forward_hook(
        lambda mod, args, out: picked.append(out))
    with torch.no_grad():
        model(input_ids=torch.randint(0, cfg["vocab_size"], (1, 6)))
    hook.remove()
    top = picked[0][0]  # [queries, topk]
    assert top.shape == (6, 3)
    for i in range(3, 6):  # past the first topk positions: topk distinct earlier tokens
        assert len(set(top[i].tolist())) == 3 and max(top[i].tolist()) <= i
    assert ours.layout.blocks[0].mixer.read_tokens(6) == 3
