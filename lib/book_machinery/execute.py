"""Re-execute the book's notebooks from their .md text and store the outputs in the
.ipynb.

    python -m book_machinery.execute             # every notebook but the measured page
    # just these
    python -m book_machinery.execute book/chapters/training/04_kv_cache.md
    # the measured page alone (on a quiet machine)
    python -m book_machinery.execute --measured

The .md is the source: each is read with jupytext, executed with nbclient (no timing
metadata, stable cell ids, so a second run writes byte-identical files), and written as
its paired .ipynb.

Speed: one worker process per core, each with one long-lived kernel that runs notebook
after notebook. Between two notebooks the kernel is reset (a new session: empty
namespace, counter back to one, figures closed, matplotlib's defaults, the notebook's
own folder as working directory), so starting Python and importing numpy, matplotlib and
torch is paid once per core instead of once per notebook. nbval in the tests keeps a
kernel per worker with the same reset (``conftest.py``), but meets the notebooks in
another order and with other neighbours, and requires the same outputs: a notebook that
leaked state into the next would fail there. ``tests/test_determinism.py`` checks that
the reset empties the namespace.

Every kernel runs with ``PINNED_ENV`` (``processor.py``): numpy's x86 code paths are
held to the baseline instruction set, so transcendental functions (exp, log, power:
softmax, log-scale axes) give the same last bits on every x86-64 processor and the
stored figures do not depend on the machine that drew them.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .processor import PINNED_ENV

ROOT = Path(__file__).resolve().parents[2]
"""The repository's top folder."""
CHAPTERS = ROOT / "book" / "chapters"
MEASURED = CHAPTERS / "appendix" / "02_measured_against_predicted.md"
"""The one page that times this computer: its outputs change on every run by design."""

RESET = """\
import os as _os, matplotlib as _mpl, matplotlib.pyplot as _plt
_plt.close("all"); _mpl.rcdefaults(); _os.chdir({folder!r})
get_ipython().reset(new_session=True)
"""
"""Sent (silently) before each notebook that follows another in the same kernel."""


def notebooks(args: list[str]) -> list[Path]:
    """The paired .md notebooks to run: those named, or every paired notebook under
    book/chapters (numbered sections and page openings) except the measured page."""
    if args:
        return [Path(a).resolve().with_suffix(".md") for a in args]
    found = sorted([*CHAPTERS.glob("*/[0-9]*.md"), *CHAPTERS.glob("*/index.md")])
    return [p for p in found if p != MEASURED and is_notebook_text(p)]


def is_notebook_text(path: Path) -> bool:
    """True if a .md file is the text of a paired notebook: its front matter names a
    kernel."""
    parts = path.read_text().split("---", 2)
    return len(parts) == 3 and parts[0] == "" and "kernelspec:" in parts[1]


def merge_streams(outputs: list) -> list:
    """Join neighbouring stdout (or stderr) chunks: how the kernel splits them depends
    on timing."""
    merged: list = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (
            out.get("output_type") == "stream"
            and prev is not None
            and prev.get("output_type") == "stream"
            and prev["name"] == out["name"]
        ):
            prev["text"] += out["text"]
        else:
            merged.append(out)
    return merged


def reset(kc, folder: Path | str) -> None:
    """Send ``RESET`` to the kernel behind client ``kc``, to run a notebook in
    ``folder`` next (used here between notebooks, and by nbval's kept kernels in
    conftest.py)."""
    reply = kc.execute_interactive(
        RESET.format(folder=str(folder)), silent=True, store_history=False, timeout=60
    )
    if reply["content"]["status"] != "ok":
        raise RuntimeError(
            f"could not reset the kernel for {folder}: {reply['content']}"
        )


