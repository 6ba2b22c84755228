"""Write every figure stored in the given notebooks to PNG files, to look at them.

    python -m book_machinery.figure_files book/chapters/training/04_kv_cache.ipynb
    python -m book_machinery.figure_files NOTEBOOK.ipynb ... --out DIR

Each figure is written as DIR/<notebook>__<glue key>.png (DIR defaults to
.cache/figures).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

__all__ = ["write", "main"]


def write(notebooks: list[Path], out: Path) -> list[Path]:
    """Write the PNG figures of ``notebooks`` (.ipynb or their .md) into ``out``; return
    them."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        nb = json.loads(path.with_suffix(".ipynb").read_text())
        for cell in nb["cells"]:
            for output in cell.get("outputs", []):
                png = output.get("data", {}).get("image/png")
                if png:
                    key = (
                        output.get("metadata", {})
                        .get("scrapbook", {})
                        .get("name", "unnamed")
                    )
                    target = out / f"{path.stem}__{key}.png"
                    target.write_bytes(base64.b64decode(png))
                    written.append(target)
    return written


def main(argv: list[str]) -> int:
    """The command line (see the module's docstring)."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path(".cache/figures"))
    args = ap.parse_args(argv)
    for target in write(args.notebooks, args.out):
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
