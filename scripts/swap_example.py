"""Re-execute notebooks with another stated example model and accelerator, in a scratch folder.

    python scripts/swap_example.py deep-grouped                      # every notebook
    python scripts/swap_example.py wide-fast book/chapters/training/04_kv_cache.md --figures
    python scripts/swap_example.py --list

The library is copied to ``OUT/lib`` and its ``shapes.py`` gets the variant's
``EXAMPLE_MODEL`` and ``EXAMPLE_ACCELERATOR`` appended (so every module sees them); the
notebooks' ``.md`` files are copied to ``OUT/book/chapters`` and executed there against that
copy. Nothing in the repository changes. ``--figures`` also writes each figure as a PNG
beside its notebook, to look at. ``tests/test_example_swap.py`` uses the same machinery.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

VARIANTS: dict[str, str] = {
    # deeper, with grouped key-value heads; the same chip
    "deep-grouped": (
        "EXAMPLE_MODEL = ModelShape(layers=32, heads=16, head_dim=64, ffn_width=4096, vocab=32768, "
        "kv_heads=4, bytes_per_number=2, name='the example model')\n"
        "EXAMPLE_ACCELERATOR = Accelerator(flops_per_s=100e12, bytes_per_s=1e12, memory_bytes=24 * GIB, "
        "name='the example accelerator')\n"),
    # fewer layers, 12 wider heads, a bigger vocabulary; a faster chip with more memory
    "wide-fast": (
        "EXAMPLE_MODEL = ModelShape(layers=12, heads=12, head_dim=128, ffn_width=6144, vocab=50304, "
        "bytes_per_number=2, name='the example model')\n"
        "EXAMPLE_ACCELERATOR = Accelerator(flops_per_s=400e12, bytes_per_s=3.35e12, memory_bytes=80 * GIB, "
        "name='the example accelerator')\n"),
    # a small model in four-byte numbers with one key-value head; a slow chip with little memory
    "small-mqa": (
        "EXAMPLE_MODEL = ModelShape(layers=8, heads=8, head_dim=64, ffn_width=1536, vocab=16384, "
        "kv_heads=1, bytes_per_number=4, name='the example model')\n"
        "EXAMPLE_ACCELERATOR = Accelerator(flops_per_s=20e12, bytes_per_s=0.4e12, memory_bytes=8 * GIB, "
        "name='the example accelerator')\n"),
}
"""Other valid examples: each line is appended to a copy of shapes.py."""


def _execute_module():
    sys.path.insert(0, str(ROOT / "scripts"))
    import execute  # a plain import, so that worker processes can import it again

    return execute


def prepare(variant: str, out: Path, notebooks: list[Path]) -> list[Path]:
    """Copy the library (with the variant appended to shapes.py) and the notebooks into ``out``;
    return the copied .md files."""
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    shutil.copytree(ROOT / "lib", out / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
                    dirs_exist_ok=True)
    shapes = out / "lib" / "transformer_arithmetic" / "shapes.py"
    shapes.write_text(shapes.read_text() + "\n\n# --- swapped by scripts/swap_example.py ---\n" + VARIANTS[variant])
    copies = []
    for md in notebooks:
        dest = out / md.resolve().relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(md, dest)
        copies.append(dest)
    return copies


def run(variant: str, out: Path, notebooks: list[Path]) -> list[Path]:
    """Execute ``notebooks`` against the variant in ``out``; return the executed .ipynb paths."""
    execute = _execute_module()
    copies = prepare(variant, out, notebooks)
    os.environ["PYTHONPATH"] = str(out / "lib") + os.pathsep + os.environ.get("PYTHONPATH", "")
    execute.main([str(c) for c in copies])
    return [c.with_suffix(".ipynb") for c in copies]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variant", nargs="?")
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--figures", action="store_true", help="write every figure as a PNG beside its notebook")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    if args.list or not args.variant:
        for name, text in VARIANTS.items():
            print(f"{name}:\n  " + text.strip().replace("\n", "\n  "))
        return 0
    execute = _execute_module()
    notebooks = args.notebooks or execute.notebooks([])
    out = args.out or Path(tempfile.mkdtemp(prefix=f"swap-{args.variant}-"))
    done = run(args.variant, out, notebooks)
    if args.figures:
        import subprocess
        subprocess.run([sys.executable, str(ROOT / "scripts" / "figures.py"), *map(str, done),
                        "--out", str(out / "figures")], check=True)
    print(f"executed with {args.variant!r} in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