class Kernel:
    """One kernel that runs notebook after notebook, reset in between."""

    def __init__(
        self, env: dict[str, str] | None = None, setup: str = "", attempts: int = 3
    ) -> None:
        """A kernel whose environment is this process's with ``env`` (``PINNED_ENV``
        unless given) on top, that runs ``setup`` once before its first notebook
        (``swap.py`` changes the book's example that way; the reset between notebooks
        keeps imported modules, and so the change)."""
        from jupyter_client.manager import KernelManager

        self.setup = setup
        env = {**os.environ, **(PINNED_ENV if env is None else env)}
        for attempt in range(
            attempts
        ):  # a kernel that never answers is replaced, not waited on
            self.km = KernelManager(kernel_name="python3")
            self.km.start_kernel(extra_arguments=["--log-level=CRITICAL"], env=env)
            self.kc = self.km.client()
            self.kc.start_channels()
            try:
                self.kc.wait_for_ready(timeout=30)
                break
            except RuntimeError:
                self.close()
                if attempt == attempts - 1:
                    raise
        self.used = False

    def run(self, md: Path) -> None:
        """Execute one notebook in this kernel and write its .ipynb."""
        import jupytext
        from nbclient import NotebookClient

        if self.used:
            reset(self.kc, md.parent)
        else:
            start = f"{self.setup}\nimport os; os.chdir({str(md.parent)!r}); del os"
            reply = self.kc.execute_interactive(
                start, silent=True, store_history=False, timeout=60
            )
            if reply["content"]["status"] != "ok":
                raise RuntimeError(f"the kernel's setup failed: {reply['content']}")
        self.used = True
        nb = jupytext.read(md)
        for i, cell in enumerate(
            nb.cells
        ):  # the .md stores no cell ids: make them stable, not random
            cell.id = f"cell-{i:03d}"
        client = NotebookClient(
            nb,
            km=self.km,
            timeout=600,
            record_timing=False,
            resources={"metadata": {"path": str(md.parent)}},
        )
        client.kc = self.kc
        client.execute()
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = merge_streams(cell.outputs)
        jupytext.write(nb, md.with_suffix(".ipynb"), fmt="ipynb")

    def close(self) -> None:
        """Stop the kernel."""
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


_KERNEL: Kernel | None = None


def _worker_kernel(setup: str) -> Kernel:
    global _KERNEL
    if _KERNEL is not None and _KERNEL.setup != setup:
        close_kernel()
    if _KERNEL is None:
        _KERNEL = Kernel(setup=setup)
    return _KERNEL


def close_kernel() -> None:
    """Shut this process's kernel down, if it has one; the next notebook starts a fresh
    one."""
    global _KERNEL
    if _KERNEL is not None:
        _KERNEL.close()
        _KERNEL = None


atexit.register(close_kernel)


def execute(md: Path, setup: str = "") -> tuple[str, float]:
    """Execute one notebook in this process's kernel (one that ran ``setup`` first) and
    write its .ipynb; return its name and the seconds it took. After a failure the
    kernel is replaced, so the next notebook starts clean."""
    start = time.perf_counter()
    try:
        _worker_kernel(setup).run(md)
    except BaseException:
        close_kernel()
        raise
    name = md.relative_to(ROOT) if md.is_relative_to(ROOT) else md
    return str(name), time.perf_counter() - start


def run_all(
    todo: list[Path], workers: int | None = None, setup: str = ""
) -> list[tuple[str, float]]:
    """Execute ``todo`` on ``workers`` processes (one kernel each, running ``setup``
    first), longest notebooks first."""
    todo = sorted(
        todo, key=lambda p: -p.stat().st_size
    )  # a long notebook last idles a core
    workers = min(len(todo), workers or os.cpu_count() or 1)
    if workers <= 1:
        return [execute(md, setup) for md in todo]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(execute, todo, [setup] * len(todo)))


def main(argv: list[str]) -> int:
    """Execute the notebooks named in ``argv`` (every one, or ``--measured``); 0 when
    done."""
    ap = argparse.ArgumentParser(
        prog="python -m book_machinery.execute", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", metavar="SECTION.md",
                    help="the sections to run (default: all but the measured page)")
    ap.add_argument("--measured", action="store_true",
                    help="run the measured page alone")
    args = ap.parse_args(argv)
    missing = [n for n in args.notebooks if not Path(n).with_suffix(".md").is_file()]
    if missing or (args.measured and args.notebooks):
        ap.error(f"no section's .md at {', '.join(missing)}" if missing
                 else "--measured runs the measured page alone: name no section")
    todo = [MEASURED] if args.measured else notebooks(args.notebooks)
    start = time.perf_counter()
    for name, seconds in run_all(todo):
        print(f"{seconds:6.1f} s  {name}")
    print(f"{len(todo)} notebooks in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
