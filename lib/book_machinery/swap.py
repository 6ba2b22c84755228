"""Re-execute notebooks with another stated example model and accelerator, in a scratch
folder.

    python -m book_machinery.swap deep-grouped                      # every notebook
    python -m book_machinery.swap wide-fast book/chapters/training/04_kv_cache.md \
        --figures
    python -m book_machinery.swap --list

A variant is data: the example's sizes and rates that change. Each notebook's ``.md`` is
copied to ``OUT/book/chapters`` and executed there in a kernel that first replaces
``transformer_arithmetic``'s ``EXAMPLE_MODEL`` and ``EXAMPLE_ACCELERATOR`` with the
variant's (built from the stated sizes with the changes on top), so every page reads the
new example. Nothing in the repository changes. ``--figures`` also draws each figure as
SVG and writes it (and a PNG of it), to look at; without it the SVG is not drawn (the
labels are checked all the same). ``tests/example_swap.py`` uses the same machinery.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import execute, figure_files

__all__ = ["Variant", "VARIANTS", "example_of", "setup_code", "prepare", "run", "main"]

GIB = 1024**3


@dataclass(frozen=True)
class Variant:
    """Another valid example: ``model`` and ``accelerator`` changes on top of the stated
    sizes (``transformer_arithmetic.shapes.EXAMPLE_MODEL_SIZES`` and
    ``EXAMPLE_ACCELERATOR_RATES``), why it is worth trying, and the chapters it is
    meant for (empty: all of them)."""

    why: str
    model: dict = field(default_factory=dict)
    accelerator: dict = field(default_factory=dict)
    chapters: tuple[str, ...] = ()


VARIANTS: dict[str, Variant] = {
    "deep-grouped": Variant(
        "deeper, with grouped key-value heads; the same chip",
        model={"layers": 32, "kv_heads": 4},
    ),
    "wide-fast": Variant(
        "fewer layers, 12 wider heads, a bigger vocabulary; a faster chip with more "
        "memory",
        model={
            "layers": 12,
            "heads": 12,
            "head_dim": 128,
            "ffn_width": 6144,
            "vocab": 50304,
        },
        accelerator={
            "flops_per_s": 400e12,
            "bytes_per_s": 3.2e12,
            "memory_bytes": 80 * GIB,
        },
    ),
    "small-mqa": Variant(
        "a small model in four-byte numbers with one key-value head; a slow chip with "
        "little "
        "memory",
        model={
            "layers": 8,
            "heads": 8,
            "ffn_width": 1536,
            "vocab": 16384,
            "kv_heads": 1,
            "bytes_per_number": 4,
        },
        accelerator={
            "flops_per_s": 20e12,
            "bytes_per_s": 0.5e12,
            "memory_bytes": 8 * GIB,
        },
    ),
    "odd-heads": Variant(
        "15 heads of 128 with 5 key-value heads and an odd vocabulary, so the large "
        "model of 'Past one accelerator' allows no tensor-parallel group of 4 or 8 and "
        "few splits fit; a mid-sized chip",
        model={
            "layers": 30,
            "heads": 15,
            "kv_heads": 5,
            "head_dim": 128,
            "ffn_width": 7680,
            "vocab": 50257,
        },
        accelerator={
            "flops_per_s": 250e12,
            "bytes_per_s": 1.6e12,
            "memory_bytes": 32 * GIB,
        },
        chapters=("many_chips",),
    ),
}
"""The other examples the tests run the book with (a variant that names chapters runs
only those)."""


def _variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    return VARIANTS[name]


def example_of(name: str):
    """The variant's example model and accelerator (``ModelShape``, ``Accelerator``)."""
    from transformer_arithmetic import Accelerator, ModelShape, shapes

    v = _variant(name)
    model = ModelShape(
        **{**shapes.EXAMPLE_MODEL_SIZES, **v.model}, name="the example model"
    )
    acc = Accelerator(
        **{**shapes.EXAMPLE_ACCELERATOR_RATES, **v.accelerator},
        name="the example accelerator",
    )
    return model, acc


def setup_code(name: str, vector: bool = False) -> str:
    """Code a kernel runs before its first notebook to make the variant the book's
    example (and, unless ``vector``, to skip drawing the figures' SVG: a swap run keeps
    no figure, and its labels are checked all the same)."""
    v = _variant(name)
    return (
        f"import book_machinery.figures.page as _page; _page.VECTOR = {vector!r}\n"
        "del _page\n"
        "import transformer_arithmetic as _ta\n"
        "from transformer_arithmetic import shapes as _shapes\n"
        f"_shapes.EXAMPLE_MODEL = _ta.EXAMPLE_MODEL = _ta.ModelShape(\n"
        f"    **{{**_shapes.EXAMPLE_MODEL_SIZES, **{v.model!r}}}, name='the example "
        "model')\n"
        f"_shapes.EXAMPLE_ACCELERATOR = _ta.EXAMPLE_ACCELERATOR = _ta.Accelerator(\n"
        f"    **{{**_shapes.EXAMPLE_ACCELERATOR_RATES, **{v.accelerator!r}}},\n"
        "    name='the example accelerator')\n"
        "del _ta, _shapes\n"
    )


def prepare(name: str, out: Path, notebooks: list[Path]) -> list[Path]:
    """Copy the notebooks' .md files into ``out`` (their place under the repository
    kept); return the copies."""
    _variant(name)
    copies = []
    for md in notebooks:
        dest = out / md.resolve().relative_to(execute.ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(md, dest)
        copies.append(dest)
    return copies


def run(
    name: str, out: Path, notebooks: list[Path], vector: bool = False
) -> list[Path]:
    """Execute ``notebooks`` with the variant in ``out`` (figures drawn as SVG if
    ``vector``); return the executed .ipynb paths."""
    copies = prepare(name, out, notebooks)
    for done, seconds in execute.run_all(copies, setup=setup_code(name, vector)):
        print(f"{seconds:6.1f} s  {done}")
    return [c.with_suffix(".ipynb") for c in copies]


def main(argv: list[str]) -> int:
    """The command line (see the module's docstring)."""
    ap = argparse.ArgumentParser(
        prog="python -m book_machinery.swap", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("variant", nargs="?")
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--figures",
        action="store_true",
        help="draw every figure and write it (SVG and PNG) beside its notebook",
    )
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    if args.list or not args.variant:
        for name, v in VARIANTS.items():
            print(f"{name}: {v.why}\n  model {v.model}\n  accelerator {v.accelerator}")
        return 0
    wanted = _variant(args.variant).chapters
    notebooks = args.notebooks or [md for md in execute.notebooks([])
                                   if not wanted or md.parent.name in wanted]
    out = args.out or Path(tempfile.mkdtemp(prefix=f"swap-{args.variant}-"))
    done = run(args.variant, out, notebooks, vector=args.figures)
    if args.figures:
        figure_files.write(done, out / "figures")
    print(f"executed with {args.variant!r} in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
