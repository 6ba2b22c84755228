"""Re-execute the book's notebooks from their .md text and store the outputs in the .ipynb.

    python scripts/execute.py                 # every notebook but the measured page, in parallel
    python scripts/execute.py book/chapters/training/04_kv_cache.md   # just these
    python scripts/execute.py --measured      # the measured page alone (run it on a quiet machine)

The .md is the source: each is read with jupytext, executed with nbclient (no timing
metadata, stable cell ids, so a second run writes byte-identical files), and written as
its paired .ipynb.

Speed: one worker process per core, each with one long-lived kernel that runs notebook after
notebook. Between two notebooks the kernel is reset (a new session: empty namespace, counter
back to one, figures closed, matplotlib's defaults, the notebook's own folder as working
directory), so starting Python and importing numpy, matplotlib and torch is paid once per
core instead of once per notebook. nbval in the tests keeps a kernel per worker with the same
reset (``conftest.py``), but meets the notebooks in another order and with other neighbours,
and requires the same outputs: a notebook that leaked state into the next would fail there.
``tests/test_determinism.py`` checks that the reset empties the namespace.

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

ARCH = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                    platform.machine().lower())
"""This processor's architecture, as Linux names it."""

CAPABILITIES: dict[str, list[str]] = {"x86_64": ["default", "avx2", "avx512"],
                                      "aarch64": ["default", "sve256"]}
"""PyTorch's vector-kernel levels (``ATEN_CPU_CAPABILITY``) on each architecture, narrowest
first; a processor supports a prefix of its list."""

ONEDNN_ISA: dict[str, dict[str, str]] = {
    "x86_64": {"default": "SSE41", "avx2": "AVX2", "avx512": "AVX512_CORE"},
    "aarch64": {"default": "ASIMD", "sve256": "SVE_256"},
}
"""oneDNN's highest instruction set (``ONEDNN_MAX_CPU_ISA``) that matches each PyTorch level.
oneDNN picks its own code from the processor, and PyTorch asks it which paths exist: its
bfloat16 attention packs matrices for AMX when oneDNN says AMX is there, then calls a packing
kernel that PyTorch's narrowed build lacks. Held to the same level, the two agree."""

MKL_ISA: dict[str, str] = {"default": "SSE4_2", "avx2": "AVX2", "avx512": "AVX512"}
"""MKL's highest instruction set (``MKL_ENABLE_INSTRUCTIONS``) for each PyTorch level (x86)."""


def narrowed_env(capability: str = "default") -> dict[str, str]:
    """Settings that make this processor run as one with only ``capability``'s vector
    instructions would: every layer that chooses code from the processor (PyTorch's own
    kernels, oneDNN, MKL, numpy) held to that level together, on one thread."""
    levels = CAPABILITIES.get(ARCH, ["default"])
    if capability not in levels:
        raise ValueError(f"capability must be one of {levels} on {ARCH}, got {capability!r}")
    env = {**PINNED_ENV, "ATEN_CPU_CAPABILITY": capability, "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    if capability in ONEDNN_ISA.get(ARCH, {}):
        env["ONEDNN_MAX_CPU_ISA"] = ONEDNN_ISA[ARCH][capability]
    if ARCH == "x86_64":
        env["MKL_ENABLE_INSTRUCTIONS"] = MKL_ISA[capability]
    return env


NARROWED_ENV: dict[str, str] = {
    **narrowed_env("default"),
    "BOOK_TIMING_REPEATS": "1",        # the measured page, whose outputs are not compared, runs once
}
"""How nbval's kernels run the book: as the narrowest processor would, one thread, to show
that no stored output depends on the processor's vector instructions or on thread timing.
Only the kernels that execute notebooks get it; the tests' own process runs PyTorch as any
user's does (nothing it computes is stored)."""

RESET = """\
import os as _os, matplotlib as _mpl, matplotlib.pyplot as _plt
_plt.close("all"); _mpl.rcdefaults(); _os.chdir({folder!r})
get_ipython().reset(new_session=True)
"""
"""Sent (silently) before each notebook that follows another in the same kernel."""


def notebooks(args: list[str]) -> list[Path]:
    """The paired .md notebooks to run: those named, or every paired notebook under book/chapters
    (numbered sections and page openings) except the measured page."""
    if args:
        return [Path(a).resolve().with_suffix(".md") for a in args]
    found = sorted([*CHAPTERS.glob("*/[0-9]*.md"), *CHAPTERS.glob("*/index.md")])
    return [p for p in found if p != MEASURED and is_notebook_text(p)]


def is_notebook_text(path: Path) -> bool:
    """True if a .md file is the text of a paired notebook: its front matter names a kernel."""
    parts = path.read_text().split("---", 2)
    return len(parts) == 3 and parts[0] == "" and "kernelspec:" in parts[1]


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


def reset(kc, folder: Path | str) -> None:
    """Send ``RESET`` to the kernel behind client ``kc``, to run a notebook in ``folder`` next
    (used here between notebooks, and by nbval's kept kernels in conftest.py)."""
    reply = kc.execute_interactive(RESET.format(folder=str(folder)), silent=True, store_history=False, timeout=60)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"could not reset the kernel for {folder}: {reply['content']}")


