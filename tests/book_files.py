"""Where the book's files are, and how the tests read a stored notebook."""
from __future__ import annotations

import ast
import json
from functools import lru_cache
from pathlib import Path

from book_machinery.execute import is_notebook_text

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = BOOK / "chapters"
PAGES = ("training", "why_won", "many_chips")
"""The textbook pages; the appendix holds the calculator and the measured page."""


def paired_notebooks() -> list[Path]:
    """Every paired notebook's .md text (the numbered sections, and page openings that compute)."""
    return sorted(p for p in CHAPTERS.glob("*/*.md") if is_notebook_text(p))


def section_notebooks() -> list[Path]:
    """The numbered sections of the two textbook pages (where exercises live)."""
    return [p for p in paired_notebooks() if p.parent.name in PAGES and p.stem[0].isdigit()]


def plain_pages() -> list[Path]:
    """Markdown pages that are not notebooks (the introduction, glossary, reading lists)."""
    notebooks = set(paired_notebooks())
    return [p for p in [*BOOK.glob("*.md"), *CHAPTERS.glob("*/*.md")] if p not in notebooks]



@lru_cache(maxsize=None)
def stored(name: str) -> dict:
    """The stored .ipynb of a notebook named like 'training/04_kv_cache', as JSON."""
    return json.loads((CHAPTERS / f"{name}.ipynb").read_text())


def glued(nb: dict) -> dict[str, object]:
    """Every value a stored notebook glues for the prose, read back as Python values."""
    out = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook")
            text = o.get("data", {}).get("application/papermill.record/text/plain")
            if meta and text is not None:
                text = "".join(text) if isinstance(text, list) else text
                out[meta["name"]] = ast.literal_eval(text)
    return out


def glued_comparisons(nb: dict) -> dict[str, tuple[str, float, float, dict]]:
    """Every comparison word a notebook glues (prose.compare), with the two numbers it compared
    and the words it chose from."""
    out = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {})
            if "scrapbook" in meta and "comparison" in meta:
                text = o["data"]["application/papermill.record/text/plain"]
                word = ast.literal_eval("".join(text) if isinstance(text, list) else text)
                c = meta["comparison"]
                out[meta["scrapbook"]["name"]] = (word, c["first"], c["second"], c)
    return out
