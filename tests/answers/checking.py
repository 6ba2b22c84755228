"""Shared by the answer checks in this folder.

Each ``test_<page>_<section>.py`` sets ``NOTEBOOK`` (e.g. "training/04_kv_cache") and
``CHECKS``: {answer key: a function of the notebook's glued values that computes the answer
another way (a real PyTorch object, a brute-force count, a different route through the
arithmetic)}, and runs ``test_answer`` over them. ``tests/test_exercises.py`` checks that
every glued answer has a check.

The checks can use ``book_files`` and ``decoder_reference`` (a real decoder's parameters,
matrices and cache, measured once per shape): ``tests/`` is on pytest's ``pythonpath``.
"""
import math

from book_files import glued, stored


def given(notebook: str) -> dict:
    """The values the notebook glued (exercise inputs ``ex_...`` and answers ``ans_...``)."""
    return glued(stored(notebook))


def agrees(stored_value, expected, rel: float = 1e-9) -> bool:
    """Whole numbers and words must match exactly; other numbers to ``rel``."""
    if isinstance(stored_value, (str, bool)) or isinstance(expected, (str, bool)):
        return stored_value == expected
    if isinstance(stored_value, int) and isinstance(expected, int):
        return stored_value == expected
    return math.isclose(stored_value, expected, rel_tol=rel)


def check(notebook: str, key: str, compute, rel: float = 1e-9) -> None:
    """Assert that the answer glued under ``key`` agrees with ``compute(glued values)``."""
    values = given(notebook)
    assert key in values, f"{notebook} glues no {key!r}"
    expected = compute(values)
    assert agrees(values[key], expected, rel), f"{notebook}: {key} is {values[key]!r}, expected {expected!r}"
