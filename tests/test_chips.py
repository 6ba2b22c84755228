"""The published chips, each figure against the figure its source prints.

Each row of the published table (lib/published/data/chips.json) holds, beside its dense
figures, the figures as its public source prints them (``printed``: TFLOPS as printed, with
2:4 sparsity where the datasheet's footnote says so, for a board of ``board_of`` chips;
bandwidth, memory in GB and the link in bytes a second as printed). The dense figures must
follow from them: a rate printed with sparsity is halved, a figure for an 8-GPU board is
divided by 8, memory in GB is read as GiB (the capacity of the memory stacks), and the
driver's figure, where published, is a little less than the card's. Adding a chip is one
row; nothing here names a chip but the aliases checked below.
"""
import pytest

import published
from transformer_arithmetic.units import GIB
from transformer_calculator.counting.chips import chip, chips, derated

T = 1e12
KEYS = [c.key for c in published.chips()]


def test_the_calculator_offers_every_published_chip_in_its_order():
    assert [c.key for c in chips()] == KEYS and len(set(KEYS)) == len(KEYS) >= 13


@pytest.mark.parametrize("key", KEYS)
def test_each_figure_follows_from_its_source(key):
    facts = published.chip(key)
    p = facts.printed
    c = chip(key)
    dense = 2 if p["sparsity"] else 1
    board = p["board_of"]
    assert c.flops_per_s == pytest.approx(p["bf16_tflops"] * T / dense / board, rel=2e-3)
    if p["fp8_tflops"] is None:
        assert c.fp8_flops_per_s is None
    else:
        assert c.fp8_flops_per_s == pytest.approx(p["fp8_tflops"] * T / dense / board, rel=2e-3)
    assert c.bytes_per_s == pytest.approx(p["bytes_per_s"] / board, rel=1e-9)
    assert c.memory_bytes == round(p["memory_gb"] / board * GIB)
    assert c.interconnect_bytes_per_s == pytest.approx(p["link_bytes_per_s"] / board, rel=1e-9)
    assert c.source.startswith("https://") and c.note and c.interconnect
    if facts.driver_memory_bytes is not None:
        # HBM: about 0.4 % kept back (H100); GDDR with ECC on: a sixteenth (L4, L40S)
        assert 0.93 * c.memory_bytes <= facts.driver_memory_bytes <= c.memory_bytes
        assert facts.driver_memory_source.startswith("https://")
    if facts.board_power_w is not None:
        assert 10 <= facts.board_power_w <= 2000 and facts.power_source.startswith("https://")
        assert f"{facts.board_power_w:g}" in facts.power_note
    if facts.link_domain is not None:
        assert facts.link_domain >= 2 and facts.link is not None


def test_every_link_a_chip_names_is_published():
    for facts in published.chips():
        for key in (facts.link, facts.network):
            assert key is None or published.link(key).key == key
    for f in published.links():
        assert f.kind in ("nvlink", "pcie", "network") and f.source.startswith("https://")
        assert f.bytes_per_s_each_way > 0 and 0 < f.step_latency_s < 1e-4


def test_names_and_aliases():
    assert chip("H100") is chip("h100-sxm") is chip("NVIDIA H100 SXM")
    assert chip("A100") is chip("a100-80gb") and chip("4090") is chip("rtx-4090")
    with pytest.raises(ValueError, match="the shipped ones are: a100-40gb"):
        chip("h900")


def test_derating_keeps_the_chip():
    slow = derated(chip("mi300x"), 0.4, 0.7)
    assert slow.memory_bytes == chip("mi300x").memory_bytes and slow.key == "mi300x"
    assert (slow.flops_efficiency, slow.memory_efficiency) == (0.4, 0.7)
    with pytest.raises(ValueError, match="flops_efficiency"):
        derated(chip("mi300x"), 0, 1)
