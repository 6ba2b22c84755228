"""Write every figure stored in the given notebooks to files, to look at them.

    python -m book_machinery.figure_files book/chapters/training/04_kv_cache.ipynb
    python -m book_machinery.figure_files NOTEBOOK.ipynb ... --out DIR
    python -m book_machinery.figure_files NOTEBOOK.ipynb --width 390   # as on a phone

Each figure is written as DIR/<notebook>__<glue key>.svg (as the site serves it) and
DIR/<notebook>__<glue key>.png, the SVG drawn by Debian's Chromium at the width it has
on the site (its own width, or with ``--width`` the width a screen that many pixels
wide gives it, the narrow-screen minimum included) at twice the pixels. DIR defaults
to .cache/figures. Without Chromium only the SVG files are written.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import sys
from pathlib import Path

from .myst_plugin import css_px, phone_width

__all__ = ["stored_figures", "write", "main"]

PHONE_MARGIN = 32
"""CSS pixels a narrow screen's page leaves beside the text column (both sides)."""


def stored_figures(notebook: Path) -> list[tuple[str, str, bytes, dict]]:
    """(glue key, mime type, bytes, metadata) of every figure a stored notebook
    holds."""
    nb = json.loads(notebook.with_suffix(".ipynb").read_text())
    found = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data, meta = output.get("data", {}), output.get("metadata", {})
            key = meta.get("scrapbook", {}).get("name", "unnamed")
            if "image/svg+xml" in data:
                svg = data["image/svg+xml"]
                text = "".join(svg) if isinstance(svg, list) else svg
                found.append((key, "image/svg+xml", text.encode(),
                              meta.get("image/svg+xml", {})))
            elif "image/png" in data:
                found.append((key, "image/png", base64.b64decode(data["image/png"]),
                              meta.get("image/png", {})))
    return found


def _shown_width(meta: dict, screen: int | None) -> float:
    """The CSS width the site gives a figure: its own, or on a ``screen`` that many
    pixels wide the column (never under the narrow-screen minimum)."""
    own = css_px(float(meta.get("width_pt", 504)))
    if screen is None:
        return own
    least = phone_width(meta.get("width_pt", 504), meta.get("smallest_font_pt", 10))
    return max(least, min(own, screen - PHONE_MARGIN))


def _to_png(svgs: list[tuple[Path, float]]) -> list[Path]:
    """Draw each SVG at its CSS width, twice the pixels, with Chromium."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None or not svgs:
        return []
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(device_scale_factor=2)
        for svg, width in svgs:
            page.set_content(
                f'<body style="margin:0"><img id="f" style="width:{width:.0f}px" '
                f'src="data:image/svg+xml;base64,'
                f'{base64.b64encode(svg.read_bytes()).decode()}"></body>'
            )
            target = svg.with_suffix(".png")
            page.locator("#f").screenshot(path=str(target))
            written.append(target)
        browser.close()
    return written


def write(notebooks: list[Path], out: Path, screen: int | None = None) -> list[Path]:
    """Write the figures of ``notebooks`` (.ipynb or their .md) into ``out``, as SVG
    and as PNG drawn at the width the site shows them on a ``screen`` that many pixels
    wide (their own width if None); return the files."""
    out.mkdir(parents=True, exist_ok=True)
    written, svgs = [], []
    for path in notebooks:
        for key, mime, content, meta in stored_figures(path):
            target = out / f"{path.stem}__{key}{'.svg' if 'svg' in mime else '.png'}"
            target.write_bytes(content)
            written.append(target)
            if target.suffix == ".svg":
                svgs.append((target, _shown_width(meta, screen)))
    return written + _to_png(svgs)


def main(argv: list[str]) -> int:
    """The command line (see the module's docstring)."""
    ap = argparse.ArgumentParser(
        prog="python -m book_machinery.figure_files", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path(".cache/figures"))
    ap.add_argument("--width", type=int, default=None,
                    help="draw the PNG as a screen this many CSS pixels wide shows it")
    args = ap.parse_args(argv)
    for target in write(args.notebooks, args.out, args.width):
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
