"""Repository-wide pytest hooks.

1. The tests run the book as a narrower processor would: every kernel nbval starts (and
   every notebook the tests execute) gets ``NARROWED_ENV`` from ``scripts/execute.py``
   (PyTorch without its AVX2/AVX-512 kernels, numpy at its baseline, one thread). The stored
   outputs were written with the full instruction set, so nbval passing proves that no stored
   output depends on the processor.
2. nbval normally ignores PNG outputs and output metadata. The book's figures are
   deterministic and carry their alt text in the metadata, so both are compared too: a
   stored picture or alt text that no longer matches its code fails the run.
"""
import importlib.util
import os
from pathlib import Path

_spec = importlib.util.spec_from_file_location("book_execute", Path(__file__).parent / "scripts" / "execute.py")
book_execute = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(book_execute)

os.environ.update(book_execute.NARROWED_ENV)

COMPARED_TOO = {"image/png", "metadata"}


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        nb_file = item.parent
        if type(nb_file).__name__ == "IPyNbFile" and COMPARED_TOO & set(nb_file.skip_compare):
            nb_file.skip_compare = tuple(k for k in nb_file.skip_compare if k not in COMPARED_TOO)
