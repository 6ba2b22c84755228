"""The book's pytest plugin (``conftest.py`` loads it): how the tests run the notebooks.

1. **A narrowed processor.** nbval starts its kernels from the kernelspec
   ``book-narrowed``, written here, whose environment is ``processor.NARROWED_ENV``
   (PyTorch's kernels, oneDNN and MKL held to the baseline instruction set together,
   numpy at its baseline, one thread). The stored outputs were written with the full
   instruction set, so nbval passing proves that no stored output depends on the
   processor. Only those kernels are narrowed: the tests' own process runs PyTorch as a
   reader's machine does.
2. **Pictures and alt text compared.** nbval compares SVG but normally ignores PNG
   outputs and output metadata. The book's figures (SVG with a PNG preview beside it)
   are deterministic and carry their alt text, width and smallest font in the metadata,
   so all of it is compared: a stored picture or alt text that no longer matches its
   code fails the run.
3. **One kernel per worker.** nbval starts a kernel for every notebook; here each worker
   keeps one and, between notebooks, sends it the reset ``execute.py`` uses (figures
   closed, matplotlib's defaults back, a new session with an empty namespace, the
   notebook's folder as working directory). What stays is what is already imported:
   about two seconds a notebook. nbval has no hook for this, so its collector is
   subclassed (``BookNotebook``) and put in place of its own through pytest's documented
   ``pytest_collect_file`` wrapper; no nbval method is replaced.
4. **Markers and order.** Every notebook's cells are marked ``notebooks``. Test files
   that declare ``pytest.mark.slow(seconds=...)`` run first, longest first (``--dist
   loadfile`` with ``--no-loadscope-reorder`` hands files out in this order), so no core
   idles at the end; the rest keep their order.
5. **Files a mark expression leaves out, left unopened.** With ``-m`` (``make check``),
   a test file whose own ``pytestmark`` already rules out every test in it, whatever
   marks its tests add, is not imported: importing it would load ``transformers``,
   ``jupytext`` and the like only to deselect every test. The marks are read from the
   file's text; the tests that run are exactly those ``-m`` alone selects.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from . import execute
from .processor import NARROWED_ENV

_UNSURE = object()
"""What the mark matcher answers when a mark's arguments decide (item 5): collect."""

NARROWED_KERNEL = "book-narrowed"
"""The kernelspec nbval starts: this Python with ``NARROWED_ENV`` (item 1 above)."""

COMPARED_TOO = ("image/png", "metadata")
"""Outputs nbval skips by default that the book's notebooks are compared on (item 2)."""

_KERNELS: dict = {}
"""The kernel this worker keeps, by kernel name (item 3)."""


def _narrowed_kernelspec() -> Path:
    """A folder for ``JUPYTER_PATH`` holding the ``book-narrowed`` kernelspec."""
    folder = Path(tempfile.mkdtemp(prefix="book-kernels-"))
    spec = folder / "kernels" / NARROWED_KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [
                    sys.executable,
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                ],
                "display_name": "Python 3 (narrowed processor)",
                "language": "python",
                "env": NARROWED_ENV,
            }
        )
    )
    return folder


def pytest_configure(config):
    if getattr(config.option, "nbval", False) and not config.option.nbval_kernel_name:
        folder = _narrowed_kernelspec()
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            p for p in (str(folder), os.environ.get("JUPYTER_PATH")) if p
        )
        config.option.nbval_kernel_name = NARROWED_KERNEL


@functools.cache
def _book_notebook_class():
    from nbval.plugin import IPyNbFile

    class BookNotebook(IPyNbFile):
        """nbval's notebook collector, comparing pictures and alt text and reusing this
        worker's kernel (items 2 and 3 of the module's docstring)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.skip_compare = tuple(
                k for k in self.skip_compare if k not in COMPARED_TOO
            )

        def setup(self):
            name = self.config.option.nbval_kernel_name or self.nb.metadata.get(
                "kernelspec", {}
            ).get("name", "python")
            kernel = _KERNELS.get(name)
            if kernel is None or not kernel.is_alive():
                super().setup()
                _KERNELS[name] = self.kernel
                return
            execute.reset(kernel.kc, self.fspath.dirname)
            self.kernel = kernel
            self.setup_sanitize_files()

        def teardown(self):
            if not any(self.kernel is kept for kept in _KERNELS.values()):
                super().teardown()  # kept kernels stop when the session ends

    return BookNotebook


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    collected = yield
    if file_path.suffix != ".ipynb" or not collected:
        return collected
    from nbval.plugin import IPyNbFile

    book_notebook = _book_notebook_class()
    return [
        book_notebook.from_parent(parent, path=file_path) if type(c) is IPyNbFile else c
        for c in collected
    ]


def pytest_sessionfinish(session, exitstatus):
    for kernel in _KERNELS.values():
        if kernel.is_alive():
            kernel.stop()
    _KERNELS.clear()


def _declared_seconds(item) -> float:
    marker = item.get_closest_marker("slow")
    return float(marker.kwargs.get("seconds", 0)) if marker is not None else 0.0


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        if type(item.parent).__name__ == "BookNotebook":
            item.add_marker(pytest.mark.notebooks)
    items.sort(
        key=lambda item: -_declared_seconds(item)
    )  # stable: files keep their order


def _module_marks(source: str) -> set[str]:
    """The names of the marks a test file's top-level ``pytestmark`` gives it."""
    names: set[str] = set()
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in statement.targets
        ):
            for node in ast.walk(statement.value):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "mark"
                ):
                    names.add(node.attr)
    return names


def _can_match(expression, marks: set[str], assumed: dict | None = None) -> bool:
    """Whether some test carrying at least ``marks`` could satisfy the ``-m``
    expression: every other mark the expression asks about tried both ways."""
    assumed = assumed or {}
    asked: list[str] = []

    def matcher(name: str, /, **kwargs) -> bool:
        if kwargs:
            raise LookupError(_UNSURE)
        if name in marks:
            return True
        asked.append(name)
        return assumed.get(name, False)

    try:
        if expression.evaluate(matcher):
            return True
    except LookupError:
        return True
    return any(
        _can_match(expression, marks, {**assumed, name: True})
        for name in dict.fromkeys(asked)
        if name not in assumed
    )


def pytest_ignore_collect(collection_path, config):
    expression_text = config.option.markexpr
    if not expression_text or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    from _pytest.mark.expression import Expression

    try:
        marks = _module_marks(collection_path.read_text(encoding="utf-8"))
        expression = Expression.compile(expression_text)
    except (SyntaxError, UnicodeDecodeError):
        return None  # pytest itself reports the file or the expression
    return None if _can_match(expression, marks) else True
