"""Re-execute the book's notebooks from their .md text and store the outputs in the .ipynb.

    python scripts/execute.py                 # every notebook but the measured page, in parallel
    python scripts/execute.py book/chapters/training/04_kv_cache.md   # just these
    python scripts/execute.py --measured      # the measured page alone (run it on a quiet machine)

The .md is the source: each is read with jupytext, executed with nbclient (no timing
metadata, stable cell ids, so a second run writes byte-identical files), and written as
its paired .ipynb.

Every kernel runs with ``PINNED_ENV``: numpy's x86 code paths are held to the baseline
instruction set, so transcendental functions (exp, log, power: softmax, log-scale axes)
give the same last bits on every x86-64 processor and the stored figures do not depend on
the machine that drew them.
"""
from __future__ import annotations

import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "book" / "chapters"
MEASURED = CHAPTERS / "appendix" / "02_measured_against_predicted.md"
"""The one page that times this computer: its outputs change on every run by design."""

PINNED_ENV: dict[str, str] = {"PYDEVD_DISABLE_FILE_VALIDATION": "1"}
if platform.machine().lower() in ("x86_64", "amd64"):
    # numpy 2.x dispatches float64 exp/log/power to AVX2 (X86_V3) or AVX-512 (X86_V4) kernels
    # whose last bits differ from the baseline's; a log axis then moves a few pixels.
    PINNED_ENV["NPY_DISABLE_CPU_FEATURES"] = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"

NARROWED_ENV: dict[str, str] = {
    **PINNED_ENV,
    "ATEN_CPU_CAPABILITY": "default",  # PyTorch without its AVX2 / AVX-512 kernels
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
"""How the tests run the book: as a narrower processor would, one thread, to show that no
stored output depends on the processor's vector instructions or on thread timing."""


def is_notebook_text(md: Path) -> bool:
    """True if a .md file is the text of a paired notebook: its front matter names a kernel."""
    text = md.read_text()
    return text.startswith("---") and "kernelspec:" in text.split("---")[1]


def notebooks(args: list[str]) -> list[Path]:
    """The paired .md notebooks to run: those named, or every numbered one under book/chapters
    except the measured page, and every page opening (index.md) that is a notebook."""
    if args:
        return [Path(a).resolve().with_suffix(".md") for a in args]
    openings = [p for p in sorted(CHAPTERS.glob("*/index.md")) if is_notebook_text(p)]
    return openings + [p for p in sorted(CHAPTERS.glob("*/[0-9]*.md")) if p != MEASURED]


def merge_streams(outputs: list) -> list:
    """Join neighbouring stdout (or stderr) chunks: how the kernel splits them depends on timing."""
    merged: list = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (out.get("output_type") == "stream" and prev is not None
                and prev.get("output_type") == "stream" and prev["name"] == out["name"]):
            prev["text"] += out["text"]
        else:
            merged.append(out)
    return merged


def execute(md: Path) -> tuple[str, float]:
    """Execute one notebook and write its .ipynb; return its name and the seconds it took."""
    import jupytext
    from nbclient import NotebookClient

    start = time.perf_counter()
    nb = jupytext.read(md)
    for i, cell in enumerate(nb.cells):  # the .md stores no cell ids: make them stable, not random
        cell.id = f"cell-{i:03d}"
    NotebookClient(
        nb, timeout=600, kernel_name="python3", record_timing=False, extra_arguments=["--log-level=CRITICAL"],
        resources={"metadata": {"path": str(md.parent)}},
    ).execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    jupytext.write(nb, md.with_suffix(".ipynb"), fmt="ipynb")
    name = md.relative_to(ROOT) if md.is_relative_to(ROOT) else md
    return str(name), time.perf_counter() - start


def main(argv: list[str]) -> int:
    todo = [MEASURED] if argv == ["--measured"] else notebooks(argv)
    os.environ.update(PINNED_ENV)
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1)) as pool:
        for name, seconds in pool.map(execute, todo):
            print(f"{seconds:6.1f} s  {name}")
    print(f"{len(todo)} notebooks in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
