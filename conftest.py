"""Repository-wide pytest hooks.

1. The tests run the book as a narrower processor would: every kernel nbval starts (and
   every notebook the tests execute) gets ``NARROWED_ENV`` from ``scripts/execute.py``
   (PyTorch without its AVX2/AVX-512 kernels, numpy at its baseline, one thread). The stored
   outputs were written with the full instruction set, so nbval passing proves that no stored
   output depends on the processor.
2. nbval normally ignores PNG outputs and output metadata. The book's figures are
   deterministic and carry their alt text in the metadata, so both are compared too: a
   stored picture or alt text that no longer matches its code fails the run.
3. Scheduling for ``pytest -n 2 --dist loadgroup``: each test file is one group (a notebook's
   cells must share one kernel; a module's fixtures are built once), except the example-swap
   test, whose variants are separate groups so they spread over the workers. The slowest groups
   are handed out first, so no core idles at the end.
"""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "scripts"))
import execute as book_execute  # noqa: E402

os.environ.update(book_execute.NARROWED_ENV)

COMPARED_TOO = {"image/png", "metadata"}
SLOW_FIRST = ["test_example_swap", "test_site", "test_pdf", "test_families", "test_lab", "answers"]
"""Groups whose names contain these run first, in this order; the rest keep their order."""


def _group(item) -> str:
    path = str(Path(item.fspath).relative_to(Path(__file__).parent))
    if "test_example_swap" in path and hasattr(item, "callspec"):
        return f"{path}::{item.callspec.params.get('variant')}"
    return path


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        nb_file = item.parent
        if type(nb_file).__name__ == "IPyNbFile" and COMPARED_TOO & set(nb_file.skip_compare):
            nb_file.skip_compare = tuple(k for k in nb_file.skip_compare if k not in COMPARED_TOO)
        item.add_marker(pytest.mark.xdist_group(_group(item)))

    def rank(item):
        group = _group(item)
        slow = [i for i, s in enumerate(SLOW_FIRST) if s in group]
        return slow[0] if slow else len(SLOW_FIRST)

    items.sort(key=rank)   # stable: each group keeps its own order
