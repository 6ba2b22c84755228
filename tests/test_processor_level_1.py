"""The tests that run PyTorch's kernels, again at this processor's level 1 (narrowest
first; the checks: tests/test_processor_paths.py)."""
import pytest

from test_processor_paths import check_torch_tests_pass_at

pytestmark = pytest.mark.slow(seconds=20)


def test_torch_tests_pass_at_this_level():
    check_torch_tests_pass_at(0)
