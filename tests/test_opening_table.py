"""The values a page opening's table glues, against the model and chip they describe (every size
different, so a field read from the wrong place shows) and a real PyTorch module's layout."""
import dataclasses

import pytest
import torch

import transformer_arithmetic as ta
from transformer_arithmetic.shapes import opening_table
from transformer_arithmetic.runs.reference_model import Decoder

pytestmark = pytest.mark.torch_kernels

GROUPED_DISTINCT = ta.ModelShape(layers=6, heads=12, kv_heads=4, head_dim=40, width=456, ffn_width=1234, vocab=5000,
                                 bytes_per_number=4, name="a grouped decoder whose sizes all differ")
CHIP_48GIB = ta.Accelerator(flops_per_s=150e12, bytes_per_s=2.5e12, memory_bytes=48 * ta.GIB,
                            name="a chip of 150 TFLOP/s, 2.5 TB/s and 48 GiB")


@pytest.mark.parametrize("changes", [{}, {"gated_ffn": True}, {"tied_embeddings": False, "norm_bias": True}])
def test_opening_table_matches_the_model_and_a_real_module(changes):
    m = dataclasses.replace(GROUPED_DISTINCT, **changes)
    table = opening_table(m, CHIP_48GIB)
    sizes = {"layers": 6, "heads": 12, "kv_heads": 4, "head_dim": 40, "width": 456, "ffn_width": 1234,
             "vocab": 5000, "bytes_per_number": 4}
    assert {key: table[key] for key in sizes} == sizes
    assert (table["tflops"], table["tbps"], table["acc_memory"]) == (150.0, 2.5, "48 GiB")
    with torch.device("meta"):
        decoder = Decoder(m)
    ffn = decoder.blocks[0].ffn
    matrices = sum(isinstance(x, torch.nn.Linear) for x in ffn.children())
    tables = 1 if decoder.head.weight is decoder.embed.weight else 2
    per_channel = len(list(decoder.norm.parameters()))
    assert (table["ffn_matrices"], table["embed_tables"], table["norm_numbers"]) == (matrices, tables, per_channel)
    assert table["ffn_kind"] == ("gated" if ffn.gate is not None else "plain")


def test_opening_table_names_a_bad_argument():
    with pytest.raises(ValueError, match="acc must be an Accelerator, got ModelShape"):
        opening_table(GROUPED_DISTINCT, GROUPED_DISTINCT)
    with pytest.raises(ValueError, match="m must be a ModelShape, got int"):
        opening_table(3, CHIP_48GIB)
