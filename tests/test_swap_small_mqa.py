"""The whole book re-executed with the small-mqa example (the checks: tests/example_swap.py)."""
import pytest

from example_swap import (  # noqa: F401  (pytest collects the imported fixture and tests)
    test_comparison_words_agree_with_their_numbers, test_every_notebook_runs_with_the_new_example,
    test_numbers_follow_the_library, test_the_same_names_are_glued, variant,
)
from example_swap import check_the_book_builds_with_the_new_outputs

VARIANT = "small-mqa"
pytestmark = [pytest.mark.notebooks, pytest.mark.slow(seconds=38)]


def test_the_book_builds_with_the_new_outputs(variant, tmp_path):
    check_the_book_builds_with_the_new_outputs(variant, tmp_path)
