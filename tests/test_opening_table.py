"""The values a page opening's table glues, against the report's independent summary and a
real PyTorch module's layout."""
import dataclasses

import pytest
import torch

import transformer_arithmetic as ta
from transformer_arithmetic.prose import opening_table
from transformer_arithmetic.reference_model import Decoder
from transformer_arithmetic.report import report


@pytest.mark.parametrize("changes", [{}, {"gated_ffn": True}, {"tied_embeddings": False, "norm_bias": True}])
def test_opening_table_matches_the_report_and_a_real_module(changes):
    m = dataclasses.replace(ta.EXAMPLE_MODEL, **changes)
    acc = ta.EXAMPLE_ACCELERATOR
    table, summary = opening_table(m, acc), report(m, acc)
    for key in ("layers", "heads", "kv_heads", "head_dim", "width", "ffn_width", "vocab", "bytes_per_number"):
        assert table[key] == summary["model"][key]
    assert table["tflops"] * 1e12 == summary["accelerator"]["flops_per_s"]
    assert table["tbps"] * 1e12 == summary["accelerator"]["bytes_per_s"]
    assert table["acc_memory"] == f"{summary['accelerator']['memory_bytes'] / 2**30:,.4g} GiB"
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
        opening_table(ta.EXAMPLE_MODEL, ta.EXAMPLE_MODEL)
    with pytest.raises(ValueError, match="m must be a ModelShape, got int"):
        opening_table(3, ta.EXAMPLE_ACCELERATOR)
