"""The house's rooms and the one way their arrows run (read from the code itself).

- ``published``: the real world stated once (chips, links, published models, measured
  runs), below the other three; it imports none of them.
- ``transformer_arithmetic``: the formulas the pages teach, for the plain decoder; it
  imports neither of the other two.
- ``transformer_calculator``: the book's arithmetic carried to published models; it may use
  the teaching formulas (never their private names) and never the book's machinery.
- ``calculator_page``: the calculator in the reader's browser (the form's directive, the
  bundle Pyodide runs, the page's assets); it reads the calculator, never the machinery.
- ``book_machinery``: how the book is executed, glued, drawn, printed and tested; it uses
  neither room's private names and never the calculator or its page.

And the rules every library file keeps: lines within 88 characters, like the notebooks'
visible code, and modules of about 400 lines at most.
"""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import transformer_arithmetic as ta
from book_files import ROOT

LIB = ROOT / "lib"
ROOMS = ("published", "transformer_arithmetic", "transformer_calculator", "calculator_page",
         "book_machinery")
FORBIDDEN = {
    "published": {"transformer_arithmetic", "transformer_calculator", "calculator_page",
                  "book_machinery"},
    "transformer_arithmetic": {"transformer_calculator", "calculator_page", "book_machinery"},
    "transformer_calculator": {"calculator_page", "book_machinery"},
    "calculator_page": {"book_machinery"},
    "book_machinery": {"transformer_calculator", "calculator_page"},
}
MAX_LINE, MAX_MODULE = 88, 440


def modules(room: str) -> list[Path]:
    return sorted((LIB / room).rglob("*.py"))


def imported(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every import in ``path``, relative imports left out (same room)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, [a.name for a in node.names]))
    return found


@pytest.mark.parametrize("room", ROOMS)
def test_arrows_run_one_way(room):
    wrong = []
    for path in modules(room):
        for module, names in imported(path):
            top = module.split(".")[0]
            if top in FORBIDDEN[room]:
                wrong.append(f"{path.relative_to(LIB)} imports {module}")
            elif top in ROOMS and top != room:
                private = [p for p in module.split(".")[1:] + names if p.startswith("_")]
                if private:
                    wrong.append(f"{path.relative_to(LIB)} uses {module}'s private {private}")
    assert not wrong, wrong


def test_a_teaching_shape_carries_no_layout():
    assert [f.name for f in dataclasses.fields(ta.ModelShape)] == [
        "layers", "heads", "head_dim", "ffn_width", "vocab", "kv_heads", "width",
        "bytes_per_number", "gated_ffn", "tied_embeddings", "norm_bias", "name"]


@pytest.mark.parametrize("room", ROOMS)
def test_lines_and_modules_keep_their_size(room):
    long, big = [], []
    for path in modules(room):
        lines = path.read_text().splitlines()
        long += [f"{path.relative_to(LIB)}:{i}" for i, line in enumerate(lines, 1)
                 if len(line) > MAX_LINE]
        if len(lines) > MAX_MODULE:
            big.append(f"{path.relative_to(LIB)} ({len(lines)} lines)")
    assert not long, f"lines over {MAX_LINE} characters: {long}"
    assert not big, f"modules over {MAX_MODULE} lines: {big}"


CALCULATOR_FLOORS = ("anatomy", "counting", "families", "reading", "service", "splits",
                     "estimate", "measured_runs", "planning", "command_line")
"""The calculator's sub-rooms from the bottom floor up: each imports only those below."""


def _calculator_arrows() -> list[tuple[str, str, str]]:
    """(file, its sub-room, the sub-room it imports) for every import between them."""
    top = LIB / "transformer_calculator"
    arrows = []
    for path in modules("transformer_calculator"):
        parts = path.relative_to(top).parts
        if len(parts) == 1:
            continue
        package = ["transformer_calculator", *parts[:-1]]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                target = package[:len(package) - node.level + 1]
                target += node.module.split(".") if node.module else []
            elif (node.module or "").startswith("transformer_calculator."):
                target = node.module.split(".")
            else:
                continue
            if len(target) > 1 and target[1] != parts[0]:
                arrows.append((str(path.relative_to(LIB)), parts[0], target[1]))
    return arrows


def test_the_calculator_is_sub_rooms_only():
    flat = [p.name for p in (LIB / "transformer_calculator").glob("*.py")]
    assert sorted(flat) == ["__init__.py", "__main__.py"]
    rooms = {p.name for p in (LIB / "transformer_calculator").iterdir()
             if (p / "__init__.py").exists()}
    assert rooms == set(CALCULATOR_FLOORS)


def test_the_calculator_sub_rooms_import_downwards():
    up = [f"{path} ({room} imports {target})" for path, room, target in _calculator_arrows()
          if CALCULATOR_FLOORS.index(target) > CALCULATOR_FLOORS.index(room)]
    assert not up, up
