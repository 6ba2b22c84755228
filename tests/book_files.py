"""Where the book's files are, for the tests."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = BOOK / "chapters"


def paired_notebooks() -> list[Path]:
    """Every paired notebook's .md text (numbered files under book/chapters)."""
    return sorted(CHAPTERS.glob("*/[0-9]*.md"))


def plain_pages() -> list[Path]:
    """Markdown pages that are not notebooks (the introduction and each page's opening)."""
    return [BOOK / "intro.md", *sorted(CHAPTERS.glob("*/index.md"))]
