"""What a reader sees of the code: prose and figures first, the code one click away.

- Code a reader sees on the page (cells not tagged hide-input / remove-input) fits the code box:
  no line longer than ``MAX_LINE`` characters.
- Between two figures there is at most a screenful of visible code (``MAX_VISIBLE``).
- Numbers are stated once: no notebook prints or glues by hand (``record`` does both), and
  colours come from the book's palette.
"""
import re
from functools import lru_cache

import jupytext
import pytest

from book_files import ROOT, paired_notebooks

pytestmark = pytest.mark.notebooks

MAX_LINE = 88
MAX_VISIBLE = 30


@lru_cache(maxsize=None)
def cells(md):
    """The cells of a paired notebook's text, read once for the three tests below (which only read them)."""
    return tuple(jupytext.read(md).cells)


def visible(cell) -> bool:
    tags = set(cell.metadata.get("tags", []))
    return cell.cell_type == "code" and not tags & {"hide-input", "remove-input", "remove-cell", "hide-cell"}


@pytest.mark.parametrize("md", paired_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_visible_code_fits_the_code_box(md):
    long = [(i, line) for i, c in enumerate(cells(md)) if visible(c)
            for line in c.source.splitlines() if len(line) > MAX_LINE]
    assert not long, f"visible code lines over {MAX_LINE} characters (cell, line): {long}"


@pytest.mark.parametrize("md", paired_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_at_most_a_screenful_of_code_between_figures(md):
    run, worst = 0, (0, None)
    for i, cell in enumerate(cells(md)):
        if cell.cell_type == "markdown" and "{glue:figure}" in cell.source:
            run = 0
        elif visible(cell):
            run += len([line for line in cell.source.splitlines() if line.strip()])
            worst = max(worst, (run, i), key=lambda w: w[0])
    assert worst[0] <= MAX_VISIBLE, f"{worst[0]} visible code lines before cell {worst[1]} without a figure between"


@pytest.mark.parametrize("md", paired_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_numbers_are_stated_once_and_colours_come_from_the_palette(md):
    code = "\n".join(c.source for c in cells(md) if c.cell_type == "code")
    assert not re.search(r"\bglue_numbers\b|\bglue\(", code), "glue through record(), which also prints"
    assert not re.search(r"\bCOLORS\b", code), "colours come from figures.PALETTE"
    assert not re.search(r"['\"]#[0-9a-fA-F]{6}['\"]", code), "a colour typed by hand: add it to figures.PALETTE"



@pytest.mark.parametrize("md", paired_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_shown_code_runs_alone_and_keeps_no_books(md):
    """Every section keeps the two rules of ``visible_cells`` (no record in a shown cell;
    no shown cell uses a name only a hidden cell sets)."""
    from visible_cells import violations

    assert not violations(md), violations(md)
