"""The shipped chips, each figure against the figure its source prints.

DATASHEETS holds, for every chip, the figures as its public source prints them (TFLOPS as
printed, with 2:4 sparsity where the datasheet's footnote says so; bandwidth in GB/s or TB/s;
memory in GB; the interconnect in GB/s) and the address of that source. The table shipped
with the library (lib/transformer_calculator/data/chips.json) must follow from them: a rate
printed with sparsity is halved to the dense rate, a rate for an 8-GPU board is divided by 8,
memory in GB is read as GiB (the capacity of the memory stacks), and the row must name the
same source and repeat the printed figures in its note.
"""
import pytest

from transformer_arithmetic.units import GIB
from transformer_calculator.chips import chip, chips, derated

T, G = 1e12, 1e9
DATASHEETS = {
    # key: (bf16 TFLOPS printed, fp8 TFLOPS printed, printed with sparsity, per board of,
    #       bandwidth B/s, memory GB, interconnect B/s, source)
    "a100-40gb": (312, None, False, 1, 1555 * G, 40, 600 * G,
                  "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                  "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"),
    "a100-80gb": (312, None, False, 1, 2039 * G, 80, 600 * G,
                  "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                  "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"),
    "h100-sxm": (1978.8, 3957.8, True, 1, 3.35 * T, 80, 900 * G,
                 "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"),
    "h100-pcie": (1513, 3026, True, 1, 2.0 * T, 80, 600 * G,
                  "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"),
    "h200": (1978.8, 3957.8, True, 1, 4.8 * T, 141, 900 * G, "https://www.nvidia.com/en-us/data-center/h200/"),
    "b200": (36_000, 72_000, True, 8, 64 * T / 8, 1440 / 8, 14.4 * T / 8,
             "https://www.nvidia.com/en-us/data-center/hgx/"),
    "l4": (242, 485, True, 1, 300 * G, 24, 64 * G, "https://www.nvidia.com/en-us/data-center/l4/"),
    "l40s": (724.1, 1466, True, 1, 864 * G, 48, 64 * G, "https://www.nvidia.com/en-us/data-center/l40s/"),
    "rtx-4090": (165.2, 330.3, False, 1, 1008 * G, 24, 64 * G,
                 "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"),
    "mi300x": (1307.4, 2614.9, False, 1, 5.3 * T, 192, 896 * G,
               "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"),
    "tpu-v5e": (197, None, False, 1, 819 * G, 16, 400 * G, "https://cloud.google.com/tpu/docs/v5e"),
    "tpu-v5p": (459, None, False, 1, 2765 * G, 95, 1200 * G, "https://cloud.google.com/tpu/docs/v5p"),
    "apple-m4-max": (38, None, False, 1, 546 * G, 128, 15 * G,
                     "https://www.apple.com/newsroom/2024/10/apple-introduces-m4-pro-and-m4-max/"),
}
"""Each chip's figures as its source prints them."""


def test_every_chip_the_issue_names_is_shipped():
    assert [c.key for c in chips()] == list(DATASHEETS)


@pytest.mark.parametrize("key", list(DATASHEETS))
def test_each_figure_follows_from_its_source(key):
    bf16, fp8, sparse, board, bandwidth, memory, link, source = DATASHEETS[key]
    c = chip(key)
    dense = 2 if sparse else 1
    assert c.flops_per_s == pytest.approx(bf16 * T / dense / board, rel=2e-3)
    if fp8 is None:
        assert c.fp8_flops_per_s is None
    else:
        assert c.fp8_flops_per_s == pytest.approx(fp8 * T / dense / board, rel=2e-3)
    assert c.bytes_per_s == pytest.approx(bandwidth, rel=1e-9)
    assert c.memory_bytes == round(memory * GIB)
    assert c.interconnect_bytes_per_s == pytest.approx(link, rel=1e-9)
    assert c.source == source and c.note and c.interconnect


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
