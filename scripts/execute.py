"""Re-execute the book's notebooks from their .md text and store the outputs in the .ipynb.

    python scripts/execute.py                 # every notebook, in parallel across the cores
    python scripts/execute.py book/chapters/training/04_kv_cache.md   # just these

The .md is the source: each is read with jupytext, executed with nbclient (no timing
metadata, so a second run writes byte-identical files), and written as its paired .ipynb.
"""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "book" / "chapters"


def notebooks(args: list[str]) -> list[Path]:
    """The paired .md notebooks to run: those named, or every numbered one under book/chapters."""
    if args:
        return [Path(a).resolve().with_suffix(".md") for a in args]
    return sorted(CHAPTERS.glob("*/[0-9]*.md"))


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


def main() -> int:
    todo = notebooks(sys.argv[1:])
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for name, seconds in pool.map(execute, todo):
            print(f"{seconds:6.1f} s  {name}")
    print(f"{len(todo)} notebooks in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
