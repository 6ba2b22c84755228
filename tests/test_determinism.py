"""Executing twice gives byte-identical files, also when notebooks share a kernel.

``make execute`` runs notebook after notebook in one kernel per core, resetting it in
between. Here two notebooks run in one kernel, in the order opposite to the one
``make execute`` uses, and both must come out byte for byte as stored: outputs, pictures,
cell ids, counters and all. (nbval, which compares every output of every notebook, covers
the rest of the book.)

nbval keeps one kernel per worker too (``conftest.py``), with the same reset between
notebooks: a second test shows that what is imported stays and what a notebook defined does
not, that each notebook runs in its own folder, and that nbval's kernels run narrowed
(``NARROWED_ENV``), which is what makes nbval's pass a proof that no stored output depends on
the processor.
"""
import shutil
import subprocess
import sys

from book_files import CHAPTERS, ROOT

from book_machinery import execute, processor
import pytest

pytestmark = pytest.mark.notebooks

PAIR = [CHAPTERS / "training" / "05_choosing_the_next_token", CHAPTERS / "training" / "08_in_python"]


def test_two_notebooks_in_one_kernel_reproduce_their_stored_files(tmp_path):
    copies = []
    for stem in PAIR:
        copy = tmp_path / stem.with_suffix(".md").name
        shutil.copy(stem.with_suffix(".md"), copy)
        copies.append(copy)
    try:
        for copy in copies:
            execute.execute(copy)
    finally:
        execute.close_kernel()
    for stem, copy in zip(PAIR, copies):
        assert copy.with_suffix(".ipynb").read_bytes() == stem.with_suffix(".ipynb").read_bytes(), (
            f"re-executing {stem.name} after another notebook in the same kernel changed its .ipynb: "
            "state leaked between notebooks, outputs are not deterministic, or the stored notebook is "
            "stale (run `make execute`)")


def test_nbval_keeps_the_kernel_but_not_the_names(tmp_path):
    import nbformat

    narrowed = sorted(processor.NARROWED_ENV.items())
    cells = {   # notebook: (its one cell, the output stored for it)
        "a.ipynb": ("import numpy\nx = 41\nprint(x + 1)", "42\n"),
        "b.ipynb": ("import sys\nprint('numpy' in sys.modules)", "True\n"),   # the kernel was kept
        "c.ipynb": ("print(x)", "41\n"),                                       # x must be gone
        "sub/d.ipynb": ("import os\nprint(os.path.basename(os.getcwd()))", "sub\n"),
        "e.ipynb": (f"import os\nprint(sorted((k, os.environ.get(k)) for k in {[k for k, _ in narrowed]}))",
                    f"{narrowed}\n"),                                       # nbval's kernels are narrowed
    }
    for name, (source, output) in cells.items():
        nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python",
                                                               "display_name": "Python 3"}})
        cell = nbformat.v4.new_code_cell(source, execution_count=1)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=output)]
        nb.cells = [cell]
        (tmp_path / name).parent.mkdir(exist_ok=True)
        nbformat.write(nb, tmp_path / name)
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:xdist", "-p", "no:cacheprovider",
                          "--nbval", "-rA", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    summary = [line for line in run.stdout.splitlines() if line.startswith(("PASSED ", "FAILED "))]
    outcome = {name: next((line.split()[0] for line in summary if f"/{name}::Cell 0" in line), "?") for name in cells}
    assert outcome == {"a.ipynb": "PASSED", "b.ipynb": "PASSED", "c.ipynb": "FAILED", "sub/d.ipynb": "PASSED",
                       "e.ipynb": "PASSED"}, \
        run.stdout[-3000:]
    assert "NameError" in run.stdout
