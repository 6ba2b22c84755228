"""A tensor-parallel device's weight bytes against PyTorch's own tensor parallel under gloo:
``torch.distributed.tensor.parallel.parallelize_module`` cuts the book's reference decoder
(column- and row-parallel linears, vocabulary-parallel tables) in real processes
(``collective_runs.run``, task ``sharded_runs.megatron_plan_bytes``), and the bytes of the
parameters each rank holds must equal the calculator's device layout (``splits.device_model``)
for the same shape, rank by rank, with the ranks' sum the whole model's bytes."""
from __future__ import annotations

import pytest

from transformer_arithmetic import ModelShape
from transformer_arithmetic import sharded_runs as sr
from transformer_arithmetic.collective_runs import run
from transformer_calculator import costs
from transformer_calculator.plain import model_of
from transformer_calculator.splits import Split, device_model

pytestmark = [pytest.mark.torch_kernels, pytest.mark.slow(seconds=6)]

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
