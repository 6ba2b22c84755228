"""Executing a notebook twice gives byte-identical files: outputs, pictures, cell ids and all."""
import shutil
import subprocess
import sys

from book_files import CHAPTERS, ROOT

REFERENCE = CHAPTERS / "training" / "04_kv_cache"


def test_re_execution_reproduces_the_stored_notebook_byte_for_byte(tmp_path):
    md = tmp_path / REFERENCE.with_suffix(".md").name
    shutil.copy(REFERENCE.with_suffix(".md"), md)
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "execute.py"), str(md)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert md.with_suffix(".ipynb").read_bytes() == REFERENCE.with_suffix(".ipynb").read_bytes(), (
        "re-executing 04_kv_cache.md changed its .ipynb: outputs are not deterministic, or the "
        "stored notebook is stale (run `make execute`)")
