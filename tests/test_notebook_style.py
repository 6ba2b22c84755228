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


REMOVED = {"remove-cell"}


def _names(code: str) -> tuple[set[str], set[str]]:
    """The names a cell's code assigns (at any depth, imports included) and the names it
    reads; unparsable code (cell magics) gives neither."""
    import ast

    source = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    stored, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (stored if isinstance(node.ctx, (ast.Store, ast.Del)) else loaded).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            stored.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stored.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
    return stored, loaded


PART_OF_THE_RULE = ("many_chips",)
"""The parts whose notebooks are held to the two rules below (the others follow as they are
reworked)."""


def _ruled(md) -> bool:
    return any(part in md.parts for part in PART_OF_THE_RULE)


@pytest.mark.parametrize("md", [m for m in paired_notebooks() if _ruled(m)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_bookkeeping_in_visible_cells(md):
    """A cell the reader sees shows arithmetic; record(...) goes in a removed cell."""
    shown = [i for i, c in enumerate(cells(md)) if c.cell_type == "code"
             and not set(c.metadata.get("tags", [])) & (HIDDEN_TAGS | REMOVED)
             and re.search(r"\brecord\(", c.source)]
    assert not shown, f"record(...) in visible cells {shown}"


HIDDEN_TAGS = {"hide-input", "remove-input", "hide-cell"}


@pytest.mark.parametrize("md", [m for m in paired_notebooks() if _ruled(m)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_visible_cells_run_without_the_removed_ones(md):
    """No cell the reader sees (or can unfold) reads a name that only a removed cell sets:
    a reader who runs what the page shows can run it all."""
    import builtins

    known = set(dir(builtins)) | {"get_ipython", "display"}
    bad = []
    for i, c in enumerate(cells(md)):
        if c.cell_type != "code":
            continue
        stored, loaded = _names(c.source)
        if REMOVED & set(c.metadata.get("tags", [])):
            continue
        missing = loaded - known - stored
        if missing:
            bad.append((i, sorted(missing)))
        known |= stored
    assert not bad, f"visible cells that read names only removed cells set: {bad}"
