"""The model shape and the accelerator: derived fields, and clear errors for bad values.

No test here pins the book's example (``EXAMPLE_MODEL``, ``EXAMPLE_ACCELERATOR``): it may be
changed in ``shapes.py`` alone, and no library test may break when it is."""
import pytest

import transformer_arithmetic as ta


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


def test_key_value_heads_default_to_one_per_query_head():
    plain = ta.ModelShape(layers=1, heads=12, head_dim=8, ffn_width=8, vocab=4)
    assert (plain.kv_heads, plain.group_size) == (12, 1)
    grouped = ta.ModelShape(layers=1, heads=12, head_dim=8, ffn_width=8, vocab=4, kv_heads=3)
    assert (grouped.kv_heads, grouped.group_size) == (3, 4)
