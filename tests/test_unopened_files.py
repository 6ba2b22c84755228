"""The pytest plugin leaves a test file unopened under ``-m`` only when no test in it
could be selected, whatever marks its tests add (``book_machinery/pytest_plugin.py``,
item 5): the marks read from the file's text, every other mark tried both ways."""
from __future__ import annotations

import pytest
from _pytest.mark.expression import Expression

from book_machinery.pytest_plugin import _can_match, _module_marks

CHECK = "not (notebooks or site or pdf or transformers or slow)"


def test_the_marks_are_read_from_the_files_pytestmark():
    source = (
        "import pytest\nx = pytest.mark.site\n"
        "pytestmark = [pytest.mark.transformers, pytest.mark.slow(seconds=60)]\n"
    )
    assert _module_marks(source) == {"transformers", "slow"}
    assert _module_marks("pytestmark = pytest.mark.torch_kernels\n") == {"torch_kernels"}
    assert _module_marks("import pytest\n") == set()


@pytest.mark.parametrize(
    "expression, marks, selectable",
    [
        (CHECK, set(), True),
        (CHECK, {"torch_kernels"}, True),
        (CHECK, {"transformers", "meta_device"}, False),
        (CHECK, {"slow"}, False),
        ("torch_kernels", set(), True),  # a test in the file may carry it
        ("torch_kernels and not notebooks", {"notebooks"}, False),
        ("not torch_kernels", {"notebooks"}, True),
        ("site or not site", {"pdf"}, True),
        ("site and not site", set(), False),
        ("slow(seconds=90)", set(), True),  # a mark's arguments: always opened
    ],
)
def test_a_file_is_left_out_only_when_no_test_in_it_could_match(
    expression, marks, selectable
):
    assert _can_match(Expression.compile(expression), marks) is selectable
