"""A step reads one row of an untied input table a token and multiplies none of it (a
tied table is the head, multiplied whole); the formats the measured runs use, counted
byte by byte from their published layouts; the rate each multiplies at; the experts
packed apart from the rest."""
from __future__ import annotations

import dataclasses

import pytest

import published
from transformer_calculator.counting import costs, stored
from transformer_calculator.counting.chips import chip, rate_for
from transformer_calculator.command_line.cli import apply_formats, load_model
from transformer_calculator.anatomy.formats import (UNPACKED, WEIGHT_FORMATS,
                                                    ExpertsApart)
from transformer_calculator.anatomy.matrices import Matrix

H100, B200 = chip("h100-sxm"), chip("b200")


def model(name):
    return load_model(name)[0]


@pytest.mark.parametrize("batch", [1, 7, 300])
def test_a_decode_step_reads_a_row_of_the_untied_table_per_conversation(batch):
    m = model("llama-3-8b")  # untied: 128,256 rows of 4,096
    v, d, bpn = m.layout.vocab, m.layout.width, m.bytes_per_number
    unread = (v - batch) * d * bpn
    assert costs.decode_bytes(m, 100, batch) == (
        costs.weight_bytes(m) - unread + batch * costs.cache_bytes(m, 100))
    assert costs.decode_flops(m, 100) == 2 * (costs.parameters(m) - v * d) + \
        m.layout.decode_pair_flops(100)


@pytest.mark.parametrize("tokens, batch", [(512, 1), (512, 8), (20_000, 8)])
def test_a_prompts_pass_reads_each_row_its_tokens_pick_once(tokens, batch):
    m = model("llama-3-8b")
    v, d, bpn = m.layout.vocab, m.layout.width, m.bytes_per_number
    rows = min(tokens * batch, v)
    weights = costs.weight_bytes(m) - (v - rows) * d * bpn
    assert costs.prefill_bytes(m, tokens, batch) == weights + batch * costs.cache_bytes(
        m, tokens)


def test_a_tied_table_is_the_head_read_and_multiplied_whole():
    m = model("playbook-1b")
    assert m.layout.tied
    assert costs.weight_bytes_read(m, 1) == costs.weight_bytes(m)
    assert costs.decode_flops(m, 0) == 2 * costs.parameters(m)


FORMATS = {  # bits a weight with its scales, from each format's published layout
    "nvfp4": 4 + 8 / 16,  # an e4m3 scale per 16 (plus 32 bits a matrix)
    "mxfp4": 4 + 8 / 32,  # an e8m0 scale per 32
    "int4-wo": 4 + 16 / 32,  # a 16-bit scale per 32, no zero point
    "fp8-block": 8 + 32 / (128 * 128),  # a float32 scale per 128 x 128 block
}


@pytest.mark.parametrize("name, bits", FORMATS.items())
def test_each_format_holds_its_bits_a_weight(name, bits):
    m = Matrix(4096, 4096, 1, "attention")
    extra = 4 if name == "nvfp4" else 0
    assert WEIGHT_FORMATS[name].matrix_bytes(m) == 4096 * 4096 * bits / 8 + extra


def test_each_format_multiplies_at_its_rate_where_the_chip_has_it():
    assert rate_for(B200, WEIGHT_FORMATS["nvfp4"].compute) == B200.fp4_flops_per_s
    assert rate_for(H100, WEIGHT_FORMATS["nvfp4"].compute) == H100.flops_per_s
    # mxfp4 times mxfp8 needs block-scaled tensor cores (4-bit arithmetic): Hopper
    # runs it as weight-only at the 16-bit rate (vLLM's SM90_FI_MXFP4_BF16)
    assert rate_for(B200, WEIGHT_FORMATS["mxfp4"].compute) == B200.fp8_flops_per_s
    assert rate_for(H100, WEIGHT_FORMATS["mxfp4"].compute) == H100.flops_per_s
    assert rate_for(H100, WEIGHT_FORMATS["fp8-block"].compute) == H100.fp8_flops_per_s
    assert rate_for(B200, WEIGHT_FORMATS["int4-wo"].compute) == B200.flops_per_s
    for key in ("b300", "gb200", "gb300"):
        c = chip(key)
        assert c.fp4_flops_per_s > c.fp8_flops_per_s > c.flops_per_s  # published row
        assert published.chip(key).driver_memory_bytes < c.memory_bytes


def test_experts_packed_apart_are_the_sum_of_their_parts():
    m = model("gpt-oss-120b")  # its own config: mxfp4 experts, the rest unpacked
    m2 = dataclasses.replace(m, bytes_per_number=2)
    apart = apply_formats(m2, [], "bf16", None, "mxfp4")
    assert isinstance(apart.weights, ExpertsApart)
    experts = sum(WEIGHT_FORMATS["mxfp4"].matrix_bytes(x)
                  for x in stored.matrices(apart.layout) if x.role == "experts")
    unpacked = dataclasses.replace(m2, weights=UNPACKED)
    packed_numbers = sum(x.numbers for x in stored.matrices(apart.layout)
                         if x.role == "experts")
    assert costs.weight_bytes(apart) == (
        costs.weight_bytes(unpacked) - 2 * packed_numbers + experts)
    # the published checkpoint: mxfp4 experts beside 16-bit attention, about 65 GB
    assert 60e9 < costs.weight_bytes(apart) < 66e9
