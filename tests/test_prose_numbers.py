"""No hand-typed results in the prose: every number a reader sees is glued from executed code.

A markdown cell (or a page of plain markdown) may contain a digit only
- inside a role such as {glue:text}`key:,` or {doc}`04_kv_cache` (the number is computed, or is a file name),
- inside math ($...$ or $$...$$), which states formulas rather than results,
- inside inline code or a directive's option line (":name: fig-1"),
- in the short, reviewed allow-list below.
The failure names the file, the line and the number.
"""
import re
from functools import lru_cache

import jupytext
import pytest

from book_files import ROOT, is_notebook_text, paired_notebooks, plain_pages

pytestmark = pytest.mark.notebooks

# Reviewed exceptions: (regex, why it is not a result of arithmetic).
ALLOW = [
    (r"\bMathJax \d\b", "a software version"),
    (r"\bJupyter Book \d(?:\.x)?\b", "a software version"),
    (r"\b1F1B\b", "a pipeline schedule's name (one forward, one backward)"),
]

STRIP = [
    r"\$\$.*?\$\$",                      # display math
    r"\$[^$\n]+\$",                      # inline math
    r"\{[\w:-]+\}`[^`]*`",               # roles: {glue:text}`key:,`, {doc}`..`, {numref}`..`
    r"``[^`]*``|`[^`\n]*`",              # inline code
    r"\]\([^)]*\)",                      # link targets
    r"^```.*$|^:::.*$",                  # directive fences and their arguments
    r"^:[\w-]+:.*$",                     # directive options
    r"<[^>]+>",                          # html tags
]


def offending_numbers(text: str):
    """Yield (line number, number) for each digit run left after stripping what is allowed."""
    for pattern in STRIP:
        text = re.sub(pattern, lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S | re.M)
    for pattern, _why in ALLOW:
        text = re.sub(pattern, lambda m: " " * len(m.group()), text, flags=re.I)
    for m in re.finditer(r"\d[\d,.]*", text):
        yield text.count("\n", 0, m.start()) + 1, m.group().rstrip(".,")


@lru_cache(maxsize=None)
def markdown_of(path):
    """(first line in the file, text) for each markdown cell, or the whole page if plain (read once
    for the two tests below)."""
    if not is_notebook_text(path):
        return ((1, path.read_text()),)
    source = path.read_text()
    out = []
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "markdown":
            at = source.find(cell.source)
            out.append((source.count("\n", 0, at) + 1 if at >= 0 else 0, cell.source))
    return tuple(out)


@pytest.mark.parametrize("path", paired_notebooks() + plain_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_hand_typed_numbers(path):
    found = [
        f"{path.relative_to(ROOT)}:{start + line - 1}: {number}"
        for start, text in markdown_of(path)
        for line, number in offending_numbers(text)
    ]
    assert not found, "numbers typed by hand (glue them from code):\n" + "\n".join(found)


def test_the_checker_catches_a_typed_number():
    text = "The cache holds 98,304 bytes, see section 4 and {glue:text}`kv:,` and $n(n+1)/2$."
    assert [n for _, n in offending_numbers(text)] == ["98,304", "4"]


@pytest.mark.parametrize("path", paired_notebooks() + plain_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_to_other_pages_say_where_they_go(path):
    """A {doc} link carries its own words ({doc}`the cache section <04_kv_cache>`), so a page title
    is never dropped into the middle of a sentence; sections, figures and equations are referred
    to by number with {numref} and {eq}."""
    bare = [m.group() for _, text in markdown_of(path) for m in re.finditer(r"\{doc\}`[^`<]*`", text)]
    assert not bare, f"{path.relative_to(ROOT)}: links without their own words: {bare}"
