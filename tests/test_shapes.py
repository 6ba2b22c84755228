"""The model shape and the accelerator: the stated examples, and clear errors for bad values."""
import pytest

import transformer_arithmetic as ta


def test_example_model_is_the_stated_one():
    m = ta.EXAMPLE_MODEL
    assert (m.layers, m.heads, m.head_dim, m.width, m.ffn_width, m.vocab) == (24, 16, 64, 1024, 4096, 32768)
    assert m.kv_heads == 16 and m.group_size == 1 and m.bytes_per_number == 2


def test_example_accelerator_is_the_stated_one():
    a = ta.EXAMPLE_ACCELERATOR
    assert (a.flops_per_s, a.bytes_per_s, a.memory_bytes) == (100e12, 1e12, 24 * 2**30)


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"kv_heads": 5}, "kv_heads=5 does not divide heads=16"),
        ({"layers": -1}, "layers must be at least 1, got -1"),
        ({"layers": 0}, "layers must be at least 1, got 0"),
        ({"head_dim": 2.5}, "head_dim must be a whole number, got 2.5"),
        ({"vocab": True}, "vocab must be a whole number, got True"),
        ({"width": 0}, "width must be at least 1, got 0"),
    ],
)
def test_bad_shapes_name_the_bad_value(changes, words):
    sizes = dict(layers=24, heads=16, head_dim=64, ffn_width=4096, vocab=32768) | changes
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        ta.ModelShape(**sizes)


@pytest.mark.parametrize("field, value", [("flops_per_s", 0), ("bytes_per_s", -1.0), ("memory_bytes", 0)])
def test_bad_accelerators_name_the_bad_value(field, value):
    sizes = dict(flops_per_s=1e12, bytes_per_s=1e11, memory_bytes=2**30) | {field: value}
    with pytest.raises(ValueError, match=field):
        ta.Accelerator(**sizes)


def test_width_defaults_to_heads_times_head_dim_but_may_differ():
    assert ta.ModelShape(layers=1, heads=4, head_dim=8, ffn_width=8, vocab=4).width == 32
    assert ta.ModelShape(layers=1, heads=4, head_dim=8, ffn_width=8, vocab=4, width=48).width == 48
