"""The part "Past one accelerator" re-executed with the odd-heads example (15 heads, 5 key-value
heads, an odd vocabulary: the large model allows no tensor-parallel group of 4 or 8), its share
of the part's notebooks (the checks: tests/example_swap.py)."""
import pytest

from example_swap import (  # noqa: F401  (pytest collects the imported fixture and tests)
    test_comparison_words_agree_with_their_numbers, test_every_notebook_runs_with_the_new_example,
    test_numbers_follow_the_library, test_the_same_names_are_glued, variant,
)

VARIANT = "odd-heads"
pytestmark = [pytest.mark.notebooks, pytest.mark.slow(seconds=10)]
