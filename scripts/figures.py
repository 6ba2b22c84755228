"""Write every figure stored in the given notebooks to PNG files, to look at them.

    python scripts/figures.py book/chapters/training/04_kv_cache.ipynb  [--out DIR]

Each figure is written as DIR/<notebook>__<glue key>.png (DIR defaults to .cache/figures).
"""
from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path(".cache/figures"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.notebooks:
        nb = json.loads(path.with_suffix(".ipynb").read_text())
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                png = out.get("data", {}).get("image/png")
                if png:
                    key = out.get("metadata", {}).get("scrapbook", {}).get("name", "unnamed")
                    target = args.out / f"{path.stem}__{key}.png"
                    target.write_bytes(base64.b64decode(png))
                    print(target)


if __name__ == "__main__":
    main()