class Kernel:
    """One kernel that runs notebook after notebook, reset in between."""

    def __init__(self, env: dict[str, str] | None = None, attempts: int = 3) -> None:
        """A kernel whose environment is this process's with ``env`` (``PINNED_ENV`` unless
        given) on top."""
        from jupyter_client.manager import KernelManager

        env = {**os.environ, **(PINNED_ENV if env is None else env)}
        for attempt in range(attempts):   # a kernel that never answers is replaced, not waited on
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
            self.kc.execute_interactive(f"import os; os.chdir({str(md.parent)!r}); del os", silent=True,
                                        store_history=False, timeout=60)
        self.used = True
        nb = jupytext.read(md)
        for i, cell in enumerate(nb.cells):  # the .md stores no cell ids: make them stable, not random
            cell.id = f"cell-{i:03d}"
        client = NotebookClient(nb, km=self.km, timeout=600, record_timing=False,
                                resources={"metadata": {"path": str(md.parent)}})
        client.kc = self.kc
        client.execute()
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = merge_streams(cell.outputs)
        jupytext.write(nb, md.with_suffix(".ipynb"), fmt="ipynb")

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


_KERNEL: Kernel | None = None


def _worker_kernel() -> Kernel:
    global _KERNEL
    if _KERNEL is None:
        import atexit

        _KERNEL = Kernel()
        atexit.register(_KERNEL.close)
    return _KERNEL


def close_kernel() -> None:
    """Shut this process's kernel down, if it has one; the next notebook starts a fresh one."""
    global _KERNEL
    if _KERNEL is not None:
        _KERNEL.close()
        _KERNEL = None


def execute(md: Path) -> tuple[str, float]:
    """Execute one notebook in this process's kernel and write its .ipynb; return its name and
    the seconds it took. After a failure the kernel is replaced, so the next notebook starts clean."""
    start = time.perf_counter()
    try:
        _worker_kernel().run(md)
    except BaseException:
        close_kernel()
        raise
    name = md.relative_to(ROOT) if md.is_relative_to(ROOT) else md
    return str(name), time.perf_counter() - start


def run_all(todo: list[Path], workers: int | None = None) -> list[tuple[str, float]]:
    """Execute ``todo`` on ``workers`` processes (one kernel each), longest notebooks first."""
    todo = sorted(todo, key=lambda p: -p.stat().st_size)   # a long notebook last would idle a core
    workers = min(len(todo), workers or os.cpu_count() or 1)
    if workers <= 1:
        return [execute(md) for md in todo]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(execute, todo))


def main(argv: list[str]) -> int:
    todo = [MEASURED] if argv == ["--measured"] else notebooks(argv)
    start = time.perf_counter()
    for name, seconds in run_all(todo):
        print(f"{seconds:6.1f} s  {name}")
    print(f"{len(todo)} notebooks in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
