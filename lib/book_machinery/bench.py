"""How fast the author's and CI's loops are, against the floor of this machine.

    # floor, execute, one notebook, builds, make test
    python -m book_machinery.bench
    python -m book_machinery.bench --quick   # everything but make test

The floor is measured first, on this machine, the way a notebook starts: a fresh kernel
that imports numpy and matplotlib and draws one figure in the book's style (and the
extra cost of importing torch, and of each further figure). The book's floor is what its
notebooks would cost if each did nothing but that, spread over the cores. Every other
number is printed in seconds and as a multiple of its floor, so the ratios mean the same
on a slow machine and a fast one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import execute
from .execute import ROOT
from .processor import PINNED_ENV

PY = sys.executable
FIGURE = """
from book_machinery.figures import new_figure, png_preview, svg_text
fig, ax = new_figure(); ax.plot([1, 2, 3], [1, 4, 9]); ax.set_title("floor")
fig.canvas.draw(); _ = png_preview(fig), svg_text(fig)
"""


def timed(cmd: list[str], **kw) -> float:
    start = time.perf_counter()
    subprocess.run(
        cmd,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        **kw,
    )
    return time.perf_counter() - start


def in_new_kernel(code: str) -> float:
    """Start a kernel, run ``code`` in it, shut it down: the seconds all of that
    took."""
    start = time.perf_counter()
    kernel = execute.Kernel()
    reply = kernel.kc.execute_interactive(code, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    kernel.close()
    return time.perf_counter() - start


def kernel_floor(code: str, repeats: int = 3) -> float:
    """Fastest of ``repeats`` runs of ``code`` in a new kernel, start and shut-down
    included (seconds)."""
    return min(in_new_kernel(code) for _ in range(repeats))


def figure_floor(repeats: int = 5) -> float:
    """Seconds one more figure costs once matplotlib is warm: inside one kernel, a
    figure is drawn to warm it, then ``repeats`` more are timed there and the mean kept
    (a difference of two kernel runs would carry the noise of both start-ups)."""
    out = Path(tempfile.mkdtemp(prefix="bench-")) / "figure.txt"
    in_new_kernel(
        "import time, numpy, matplotlib.pyplot\n"
        + FIGURE
        + "start = time.perf_counter()\n"
        + f"for _ in range({repeats}):\n"
        + "".join("    " + line + "\n" for line in FIGURE.strip().splitlines())
        + f"_ = open({str(out)!r}, 'w').write(str((time.perf_counter() - "
        f"start) / {repeats}))\n"
    )
    return float(out.read_text())


def book_shape() -> tuple[int, int, int]:
    """(notebooks make execute runs, those that import torch, figures they draw)."""
    todo = execute.notebooks([])
    torch_users = sum("import torch" in md.read_text() for md in todo)
    figures = sum(md.read_text().count("{glue:figure}") for md in todo)
    return len(todo), torch_users, figures


def main(argv: list[str]) -> int:
    """Measure and print the loops against their floor (see the module's docstring)."""
    ap = argparse.ArgumentParser(
        prog="python -m book_machinery.bench", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="leave out make test")
    quick = ap.parse_args(argv).quick
    os.environ.update(PINNED_ENV)
    cores = os.cpu_count() or 1
    base = kernel_floor("import numpy, matplotlib.pyplot\n" + FIGURE)
    with_torch = kernel_floor("import numpy, matplotlib.pyplot, torch\n" + FIGURE)
    torch_extra, per_figure = with_torch - base, figure_floor()
    n, n_torch, n_fig = book_shape()
    book_floor = (
        n * base + n_torch * torch_extra + max(n_fig - n, 0) * per_figure
    ) / cores
    rows = [
        ("floor: kernel + numpy + matplotlib + one figure", base, base),
        ("floor: import torch, extra", torch_extra, torch_extra),
        ("floor: one more figure", per_figure, per_figure),
        (
            f"floor: the book ({n} notebooks, {n_torch} with torch, {n_fig} figures, "
            f"{cores} cores)",
            book_floor,
            book_floor,
        ),
    ]

    one = ROOT / "book" / "chapters" / "training" / "03_teacher_forcing.md"
    one_figs = one.read_text().count("{glue:figure}")
    one_floor = base + max(one_figs - 1, 0) * per_figure
    scratch = Path(tempfile.mkdtemp(prefix="bench-"))
    shutil.copy(one, scratch / one.name)
    rows.append(
        (
            f"one notebook without torch ({one.stem})",
            timed([PY, "-m", "book_machinery.execute", str(scratch / one.name)]),
            one_floor,
        )
    )
    rows.append(
        ("make execute (every notebook)", timed(["make", "execute"]), book_floor)
    )

    jb = str(Path(PY).with_name("jupyter-book"))
    out = scratch / "site"
    build = [jb, "build", "-W", "-n", "--keep-going", "book", "--path-output", str(out)]
    rows.append(("site build from stored outputs, clean", timed(build), base))
    rows.append(("site rebuild, nothing changed", timed(build), base))
    if not quick:
        rows.append(("make test", timed(["make", "test"]), book_floor))
    shutil.rmtree(scratch, ignore_errors=True)

    width = max(len(r[0]) for r in rows)
    print(f"{'':<{width}}  {'seconds':>8}  {'x floor':>8}")
    for name, seconds, floor in rows:
        print(f"{name:<{width}}  {seconds:8.1f}  {seconds / floor:8.2f}")
    (ROOT / ".cache").mkdir(exist_ok=True)
    (ROOT / ".cache" / "bench.json").write_text(
        json.dumps({name: {"seconds": s, "floor": f} for name, s, f in rows}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
