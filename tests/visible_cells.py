"""What a reader who runs only the cells the site shows would meet: the two rules of the
visible code.

A cell is *shown* when the site shows its code as the page opens: not tagged
``remove-cell``, ``remove-input``, ``hide-input`` or ``hide-cell`` (the same reading as
``test_notebook_style.visible``; a folded drawing cell may use what any cell set).

- No shown cell records (``record(...)``): bookkeeping for the prose lives in removed cells.
- No shown cell uses a name that only a hidden cell sets: run alone, in order, the shown
  cells raise no NameError.
"""
from __future__ import annotations

import ast
import builtins
from pathlib import Path

import jupytext

HIDDEN = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
ALWAYS = set(dir(builtins)) | {"get_ipython", "display", "__file__"}


def shown(cell) -> bool:
    """True if the site shows ``cell``'s code as the page opens."""
    return cell.cell_type == "code" and not set(cell.metadata.get("tags", [])) & HIDDEN


def _bound(tree: ast.AST) -> set[str]:
    """Names a cell binds at any depth (assignments, imports, definitions, loop and with
    targets, comprehension variables, function arguments)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).partition(".")[0] for a in node.names}
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


def _used(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _parse(source: str) -> ast.AST:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


def violations(md: Path) -> list[str]:
    """Each breach of the two rules in the paired notebook ``md``: the cell's number and
    what it does."""
    out, seen_shown, seen_hidden = [], set(), set()
    for i, cell in enumerate(jupytext.read(md).cells):
        if cell.cell_type != "code":
            continue
        tree = _parse(cell.source)
        bound = _bound(tree)
        if shown(cell):
            calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                     and isinstance(n.func, ast.Name) and n.func.id == "record"]
            if calls:
                out.append(f"cell {i} records (record(...) belongs in a removed cell)")
            missing = sorted((_used(tree) - bound - seen_shown - ALWAYS) & seen_hidden)
            if missing:
                out.append(f"cell {i} uses {', '.join(missing)}, set only in hidden cells")
            seen_shown |= bound
        else:
            seen_hidden |= bound
    return out
