"""A split's shares against PyTorch run for real under gloo: a tensor-parallel device's weight
bytes, the activations sequence parallelism keeps on each rank, and context parallel's
exchange of keys and values and its balanced pairs.

A tensor-parallel device's weight bytes against PyTorch's own tensor parallel under gloo:
``torch.distributed.tensor.parallel.parallelize_module`` cuts the book's reference decoder
(column- and row-parallel linears, vocabulary-parallel tables) in real processes
(``gloo.run``, task ``sharded_runs.megatron_plan_bytes``), and the bytes of the
parameters each rank holds must equal the calculator's device layout (``splits.device_model``)
for the same shape, rank by rank, with the ranks' sum the whole model's bytes."""
from __future__ import annotations

import pytest

import torch

from transformer_arithmetic import ModelShape
from transformer_arithmetic.runs import sequence_runs
from transformer_arithmetic.runs import sharded_runs as sr
from transformer_arithmetic.runs.gloo import (gloo_transfers, payload_agrees, run)
from transformer_arithmetic.collectives import ring_bytes_sent
from transformer_arithmetic.runs.reference_model import Block
from transformer_calculator.counting import costs
from transformer_calculator.counting.activations import Shares, activation_bytes
from transformer_calculator.reading.plain import model_of
from transformer_calculator.splits import Split, device_model
from transformer_calculator.splits.comm import kv_bytes_per_position

pytestmark = [pytest.mark.torch_kernels, pytest.mark.slow(seconds=10)]

SHAPE = ModelShape(layers=2, heads=8, kv_heads=4, head_dim=8, ffn_width=96, vocab=64,
                   gated_ffn=True, tied_embeddings=False, bytes_per_number=2)


@pytest.mark.parametrize("n", [2])
def test_each_rank_holds_the_calculators_device_bytes(n):
    ranks = run(sr.megatron_plan_bytes, n, SHAPE)
    want = costs.weight_bytes(device_model(model_of(SHAPE), Split(tp=n)))
    assert [r["bytes"] for r in ranks] == [want] * n
    norms = (2 * SHAPE.layers + 1) * SHAPE.width * SHAPE.bytes_per_number  # whole on each
    whole = costs.weight_bytes(model_of(SHAPE))
    assert ranks[0]["total"] == whole + (n - 1) * norms


SEQUENCE = ModelShape(layers=1, heads=8, kv_heads=2, head_dim=16, ffn_width=192, vocab=96,
                      gated_ffn=True, norm_bias=True, bytes_per_number=8)
TOKENS = 64


@pytest.mark.parametrize("n", [4])
def test_sequence_parallel_keeps_the_calculators_share_on_each_rank(n):
    """Megatron-LM's sequence parallelism run for real (sharded_runs.sequence_parallel_block:
    all-gathers before the first matrices, reduce-scatters after the last, under gloo): each
    rank's output is its positions of the whole block's, and the bytes autograd keeps on it are
    the calculator's sequence-parallel share of the block's activations, plus what PyTorch
    keeps beside them: each LayerNorm's mean and reciprocal deviation for the rank's positions,
    and the log-sum-exp of each of its heads for every position (eight-byte numbers here)."""
    ranks = run(sequence_runs.sequence_parallel_block, n, SEQUENCE, TOKENS, 0)
    torch.manual_seed(0)
    block = Block(SEQUENCE).to(torch.float64)
    x = torch.randn(TOKENS, 1, SEQUENCE.width, dtype=torch.float64)
    whole = block(x.transpose(0, 1))[0]
    got = torch.cat([r["output"] for r in ranks], dim=1)
    assert torch.allclose(got, whole, rtol=0, atol=1e-12)
    device = device_model(model_of(SEQUENCE), Split(tp=n))
    outer = 2 * SEQUENCE.width * TOKENS // n * 8  # the final norm's and head's inputs
    ours = activation_bytes(device, 1, TOKENS, "selective", shares=Shares(sequence=n)) - outer
    stats = 2 * 2 * 8 * TOKENS // n + SEQUENCE.heads // n * 8 * TOKENS
    assert [r["saved"] for r in ranks] == [ours + stats] * n
    # what tensor parallel hands its all-reduces, in halves: two all-gathers of the
    # positions (one before attention, one before the feed-forward part) and two
    # reduce-scatters, tokens x d numbers each
    x_bytes = TOKENS * SEQUENCE.width * 8
    assert ranks[0]["handed"] == {"sequence all-gather": 2 * x_bytes // n,
                                  "sequence reduce-scatter": 2 * x_bytes}


@pytest.mark.parametrize("n", [3])
def test_context_parallel_exchanges_what_the_calculator_prices(n):
    """Llama 3's context parallel run for real (sharded_runs.context_parallel_attention: two
    pieces a rank in the zigzag order, every piece's keys and values all-gathered under gloo):
    each rank's rows are the whole causal attention's, every rank works on the same number of
    allowed pairs (the zigzag balances the mask: 1 / N_cp of them each), and each writes the
    ring all-gather of the keys and values the calculator prices (comm.cp_seconds), plus the
    headers of gloo's own transfers, exactly."""
    shape = ModelShape(layers=1, heads=8, kv_heads=2, head_dim=16, ffn_width=64, vocab=32,
                       bytes_per_number=8)
    tokens = 2 * n * 8  # two pieces of 8 positions a rank
    ranks = run(sequence_runs.context_parallel_attention, n, shape, tokens, 1)
    whole = sr.whole_attention(shape, tokens, 1)
    for r in ranks:
        assert torch.allclose(r["output"], whole[:, :, r["rows"]], rtol=0, atol=1e-12)
    assert [r["pairs"] for r in ranks] == [tokens * (tokens + 1) // 2 // n] * n
    gathered = tokens * kv_bytes_per_position(model_of(shape))
    for r in ranks:
        assert payload_agrees(r["written"], ring_bytes_sent("all-gather", gathered, n),
                              gloo_transfers("all-gather", gathered, n))
