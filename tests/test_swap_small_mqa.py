"""The whole book re-executed with the small-mqa example (the checks: tests/example_swap.py)."""
from example_swap import make_tests

globals().update(make_tests("small-mqa", build=True))
