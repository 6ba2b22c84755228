"""The key-value head counts a comparison uses, the unit of a size axis, and the drawing of
query heads sharing key-value heads."""

import matplotlib
import pytest

import transformer_arithmetic as ta
from book_machinery import figures
from transformer_arithmetic import units
from transformer_arithmetic.shapes import kv_head_choices


def most_even_split(heads: int) -> int:
    """Key-value heads of the factorisation heads = kv * group with kv and group closest
    together (more key-value heads on a tie), found by trying every pair."""
    pairs = [(kv, heads // kv) for kv in range(1, heads + 1) if heads % kv == 0]
    return min(pairs, key=lambda p: (abs(p[0] - p[1]), -p[0]))[0]


def shape(heads, kv_heads=None):
    return ta.ModelShape(layers=2, heads=heads, head_dim=8, ffn_width=8, vocab=8, kv_heads=kv_heads)


@pytest.mark.parametrize("heads", range(1, 65))
def test_plain_models_compare_plain_the_most_even_split_and_one(heads):
    assert kv_head_choices(shape(heads)) == tuple(sorted({heads, most_even_split(heads), 1}, reverse=True))


def test_the_stated_choices():
    assert kv_head_choices(shape(16)) == (16, 4, 1)
    assert kv_head_choices(shape(12)) == (12, 4, 1)
    assert kv_head_choices(shape(8)) == (8, 4, 1)
    assert kv_head_choices(shape(7)) == (7, 1)
    assert kv_head_choices(shape(1)) == (1,)


def test_a_grouped_model_keeps_its_own_grouping_and_multi_query_gets_one():
    assert kv_head_choices(shape(32, 8)) == (32, 8, 1)
    assert kv_head_choices(shape(16, 2)) == (16, 2, 1)
    assert kv_head_choices(shape(8, 1)) == (8, 4, 1)
    for heads, kv in [(32, 8), (16, 2), (8, 1), (12, 12)]:
        choices = kv_head_choices(shape(heads, kv))
        assert kv in choices and choices[0] == heads and choices[-1] == 1
        assert all(heads % c == 0 for c in choices)


def test_kv_head_choices_names_a_bad_argument():
    with pytest.raises(ValueError, match="m must be a ModelShape"):
        kv_head_choices(16)


@pytest.mark.parametrize("nbytes", [0, 1, 1023, 1024, 98304, 2**20 - 1, 768 * 2**20, 2**30, 5.5 * 2**30])
def test_size_unit_is_the_unit_size_text_writes(nbytes):
    unit, scale = units.size_unit(nbytes)
    assert units.size_text(nbytes).split()[-1] == unit
    assert scale == {"bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}[unit]
    with pytest.raises(ValueError, match="nbytes must not be negative"):
        units.size_unit(-1)


@pytest.mark.parametrize("heads, kv_heads", [(16, 16), (16, 4), (16, 1), (12, 4), (8, 1)])
def test_head_groups_joins_each_query_head_to_its_own_key_value_head(heads, kv_heads):
    fig, ax = figures.new_figure(height=1.4)
    figures.head_groups(ax, heads, kv_heads, concept="grouped")
    lines = [line.get_xydata() for line in ax.lines]
    assert len(lines) == heads
    group = heads // kv_heads
    for h, xy in enumerate(lines):   # top end over query head h, bottom end under its group's middle
        assert xy[0][0] == h + 0.5 and xy[1][0] == (h // group) * group + group / 2
    assert len(ax.patches) == heads + kv_heads
    figures.check_layout(fig)
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="kv_heads=3 must be at least 1 and divide heads=16"):
        figures.head_groups(ax, 16, 3, concept="grouped")
