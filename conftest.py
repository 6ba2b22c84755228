"""Repository-wide pytest hooks.

1. nbval runs the book as the narrowest processor would: its kernels start from the
   kernelspec ``book-narrowed``, written here, whose environment is ``NARROWED_ENV`` from
   ``scripts/execute.py`` (PyTorch's kernels, oneDNN and MKL all held to the baseline
   instruction set together, numpy at its baseline, one thread). The stored outputs were
   written with the full instruction set, so nbval passing proves that no stored output
   depends on the processor. Only those kernels are narrowed: the tests' own process runs
   PyTorch as any user's does, and ``tests/test_processor_paths.py`` runs the tests that
   call PyTorch's kernels once more under each narrower level this processor supports.
2. nbval normally ignores PNG outputs and output metadata. The book's figures are
   deterministic and carry their alt text in the metadata, so both are compared too: a
   stored picture or alt text that no longer matches its code fails the run.
3. nbval starts a kernel for every notebook; here each worker keeps one kernel and, between
   notebooks, sends it the reset ``scripts/execute.py`` uses (figures closed, matplotlib's
   defaults back, a new session with an empty namespace, the notebook's folder as working
   directory). What stays is what is already imported, numpy, matplotlib and torch: about two
   seconds a notebook. The stored outputs were written the same way (``make execute`` reuses
   kernels too), and ``tests/test_determinism.py`` checks that reuse changes nothing. A kernel
   that died or timed out is replaced by a fresh one.
4. Scheduling for ``pytest -n 2 --dist loadfile --no-loadscope-reorder`` (a notebook's cells share one kernel, a
   module's fixtures are built once): the slowest files are handed out first, so no core idles
   at the end. (Each example-swap variant has a file of its own so the variants spread.)
"""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "scripts"))
import execute as book_execute  # noqa: E402

NARROWED_KERNEL = "book-narrowed"
"""The kernelspec nbval starts: this Python with ``NARROWED_ENV`` (item 1 above)."""

COMPARED_TOO = {"image/png", "metadata"}

_KERNELS: dict = {}
"""The kernel each worker keeps, by kernel name (item 3 above)."""


def _reuse_kernel(original_setup):
    def setup(self):
        name = self.config.option.nbval_kernel_name or self.nb.metadata.get(
            "kernelspec", {}).get("name", "python")
        kernel = _KERNELS.get(name)
        if kernel is None or not kernel.is_alive():
            original_setup(self)
            _KERNELS[name] = self.kernel
            return
        book_execute.reset(kernel.kc, self.fspath.dirname)
        self.kernel = kernel
        self.setup_sanitize_files()
    return setup


def _keep_kernel(original_teardown):
    def teardown(self):
        if any(self.kernel is kept for kept in _KERNELS.values()):
            return   # kept for the next notebook; stopped when the session ends
        original_teardown(self)
    return teardown


def _narrowed_kernelspec() -> Path:
    """A folder for ``JUPYTER_PATH`` holding the ``book-narrowed`` kernelspec."""
    folder = Path(tempfile.mkdtemp(prefix="book-kernels-"))
    spec = folder / "kernels" / NARROWED_KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (narrowed processor)", "language": "python",
        "env": book_execute.NARROWED_ENV}))
    return folder


def pytest_configure(config):
    try:
        from nbval.plugin import IPyNbFile
    except ImportError:
        return
    if getattr(config.option, "nbval", False) and not config.option.nbval_kernel_name:
        folder = _narrowed_kernelspec()
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            p for p in (str(folder), os.environ.get("JUPYTER_PATH")) if p)
        config.option.nbval_kernel_name = NARROWED_KERNEL
    if not getattr(IPyNbFile, "_book_reuses_kernels", False):
        IPyNbFile.setup = _reuse_kernel(IPyNbFile.setup)
        IPyNbFile.teardown = _keep_kernel(IPyNbFile.teardown)
        IPyNbFile._book_reuses_kernels = True


def pytest_sessionfinish(session, exitstatus):
    for kernel in _KERNELS.values():
        if kernel.is_alive():
            kernel.stop()
    _KERNELS.clear()


SLOW_FIRST = ["test_swap_small_mqa", "test_processor_paths", "test_pdf", "test_site", "test_swap_", "test_determinism",
              "02_measured", "test_famil", "test_report", "test_lab", "answers"]
"""Files whose paths contain these run first, in this order (measured: the example swap that
also builds the site, the PDF and the site about 45 s each, the other swaps about 40 s); the
rest keep their order. xdist keeps this order only with ``--no-loadscope-reorder``: by default
it sorts files by their number of tests, which puts the five-test swap files last."""


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        nb_file = item.parent
        if type(nb_file).__name__ == "IPyNbFile" and COMPARED_TOO & set(nb_file.skip_compare):
            nb_file.skip_compare = tuple(k for k in nb_file.skip_compare if k not in COMPARED_TOO)

    def rank(item):
        path = str(item.fspath)
        slow = [i for i, s in enumerate(SLOW_FIRST) if s in path]
        return slow[0] if slow else len(SLOW_FIRST)

    items.sort(key=rank)   # stable: each file keeps its own order
