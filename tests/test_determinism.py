"""Executing twice gives byte-identical files, also when notebooks share a kernel.

``make execute`` runs notebook after notebook in one kernel per core, resetting it in
between. Here two notebooks run in one kernel, in the order opposite to the one
``make execute`` uses, and both must come out byte for byte as stored: outputs, pictures,
cell ids, counters and all. (nbval, which runs every notebook in a fresh kernel of its own
and compares every output, covers the rest of the book.)
"""
import shutil
import sys

from book_files import CHAPTERS, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import execute  # noqa: E402

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
        if execute._KERNEL is not None:
            execute._KERNEL.close()
            execute._KERNEL = None
    for stem, copy in zip(PAIR, copies):
        assert copy.with_suffix(".ipynb").read_bytes() == stem.with_suffix(".ipynb").read_bytes(), (
            f"re-executing {stem.name} after another notebook in the same kernel changed its .ipynb: "
            "state leaked between notebooks, outputs are not deterministic, or the stored notebook is "
            "stale (run `make execute`)")
